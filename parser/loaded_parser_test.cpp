#include "parser/loaded_parser.h"

#include <gtest/gtest.h>

namespace cky {
namespace {

TEST(LoadedParserTest, BuiltInGrammarParsesAsTheCommandLineDoes) {
  // The same sentence and tree prefix as apps/' cky_parse_default_grammar test.
  auto loaded = LoadedParser::Load({.backend = {.backend = "cpu", .decoder = "max-rule"}});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const std::vector<std::vector<std::string>> sentences = {
      {"The", "dog", "barks", "at", "the", "mailman", "."}, {"Dogs", "bark", "."}};
  std::vector<ParseOutcome> outcomes = (*loaded)->Parse(sentences);
  ASSERT_EQ(outcomes.size(), 2u);
  ASSERT_EQ(outcomes[0].status, ParseStatus::kOk) << outcomes[0].message;
  const std::string line = FormatOutcome(outcomes[0]);
  EXPECT_EQ(line.rfind("( (S (NP (DT The) (NN dog))", 0), 0u) << line;
  EXPECT_EQ(line, FormatBerkeley(outcomes[0].tree));
  EXPECT_EQ((*loaded)->parser().backend().name().rfind("cpu", 0), 0u);
  EXPECT_EQ((*loaded)->model().grammar.symbol_names[0], "ROOT");
}

TEST(LoadedParserTest, OptionsReachTheParser) {
  auto loaded = LoadedParser::Load(
      {.backend = {.backend = "reference", .decoder = "viterbi"}, .parser = {.max_length = 2}});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const std::vector<std::vector<std::string>> sentences = {{"Dogs", "bark", "."}, {"Dogs", "."}};
  std::vector<ParseOutcome> outcomes = (*loaded)->Parse(sentences);
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0].status, ParseStatus::kTooLong);
  EXPECT_EQ(FormatOutcome(outcomes[0]), kNoParseOutput);
  EXPECT_EQ(outcomes[1].status, ParseStatus::kOk) << outcomes[1].message;
  EXPECT_EQ(FormatOutcome(outcomes[1], {.binarize = true, .substates = true}),
            FormatBerkeleyBinarized(outcomes[1].tree, /*with_scores=*/false));
}

TEST(LoadedParserTest, ErrorsSayWhatIsWrong) {
  auto missing = LoadedParser::Load(
      {.grammar = "tests/data/no_such_grammar", .grammar_options = {.use_cache = false}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("tests/data/no_such_grammar"), std::string::npos)
      << missing.status().message();
  auto bad_backend = LoadedParser::Load({.backend = {.backend = "gpu"}});
  ASSERT_FALSE(bad_backend.ok());
  EXPECT_NE(bad_backend.status().message().find("unknown backend 'gpu'"), std::string::npos)
      << bad_backend.status().message();
}

// Two grammar arguments make a product (parser/product.h): the built-in grammar with itself keeps
// its trees, with doubled scores; the parser's options still apply; what a product does not
// define or do is refused, saying so.
TEST(LoadedParserTest, SeveralGrammarsMakeAProduct) {
  const BackendOptions backend{.backend = "cpu", .decoder = "max-rule"};
  auto single = LoadedParser::Load({.backend = backend});
  auto product = LoadedParser::Load({.more_grammars = {""}, .backend = backend});
  ASSERT_TRUE(single.ok()) << single.status().message();
  ASSERT_TRUE(product.ok()) << product.status().message();
  EXPECT_EQ((*single)->product(), nullptr);
  ASSERT_NE((*product)->product(), nullptr);
  EXPECT_EQ((*product)->product()->size(), 2);
  EXPECT_NE((*product)->parser().backend().name().find("product of 2 grammars"), std::string::npos);
  const std::vector<std::vector<std::string>> sentences = {
      {"The", "dog", "barks", "at", "the", "mailman", "."}, {"Dogs", "bark", "."}};
  const auto one = (*single)->Parse(sentences);
  const auto two = (*product)->Parse(sentences);
  for (size_t i = 0; i < sentences.size(); ++i) {
    ASSERT_EQ(one[i].status, ParseStatus::kOk) << one[i].message;
    ASSERT_EQ(two[i].status, ParseStatus::kOk) << two[i].message;
    EXPECT_EQ(one[i].tree, two[i].tree);
    EXPECT_EQ(2 * one[i].log_score, two[i].log_score);
  }
  auto short_only =
      LoadedParser::Load({.more_grammars = {""}, .backend = backend, .parser = {.max_length = 3}});
  ASSERT_TRUE(short_only.ok()) << short_only.status().message();
  const auto limited = (*short_only)->Parse(sentences);
  EXPECT_EQ(limited[0].status, ParseStatus::kTooLong);
  EXPECT_EQ(limited[1].status, ParseStatus::kOk);

  auto refused = [](const LoadedParserOptions& options, const std::string& says) {
    auto loaded = LoadedParser::Load(options);
    ASSERT_FALSE(loaded.ok()) << says;
    EXPECT_NE(loaded.status().message().find(says), std::string::npos) << loaded.status().message();
  };
  refused({.more_grammars = {""}, .backend = backend, .parser = {.tree_likelihood = true}},
          "a product of grammars defines neither");
  refused({.more_grammars = {""}, .backend = backend, .parser = {.confidence = true}},
          "a product of grammars defines neither");
  refused({.more_grammars = {""}, .backend = {.backend = "cpu", .decoder = "viterbi"}},
          "decodes max-rule trees");
  refused({.more_grammars = {""}, .backend = {.backend = "cuda", .decoder = "max-rule"}},
          "on the CPU for now");
  refused({.more_grammars = {"tests/data/no_such_grammar"}, .backend = backend},
          "tests/data/no_such_grammar");
}

}  // namespace
}  // namespace cky
