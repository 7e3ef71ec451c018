// Training and parsing together: a grammar that train/ writes loads through grammar_io/ and the
// parser/ gives back the training trees (a cross-product test, so it lives in tests/).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "cuda/common/device.h"
#include "grammar_io/berkeley_model.h"
#include "lexicon/lexicon.h"
#include "parser/max_rule.h"
#include "parser/parser.h"
#include "parser/tree_format.h"
#include "train/pcfg_trainer.h"
#include "train/split_merge_test_util.h"
#include "train/split_merge_trainer.h"
#include "treebank/reader.h"
#include "parser/backend_factory.h"
#include "parser/cpu_backend.h"

namespace cky {
namespace {

std::vector<Tree> Trees(const std::string& text) {
  auto trees = ReadTreesFromString(text);
  EXPECT_TRUE(trees.ok()) << trees.status().message();
  return trees.ok() ? *trees : std::vector<Tree>{};
}

constexpr char kThreeTrees[] =
    "(ROOT (S (NP (DT the) (NN dog)) (VP (VBZ barks))))\n"
    "(ROOT (S (NP (DT the) (JJ big) (NN dog)) (VP (VBZ barks) (ADVP (RB now)))))\n"
    "( (S (NP-SBJ (DT a) (NN cat)) (VP (VBZ sleeps) (NP (-NONE- *T*)))))\n";

TEST(TrainParseTest, TrainedGrammarLoadsAndParsesItsTrainingSentences) {
  const std::string treebank =
      std::string(kThreeTrees) +
      "(ROOT (S (NP (DT the) (NN cat)) (VP (VBZ sees) (NP (DT a) (JJ big) (NN dog))) (. .)))\n"
      "(ROOT (S (NP (NNP Rex)) (VP (VBZ barks) (PP (IN at) (NP (DT the) (NN mouse)))) (. .)))\n";
  auto text = TrainPcfg(Trees(treebank));
  ASSERT_TRUE(text.ok()) << text.status().message();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("cky_train_parse_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string prefix = (dir / "tiny").string();
  ASSERT_TRUE(WriteBerkeleyTextExport(*text, prefix).ok());
  auto model = LoadBerkeleyModel(prefix, {.use_cache = false});
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->grammar.symbol_names[0], "ROOT");
  auto lexicon = Lexicon::Build(*model);
  ASSERT_TRUE(lexicon.ok()) << lexicon.status().message();
  auto backend = MakeBackend(model->grammar,
                             {.device = DeviceKind::kReference, .decoder = DecoderKind::kViterbi});
  ASSERT_TRUE(backend.ok());
  Parser parser(model->grammar, *lexicon, std::move(*backend));

  // Each training sentence parses back to its (normalised) gold tree.
  std::vector<Tree> gold = Trees(treebank);
  std::vector<std::vector<std::string>> sentences;
  for (Tree& tree : gold) {
    ASSERT_TRUE(NormalizeTrainingTree(&tree));
    sentences.push_back(Leaves(tree));
  }
  sentences.push_back({"the", "zebra", "barks", "."});  // an unknown word
  std::vector<ParseOutcome> outcomes = parser.Parse(sentences);
  ASSERT_EQ(outcomes.size(), sentences.size());
  for (size_t i = 0; i < gold.size(); ++i) {
    ASSERT_EQ(outcomes[i].status, ParseStatus::kOk) << i;
    std::string expected = ToBracketString(gold[i]);
    // Berkeley's output form: "( (S ...) )" for "(ROOT (S ...))".
    expected = "( " + expected.substr(6, expected.size() - 7) + " )";
    EXPECT_EQ(FormatBerkeley(outcomes[i].tree), expected) << i;
  }
  ASSERT_EQ(outcomes.back().status, ParseStatus::kOk);
  EXPECT_EQ(FormatBerkeley(outcomes.back().tree),
            "( (S (NP (DT the) (NN zebra)) (VP (VBZ barks)) (. .)) )");
}

// A split-merge grammar, written as a text export and as a cache (with the lexicon's counts),
// loads and gives back its training trees with both decoders.
TEST(TrainParseTest, SplitMergeGrammarLoadsAndParsesItsTrainingSentences) {
  const std::string treebank =
      std::string(kThreeTrees) +
      "(ROOT (S (NP (DT the) (NN cat)) (VP (VBZ sees) (NP (DT a) (JJ big) (NN dog))) (. .)))\n"
      "(ROOT (S (NP (NNP Rex)) (VP (VBZ barks) (PP (IN at) (NP (DT the) (NN mouse)))) (. .)))\n";
  SplitMergeOptions options;
  options.cycles = 2;
  options.split_iterations = 5;
  options.merge_iterations = 3;
  options.smooth_iterations = 2;
  options.rare_word_threshold = 1;
  auto trainer = SplitMergeTrainer::Create(Trees(treebank), options);
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();
  ASSERT_TRUE((*trainer)->Train().ok());
  auto exported = (*trainer)->Export();
  ASSERT_TRUE(exported.ok()) << exported.status().message();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("cky_train_parse_sm_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string prefix = (dir / "sm").string();
  ASSERT_TRUE(WriteGrammarTextFiles(*exported, prefix).ok());
  ASSERT_TRUE(WriteModelCache(*exported, prefix + ".ckybin").ok());
  auto text_model = LoadBerkeleyModel(prefix, {.use_cache = false});
  auto cache_model = LoadBerkeleyModel(prefix + ".ckybin");
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(text_model.ok()) << text_model.status().message();
  ASSERT_TRUE(cache_model.ok()) << cache_model.status().message();
  EXPECT_GT(cache_model->grammar.num_states(), cache_model->grammar.num_symbols());

  std::vector<Tree> gold = Trees(treebank);
  std::vector<std::vector<std::string>> sentences;
  for (Tree& tree : gold) {
    ASSERT_TRUE(NormalizeTrainingTree(&tree));
    sentences.push_back(Leaves(tree));
  }
  for (const BerkeleyModel* model : {&*text_model, &*cache_model}) {
    auto lexicon = Lexicon::Build(*model);
    ASSERT_TRUE(lexicon.ok()) << lexicon.status().message();
    EXPECT_EQ(lexicon->exact(), model == &*cache_model);
    for (const char* decoder : {"viterbi", "max-rule"}) {
      auto backend = MakeBackend(
          model->grammar, {.device = DeviceKind::kReference, .decoder = *ParseDecoderKind(decoder)});
      ASSERT_TRUE(backend.ok());
      Parser parser(model->grammar, *lexicon, std::move(*backend));
      std::vector<ParseOutcome> outcomes = parser.Parse(sentences);
      ASSERT_EQ(outcomes.size(), sentences.size());
      for (size_t i = 0; i < gold.size(); ++i) {
        ASSERT_EQ(outcomes[i].status, ParseStatus::kOk) << decoder << " " << i;
        std::string expected = ToBracketString(gold[i]);
        expected = "( " + expected.substr(6, expected.size() - 7) + " )";
        EXPECT_EQ(FormatBerkeley(outcomes[i].tree), expected) << decoder << " " << i;
      }
    }
  }
  // The cache keeps the trainer's base unaries: P(T|w) and P(T,w) of the max-rule trees.
  ASSERT_TRUE(cache_model->grammar.base_unaries_known);
  auto lexicon = Lexicon::Build(*cache_model);
  ASSERT_TRUE(lexicon.ok());
  Parser parser(cache_model->grammar, *lexicon, MakeReferenceMaxRuleBackend(cache_model->grammar),
                {.tree_likelihood = true, .confidence = true,
                 .binarization = cache_model->binarization});
  for (const ParseOutcome& outcome : parser.Parse(sentences)) {
    ASSERT_EQ(outcome.status, ParseStatus::kOk);
    EXPECT_TRUE(outcome.message.empty()) << outcome.message;
    EXPECT_GT(outcome.tree_log_likelihood, kNegInf);
    EXPECT_LE(outcome.tree_log_likelihood, outcome.log_likelihood + 1e-9);
    EXPECT_LE(outcome.confidence, 1e-9);
    EXPECT_GT(outcome.confidence, -10.0);  // the training trees are likely given their words
  }
}

// The cpu and cuda E-steps train the same grammar on GUM training trees (train/cuda_estep_test.cpp
// compares the numbers), so both grammars give the same max-rule trees on sentences they did not
// see. Skips without a CUDA device or GUM.
TEST(TrainParseTest, CpuAndCudaSplitMergeGrammarsParseAlike) {
  if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device";
  std::vector<Tree> trees = GumTrainTrees(340);
  if (trees.size() < 340) GTEST_SKIP() << "no GUM treebank under " << SharedDataDir();
  std::vector<Tree> held_out(trees.begin() + 300, trees.end());
  trees.resize(300);
  SplitMergeOptions options;
  options.cycles = 2;
  options.split_iterations = 8;
  options.merge_iterations = 4;
  options.smooth_iterations = 2;
  options.threads = 2;
  std::vector<std::vector<std::string>> sentences;
  for (Tree& tree : held_out) {
    ASSERT_TRUE(NormalizeTrainingTree(&tree));
    sentences.push_back(Leaves(tree));
  }
  std::vector<std::string> parses[2];
  for (int cuda = 0; cuda < 2; ++cuda) {
    options.backend = cuda ? EStepBackend::kCuda : EStepBackend::kCpu;
    auto trainer = SplitMergeTrainer::Create(trees, options);
    ASSERT_TRUE(trainer.ok()) << trainer.status().message();
    ASSERT_TRUE((*trainer)->Train().ok());
    EXPECT_EQ((*trainer)->estep_backend(), cuda ? "cuda" : "cpu") << (*trainer)->estep_note();
    auto model = (*trainer)->Export();
    ASSERT_TRUE(model.ok()) << model.status().message();
    auto lexicon = Lexicon::Build(*model);
    ASSERT_TRUE(lexicon.ok()) << lexicon.status().message();
    auto backend = MakeBackend(model->grammar, {.device = DeviceKind::kCpu,
                                                .decoder = DecoderKind::kMaxRule,
                                                .prune = PruneMode::kOff});
    ASSERT_TRUE(backend.ok());
    Parser parser(model->grammar, *lexicon, std::move(*backend));
    for (const ParseOutcome& outcome : parser.Parse(sentences)) {
      parses[cuda].push_back(outcome.status == ParseStatus::kOk ? FormatBerkeley(outcome.tree)
                                                                : "(())");
    }
  }
  ASSERT_EQ(parses[0].size(), sentences.size());
  int parsed = 0;
  for (size_t i = 0; i < sentences.size(); ++i) {
    EXPECT_EQ(parses[0][i], parses[1][i]) << "sentence " << i;
    parsed += parses[0][i] != "(())";
  }
  EXPECT_GT(parsed, 30);
}

}  // namespace
}  // namespace cky
