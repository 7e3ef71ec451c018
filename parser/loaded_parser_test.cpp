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

}  // namespace
}  // namespace cky
