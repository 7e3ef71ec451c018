#include "parser/loaded_parser.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cuda/common/device.h"
#include "parser/backend_factory.h"

namespace cky {
namespace {

TEST(LoadedParserTest, BuiltInGrammarParsesAsTheCommandLineDoes) {
  // The same sentence and tree prefix as apps/' cky_parse_default_grammar test.
  auto loaded = LoadedParser::Load(
      {.backend = {.device = DeviceKind::kCpu, .decoder = DecoderKind::kMaxRule}});
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
      {.backend = {.device = DeviceKind::kReference, .decoder = DecoderKind::kViterbi},
       .parser = {.max_length = 2}});
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

TEST(LoadedParserTest, ScoresGivenAheadParseAsScoresComputedByTheParser) {
  // What `cky parse` does with its first batch: scored on Load's beside_backend call (with the
  // model and lexicon it gets there, before Load returns), then parsed with those scores.
  const std::vector<std::vector<std::string>> sentences = {
      {"The", "dog", "barks", "at", "the", "mailman", "."}, {"Dogs", "."}, {"Dogs", "bark", "."}};
  std::vector<LexicalScores> ahead;
  bool called = false;
  auto loaded = LoadedParser::Load(
      {.backend = {.device = DeviceKind::kCpu, .decoder = DecoderKind::kMaxRule},
       .parser = {.max_length = 5},
       .beside_backend = [&](const BerkeleyModel& model, const Lexicon& lexicon) {
         called = true;
         for (const auto& words : sentences) {
           ahead.push_back(words.size() > 5 ? LexicalScores{}
                                            : ScoreWords(model.grammar, lexicon, words));
         }
         return &ahead;
       }});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_TRUE(called);
  // Each sentence scored there carries its own number for the backend; the one not scored none.
  EXPECT_EQ(ahead[0].ahead_id, 0u);
  EXPECT_NE(ahead[1].ahead_id, 0u);
  EXPECT_NE(ahead[2].ahead_id, 0u);
  EXPECT_NE(ahead[1].ahead_id, ahead[2].ahead_id);
  const std::vector<ParseOutcome> scored_here = (*loaded)->parser().Parse(sentences);
  const std::vector<ParseOutcome> given = (*loaded)->parser().Parse(sentences, std::move(ahead));
  ASSERT_EQ(given.size(), sentences.size());
  EXPECT_EQ(given[0].status, ParseStatus::kTooLong);
  for (size_t i = 0; i < sentences.size(); ++i) {
    EXPECT_EQ(given[i].status, scored_here[i].status) << i;
    EXPECT_EQ(FormatOutcome(given[i]), FormatOutcome(scored_here[i])) << i;
    EXPECT_EQ(given[i].log_likelihood, scored_here[i].log_likelihood) << i;
  }
  EXPECT_EQ(given[1].status, ParseStatus::kOk) << given[1].message;
  // Scores that do not fit the sentences (a caller's fault) are computed again.
  std::vector<LexicalScores> wrong(sentences.size());
  const std::vector<ParseOutcome> rescored = (*loaded)->parser().Parse(sentences, std::move(wrong));
  for (size_t i = 0; i < sentences.size(); ++i)
    EXPECT_EQ(FormatOutcome(rescored[i]), FormatOutcome(scored_here[i])) << i;
}

TEST(LoadedParserTest, ErrorsSayWhatIsWrong) {
  auto missing = LoadedParser::Load(
      {.grammar = "tests/data/no_such_grammar", .grammar_options = {.use_cache = false}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("tests/data/no_such_grammar"), std::string::npos)
      << missing.status().message();
  // Option strings are read at the edge, with the accepted values in the error.
  auto bad_backend = ParseDeviceKind("gpu");
  ASSERT_FALSE(bad_backend.ok());
  EXPECT_EQ(bad_backend.status().message(),
            "unknown backend 'gpu' (expected auto, reference, cpu, cuda)");
  EXPECT_FALSE(ParseDecoderKind("maxrule").ok());
  EXPECT_FALSE(ParsePruneMode("fastest").ok());
  EXPECT_EQ(*ParsePruneMode("on"), PruneMode::kFast);
  // Impossible combinations fail when the backend is made.
  auto kbest_viterbi = LoadedParser::Load(
      {.backend = {.device = DeviceKind::kCpu, .decoder = DecoderKind::kViterbi, .kbest = 2}});
  ASSERT_FALSE(kbest_viterbi.ok());
  EXPECT_NE(kbest_viterbi.status().message().find("max-rule"), std::string::npos);
  auto pruned_reference = LoadedParser::Load(
      {.backend = {.device = DeviceKind::kReference, .prune = PruneMode::kSafe}});
  ASSERT_FALSE(pruned_reference.ok());
  EXPECT_NE(pruned_reference.status().message().find("reference"), std::string::npos);
  // Pruning levels need pruning, and levels the grammar's hierarchy has (the built-in grammar
  // has levels 0 to 3 below itself).
  auto levels_unpruned = LoadedParser::Load(
      {.backend = {.device = DeviceKind::kCpu, .prune = PruneMode::kOff, .prune_levels = {0}}});
  ASSERT_FALSE(levels_unpruned.ok());
  EXPECT_NE(levels_unpruned.status().message().find("pruning is off"), std::string::npos);
  auto level_too_fine = LoadedParser::Load(
      {.backend = {.device = DeviceKind::kCpu, .prune = PruneMode::kSafe, .prune_levels = {0, 4}}});
  ASSERT_FALSE(level_too_fine.ok());
  // Backend errors name the grammar (issue 39).
  EXPECT_EQ(level_too_fine.status().message(),
            "pruning level 4 is not a coarser level of this grammar's split hierarchy (0 to 3) "
            "(with the grammar (built-in))");
  EXPECT_TRUE(LoadedParser::Load({.backend = {.device = DeviceKind::kCpu,
                                              .prune = PruneMode::kSafe,
                                              .prune_levels = {0, 3}}})
                  .ok());
}

// Automatic pruning pre-parses at every other level on a GPU, at every level on the CPU.
TEST(LoadedParserTest, AutomaticPruningLevels) {
  auto loaded = LoadedParser::Load({.backend = {.device = DeviceKind::kCpu}});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Grammar& grammar = (*loaded)->model().grammar;  // levels 0 to 3 below it
  EXPECT_EQ(AutoPruningLevels(DeviceKind::kCuda, grammar), (std::vector<int32_t>{0, 2}));
  EXPECT_TRUE(AutoPruningLevels(DeviceKind::kCpu, grammar).empty());
}

// A C++ user who asks for nothing gets what the command line and Python give: max-rule decoding
// with `auto` pruning, on the best device present.
TEST(LoadedParserTest, DefaultsAreTheCommandLines) {
  const BackendOptions defaults;
  EXPECT_EQ(defaults.device, DeviceKind::kAuto);
  EXPECT_EQ(defaults.decoder, DecoderKind::kMaxRule);
  EXPECT_EQ(defaults.prune, PruneMode::kAuto);
  EXPECT_EQ(defaults.kbest, 1);
  EXPECT_EQ(LoadedParserOptions{}.parser.decoder, DecoderKind::kMaxRule);
  auto loaded = LoadedParser::Load({});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const std::string name = (*loaded)->parser().backend().name();
  // Without a GPU: the CPU's pruned max-rule (the built-in grammar is not small); with one, the
  // GPU's.
  EXPECT_TRUE(name == "cpu/pruned-max-rule" || name == "cuda/pruned-max-rule") << name;
}

// A split tree the grammar's reader cannot judge (it is parsed when the pruner is made) was an
// error without the grammar's name before (issue 39).
TEST(LoadedParserTest, GrammarFaultsFoundAfterReadingNameTheGrammar) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "cky_loaded_parser";
  std::filesystem::create_directories(dir);
  for (const char* ext : {".grammar", ".lexicon"}) {
    std::filesystem::copy_file(std::string("tests/data/toy") + ext,
                               dir / (std::string("toy") + ext),
                               std::filesystem::copy_options::overwrite_existing);
  }
  std::ofstream(dir / "toy.splits") << "NP\t(0 0 5)\n";
  const std::string prefix = (dir / "toy").string();
  auto loaded = LoadedParser::Load({.grammar = prefix,
                                    .grammar_options = {.use_cache = false},
                                    .backend = {.device = DeviceKind::kCpu,
                                                .decoder = DecoderKind::kMaxRule,
                                                .prune = PruneMode::kSafe}});
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("split tree '(0 0 5)'"), std::string::npos)
      << loaded.status().message();
  EXPECT_NE(loaded.status().message().find(prefix), std::string::npos) << loaded.status().message();
}

// Two grammar arguments make a product (parser/product.h): the built-in grammar with itself keeps
// its trees, with doubled scores; the parser's options still apply; what a product does not
// define or do is refused, saying so.
TEST(LoadedParserTest, SeveralGrammarsMakeAProduct) {
  // Exact: a product of a grammar with itself is then that grammar's max-rule parse with twice
  // its scores (pruned, the product's shared mask is not the single grammar's own).
  const BackendOptions backend{
      .device = DeviceKind::kCpu, .decoder = DecoderKind::kMaxRule, .prune = PruneMode::kOff};
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
  refused({.more_grammars = {""},
           .backend = {.device = DeviceKind::kCpu, .decoder = DecoderKind::kViterbi}},
          "decodes max-rule trees");
  refused({.more_grammars = {""},
           .backend = {.device = DeviceKind::kCuda,
                       .decoder = DecoderKind::kMaxRule,
                       .devices = {0, 0}}},
          "parses on one device");
  // The cuda backend: the CUDA product backend on a GPU (unpruned: the CPU's unpruned trees),
  // else a clear refusal.
  auto on_gpu = LoadedParser::Load(
      {.more_grammars = {""}, .backend = {.device = DeviceKind::kCuda, .prune = PruneMode::kOff}});
  if (cuda::BuiltWithCuda() && cuda::DeviceAvailable()) {
    ASSERT_TRUE(on_gpu.ok()) << on_gpu.status().message();
    EXPECT_EQ((*on_gpu)->parser().backend().name(), "cuda/max-rule-product of 2 grammars");
    auto exact = LoadedParser::Load(
        {.more_grammars = {""}, .backend = {.device = DeviceKind::kCpu, .prune = PruneMode::kOff}});
    ASSERT_TRUE(exact.ok()) << exact.status().message();
    const auto cpu = (*exact)->Parse(sentences);
    const auto gpu = (*on_gpu)->Parse(sentences);
    ASSERT_EQ(gpu.size(), cpu.size());
    for (size_t i = 0; i < gpu.size(); ++i) {
      EXPECT_EQ(FormatOutcome(gpu[i]), FormatOutcome(cpu[i])) << i;
    }
  } else {
    ASSERT_FALSE(on_gpu.ok());
    EXPECT_NE(on_gpu.status().message().find("use --backend cpu"), std::string::npos)
        << on_gpu.status().message();
  }
  refused({.more_grammars = {"tests/data/no_such_grammar"}, .backend = backend},
          "tests/data/no_such_grammar");
}

}  // namespace
}  // namespace cky
