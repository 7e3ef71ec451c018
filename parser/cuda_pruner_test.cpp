// GPU coarse-to-fine pruning (parser/cuda_pruner.h) against the CPU pruner
// (parser/coarse_to_fine.h): the same survivors at every pre-parse level and the same fine chart,
// bit for bit, on seeded random grammars and on small_sm2.gr and gum_sm3.gr (sentences of 1, 2 and
// many words); the pruned backend's trees equal the CPU pruned backend's, and with thresholds of
// -infinity the exact trees. Pruned max-rule (MakeCudaMaxRuleBackend with pruning): the same trees as
// the CPU pruned max-rule backend with scores and log P(w) within cuda/inside_outside's tolerance,
// k-best lists too, and with thresholds of -infinity the exact CUDA max-rule trees. Skips without
// a CUDA device (and the shared-grammar cases without ../shared or $CKY_SHARED_DIR).
#include "parser/cuda_pruner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <tuple>

#include "common/sentence_file.h"
#include "common/test_variants.h"
#include "cuda/common/device.h"
#include "grammar_io/berkeley_model.h"
#include "lexicon/lexicon.h"
#include "parser/cuda_backend.h"
#include "parser/cuda_max_rule_backend.h"
#include "parser/parser.h"
#include "parser/random_grammar.h"
#include "parser/backend_factory.h"
#include "parser/cpu_backend.h"

namespace cky {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (!cuda::BuiltWithCuda() || !cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device"

// The coarse_to_fine_test grammars: 5 phrasal symbols, 4 tags, 4 substates (two pre-parse levels).
BerkeleyModel RandomModel(uint64_t seed, int substates = 4) {
  return MakeRandomModel({.phrasal_symbols = 5, .tags = 4, .substates = substates, .seed = seed});
}

// Runs the device over `sentences` and checks every level's survivors and the fine chart against
// the CPU pruner's. Returns how many items were compared at pre-parse levels (kept ones).
// pruning_kernels: cuda/pruning's pre-parse kernel variant (0: the default).
int64_t ExpectSameAsCpu(const Grammar& g, const std::vector<LexicalScores>& lexical,
                        const PruningOptions& pruning, const std::string& what,
                        int pruning_kernels = 0) {
  auto device = CudaCoarseToFine::Create(
      g, pruning, {.keep_level_survivors = true, .pruning_kernels = pruning_kernels});
  EXPECT_TRUE(device.ok()) << device.status().message();
  if (!device.ok()) return 0;
  const CoarseToFinePruner& pruner = (*device)->pruner();
  CpuViterbi fine(g);
  std::vector<const LexicalScores*> pointers;
  for (const auto& l : lexical) pointers.push_back(&l);
  std::vector<size_t> failed;
  std::string why;
  int visited = 0;
  int64_t kept = 0;
  (*device)->Run(
      pointers,
      [&](CudaPrunedBatch& batch) {
        for (size_t b = 0; b < batch.indices.size(); ++b) {
          ++visited;
          const size_t i = batch.indices[b];
          const LexicalScores& lex = lexical[i];
          const int64_t cells = Chart::NumCells(lex.length);
          ItemMask mask;
          std::vector<ItemMask> levels;
          const bool pruned = pruner.Prune(lex, &mask, nullptr, &levels);
          ASSERT_EQ(batch.survivors[b].size(), size_t(pruner.num_levels()));
          for (size_t k = 0; k < levels.size(); ++k) {
            const uint8_t* got = batch.survivors[b][k];
            const std::vector<uint8_t>& want = levels[k].allowed;
            ASSERT_EQ(want.size(), size_t(cells) * pruner.level(int32_t(k)).grammar.num_states());
            int64_t differ = 0;
            for (size_t j = 0; j < want.size(); ++j) {
              differ += want[j] != got[j];
              kept += want[j];
            }
            EXPECT_EQ(differ, 0) << what << ": sentence " << i << " (" << lex.length
                                 << " words), level " << k;
          }
          Chart chart;
          batch.FillChart(b, &chart);
          ASSERT_EQ(chart.length(), lex.length);
          if (!pruned) {
            // A pre-parse without a derivation: the CPU stops; on the device every item of the
            // later levels is pruned, and the fine chart has no parse (both then parse exactly).
            EXPECT_EQ(chart.score(0, lex.length, Grammar::kRootState), kNegInf)
                << what << ": sentence " << i;
            continue;
          }
          Chart want;
          fine.Inside(lex, &mask, &want, nullptr);
          int64_t differ = 0;
          for (size_t j = 0; j < want.data().size(); ++j) {
            differ += want.data()[j] != chart.data()[j];
          }
          EXPECT_EQ(differ, 0) << what << ": fine chart of sentence " << i << " (" << lex.length
                               << " words)";
        }
      },
      &failed, &why);
  EXPECT_TRUE(failed.empty()) << why;
  EXPECT_EQ(visited, int(lexical.size()));
  return kept;
}

std::vector<std::vector<std::string>> RandomSentences(const BerkeleyModel& model, uint64_t seed,
                                                      int longest) {
  auto sentences = MakeRandomSentences(model, 12, 1, 16, seed);
  AddLengthEdgeCases(longest, &sentences);
  return sentences;
}

// The outcomes of two backends (reference first, device second) on the same sentences.
std::pair<std::vector<ParseOutcome>, std::vector<ParseOutcome>> ParseWithBoth(
    const Grammar& g, const Lexicon& lexicon, std::unique_ptr<Backend> reference,
    std::unique_ptr<Backend> device,
    const std::vector<std::vector<std::string>>& sentences) {
  Parser reference_parser(g, lexicon, std::move(reference));
  Parser device_parser(g, lexicon, std::move(device));
  auto want = reference_parser.Parse(sentences);
  return {std::move(want), device_parser.Parse(sentences)};
}

// Pruned trees from the device equal the CPU pruned backend's (and their scores, bit for bit).
void ExpectSameTreesAsCpu(const BerkeleyModel& model, const Lexicon& lexicon,
                          const std::vector<std::vector<std::string>>& sentences,
                          const PruningOptions& pruning, const std::string& what,
                          bool against_exact = false) {
  const Grammar& g = model.grammar;
  auto cpu = against_exact ? StatusOr<std::unique_ptr<Backend>>(MakeCpuBackend(g, 2))
                           : MakePrunedCpuBackend(g, DecoderKind::kViterbi, pruning, 2);
  auto gpu = MakeCudaPrunedBackend(g, pruning, {.max_batch_sentences = 7});
  ASSERT_TRUE(cpu.ok() && gpu.ok()) << gpu.status().message();
  const auto [want, got] = ParseWithBoth(g, lexicon, std::move(*cpu), std::move(*gpu), sentences);
  ASSERT_EQ(want.size(), got.size());
  int parsed = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i].status, got[i].status) << what << " " << i << ": " << got[i].message;
    EXPECT_EQ(want[i].tree, got[i].tree) << what << " " << i;
    if (want[i].status != ParseStatus::kOk) continue;
    ++parsed;
    EXPECT_NEAR(want[i].log_score, got[i].log_score, 1e-5 * std::abs(want[i].log_score))
        << what << " " << i;
  }
  EXPECT_GT(parsed * 2, int(want.size())) << what;
}

// cuda/inside_outside/inside_outside.h's tolerance for log P(w) and max-rule scores.
void ExpectWithinTolerance(double want, double got, const std::string& what) {
  if (want == kNegInf || got == kNegInf) {
    EXPECT_EQ(want, got) << what;
    return;
  }
  EXPECT_LE(std::abs(want - got), 1e-9 * std::max(1.0, std::abs(want) + std::abs(got))) << what;
}

// Pruned max-rule from the device equals the CPU pruned max-rule backend (same trees; scores and
// log P(w) within tolerance; k-best lists when asked), or with against_exact the exact CUDA
// max-rule backend. Returns how many sentences parsed.
int ExpectSameMaxRuleAsCpu(const BerkeleyModel& model, const Lexicon& lexicon,
                           const std::vector<std::vector<std::string>>& sentences,
                           const PruningOptions& pruning, const std::string& what,
                           bool against_exact = false, int kbest = 1, int pruning_kernels = 0,
                           int masked_dispatch = 0) {
  const Grammar& g = model.grammar;
  const DecoderOptions decoding{.kbest = kbest};
  auto cpu = against_exact ? MakeCudaMaxRuleBackend(g, {.decoder = decoding})
                           : MakePrunedCpuBackend(g, DecoderKind::kMaxRule, pruning, 2, decoding);
  auto gpu = MakeCudaMaxRuleBackend(g, {.device = {.max_batch_sentences = 7},
                                        .decoder = decoding,
                                        .pruning = pruning,
                                        .masked_dispatch = masked_dispatch,
                                        .pruning_kernels = pruning_kernels});
  EXPECT_TRUE(cpu.ok() && gpu.ok()) << gpu.status().message();
  if (!cpu.ok() || !gpu.ok()) return 0;
  EXPECT_EQ((*gpu)->name(), "cuda/pruned-max-rule");
  const auto [want, got] = ParseWithBoth(g, lexicon, std::move(*cpu), std::move(*gpu), sentences);
  EXPECT_EQ(want.size(), got.size());
  int parsed = 0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    const std::string at = what + " sentence " + std::to_string(i) + " (" +
                           std::to_string(sentences[i].size()) + " words)";
    EXPECT_EQ(want[i].status, got[i].status) << at << ": " << got[i].message;
    EXPECT_EQ(want[i].tree, got[i].tree) << at;
    if (want[i].status != ParseStatus::kOk || got[i].status != ParseStatus::kOk) continue;
    ++parsed;
    ExpectWithinTolerance(want[i].log_score, got[i].log_score, at + ": max-rule score");
    ExpectWithinTolerance(want[i].log_likelihood, got[i].log_likelihood, at + ": log P(w)");
    EXPECT_EQ(want[i].kbest.size(), got[i].kbest.size()) << at;
    for (size_t k = 0; k < want[i].kbest.size() && k < got[i].kbest.size(); ++k) {
      EXPECT_EQ(want[i].kbest[k].tree, got[i].kbest[k].tree) << at << ", k-best " << k;
    }
  }
  EXPECT_GT(parsed * 2, int(want.size())) << what;
  return parsed;
}

// Thresholds that prune a good share of the items of the random grammars.
PruningOptions Tight() {
  PruningOptions tight;
  tight.thresholds = {-2, -3};
  return tight;
}

class CudaPrunedRandomTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(CudaPrunedRandomTest, SameSurvivorsAndChartsAsTheCpu) {
  SKIP_WITHOUT_DEVICE();
  BerkeleyModel model = RandomModel(GetParam());
  Lexicon lexicon = *Lexicon::Build(model);
  Parser scorer(model.grammar, lexicon, MakeCpuBackend(model.grammar, 1));
  std::vector<LexicalScores> lexical;
  for (const auto& words : RandomSentences(model, GetParam(), 60)) {
    lexical.push_back(scorer.ScoreWords(words));
  }
  // Tight thresholds, Berkeley's, and none.
  const PruningOptions tight = Tight();
  int64_t kept = ExpectSameAsCpu(model.grammar, lexical, tight, "tight");
  EXPECT_GT(kept, 0);
  // The pre-parse kernel variants: per-cell masks at every level, and none.
  EXPECT_EQ(ExpectSameAsCpu(model.grammar, lexical, tight, "tight, kernels 3", 3), kept);
  EXPECT_EQ(ExpectSameAsCpu(model.grammar, lexical, tight, "tight, kernels 1", 1), kept);
  ExpectSameAsCpu(model.grammar, lexical, PruningOptions::Berkeley(false), "fast");
  ExpectSameAsCpu(model.grammar, lexical, PruningOptions::Exact(), "exact");
}

// Each decoder: the CPU pruned backend's trees, and the exact ones without thresholds. One test a
// decoder, so that each fits a device command's limit under racecheck (both took over 545 s).
TEST_P(CudaPrunedRandomTest, ViterbiSameTreesAsTheCpuAndExactTreesWithoutThresholds) {
  SKIP_WITHOUT_DEVICE();
  BerkeleyModel model = RandomModel(GetParam());
  Lexicon lexicon = *Lexicon::Build(model);
  const auto sentences = RandomSentences(model, GetParam(), 60);
  const PruningOptions tight = Tight();
  ExpectSameTreesAsCpu(model, lexicon, sentences, tight, "tight");
  ExpectSameTreesAsCpu(model, lexicon, sentences, PruningOptions::Berkeley(false), "fast");
  ExpectSameTreesAsCpu(model, lexicon, sentences, PruningOptions::Exact(), "exact",
                       /*against_exact=*/true);
}

TEST_P(CudaPrunedRandomTest, MaxRuleSameTreesAsTheCpuAndExactTreesWithoutThresholds) {
  SKIP_WITHOUT_DEVICE();
  BerkeleyModel model = RandomModel(GetParam());
  Lexicon lexicon = *Lexicon::Build(model);
  const auto sentences = RandomSentences(model, GetParam(), 60);
  const PruningOptions tight = Tight();
  ExpectSameMaxRuleAsCpu(model, lexicon, sentences, tight, "max-rule tight");
  // The masked passes' dispatch variants beside the default (work lists).
  for (int dispatch : {1, 2}) {
    ExpectSameMaxRuleAsCpu(model, lexicon, sentences, tight,
                           "max-rule tight, dispatch " + std::to_string(dispatch), false, 1, 0,
                           dispatch);
  }
  ExpectSameMaxRuleAsCpu(model, lexicon, sentences, PruningOptions::Berkeley(false),
                         "max-rule fast");
  ExpectSameMaxRuleAsCpu(model, lexicon, sentences, PruningOptions::Exact(), "max-rule exact",
                         /*against_exact=*/true);
}

TEST_P(CudaPrunedRandomTest, MaxRuleKBestSameAsTheCpu) {
  SKIP_WITHOUT_DEVICE();
  BerkeleyModel model = RandomModel(GetParam());
  Lexicon lexicon = *Lexicon::Build(model);
  auto sentences = RandomSentences(model, GetParam(), 20);
  const PruningOptions tight = Tight();
  ExpectSameMaxRuleAsCpu(model, lexicon, sentences, tight, "k-best tight", false, /*kbest=*/3);
  ExpectSameMaxRuleAsCpu(model, lexicon, sentences, tight, "k-best tight, kernels 3", false,
                         /*kbest=*/3, /*pruning_kernels=*/3);
}

INSTANTIATE_TEST_SUITE_P(Seeds, CudaPrunedRandomTest, ::testing::Values(1, 21, 33));

TEST(CudaPrunedTest, MaxRuleOnAnUnsplitGrammarIsExact) {
  SKIP_WITHOUT_DEVICE();
  BerkeleyModel model = RandomModel(4, 1);
  Lexicon lexicon = *Lexicon::Build(model);
  ExpectSameMaxRuleAsCpu(model, lexicon, RandomSentences(model, 4, 30),
                         PruningOptions::Berkeley(false), "unsplit max-rule",
                         /*against_exact=*/true);
}

TEST(CudaPrunedTest, UnsplitGrammarRunsTheFineGrammarAlone) {
  SKIP_WITHOUT_DEVICE();
  BerkeleyModel model = RandomModel(4, 1);
  Lexicon lexicon = *Lexicon::Build(model);
  ExpectSameTreesAsCpu(model, lexicon, RandomSentences(model, 4, 30),
                       PruningOptions::Berkeley(false), "unsplit", /*against_exact=*/true);
}

// A shared .gr grammar and its test sentences: the first reference sentences, one word, two
// words, and the longest twice over (this process's share of them: KeepTestShard).
struct SharedGrammar {
  std::string name;  // under grammars/
  size_t max_sentences;
};

struct SharedGrammarInputs {
  BerkeleyModel model;
  std::optional<Lexicon> lexicon;
  std::vector<std::vector<std::string>> sentences;
  std::vector<LexicalScores> lexical;
};

// Null, with `skip` saying why, when the shared data is absent.
std::unique_ptr<SharedGrammarInputs> LoadSharedGrammar(const SharedGrammar& grammar,
                                                       std::string* skip) {
  const std::string shared = SharedDataDir();
  const std::string path = shared + "/grammars/" + grammar.name;
  const std::string sentences_path = shared + "/grammars/reference/small_sm2/sentences.txt";
  if (!std::filesystem::exists(path) || !std::filesystem::exists(sentences_path)) {
    *skip = "no " + path;
    return nullptr;
  }
  auto inputs = std::make_unique<SharedGrammarInputs>();
  auto model = LoadBerkeleyModel(path);
  EXPECT_TRUE(model.ok()) << model.status().message();
  auto read = ReadTokenizedSentences(sentences_path);
  EXPECT_TRUE(read.ok());
  if (!model.ok() || !read.ok()) return nullptr;
  inputs->model = std::move(*model);
  inputs->lexicon.emplace(*Lexicon::Build(inputs->model));
  std::vector<std::vector<std::string>>& sentences = inputs->sentences;
  sentences = *read;
  if (sentences.size() > grammar.max_sentences) sentences.resize(grammar.max_sentences);
  size_t longest = 0;
  for (size_t i = 0; i < sentences.size(); ++i) {
    if (sentences[i].size() > sentences[longest].size()) longest = i;
  }
  sentences.push_back({sentences[0][0]});
  sentences.push_back({sentences[0][0], sentences[0][1]});
  std::vector<std::string> twice = sentences[longest];
  twice.insert(twice.end(), sentences[longest].begin(), sentences[longest].end());
  sentences.push_back(twice);
  KeepTestShard(&sentences);
  Parser scorer(inputs->model.grammar, *inputs->lexicon, MakeCpuBackend(inputs->model.grammar, 1));
  for (const auto& words : sentences) inputs->lexical.push_back(scorer.ScoreWords(words));
  return inputs;
}

const SharedGrammar kSharedGrammars[] = {{"berkeley-small/small_sm2.gr", 40},
                                         {"berkeley-gum/gum_sm3.gr", 25}};

void PrintTo(const SharedGrammar& grammar, std::ostream* os) { *os << grammar.name; }

std::string Stem(const SharedGrammar& grammar) {
  return std::filesystem::path(grammar.name).stem().string();
}

// One (grammar, Berkeley's setting) and one comparison a test, so that each runs in one process
// under a sanitizer within a device command's limit (all of one grammar's took over 545 s under
// racecheck).
class CudaPrunedSharedGrammarTest
    : public ::testing::TestWithParam<std::tuple<SharedGrammar, std::string>> {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_DEVICE();
    std::string skip;
    inputs_ = LoadSharedGrammar(std::get<0>(GetParam()), &skip);
    if (!inputs_ && !skip.empty()) GTEST_SKIP() << skip;
    ASSERT_TRUE(inputs_);
    pruning_ = *PruningOptions::Named(std::get<1>(GetParam()));
    what_ = std::get<0>(GetParam()).name + " " + std::get<1>(GetParam());
  }
  std::unique_ptr<SharedGrammarInputs> inputs_;
  PruningOptions pruning_;
  std::string what_;
};

TEST_P(CudaPrunedSharedGrammarTest, SameSurvivorsAndChartsAsTheCpu) {
  const Grammar& g = inputs_->model.grammar;
  EXPECT_GT(ExpectSameAsCpu(g, inputs_->lexical, pruning_, what_), 0);
  EXPECT_GT(ExpectSameAsCpu(g, inputs_->lexical, pruning_, what_ + ", kernels 3", 3), 0);
}

TEST_P(CudaPrunedSharedGrammarTest, ViterbiSameTreesAsTheCpu) {
  ExpectSameTreesAsCpu(inputs_->model, *inputs_->lexicon, inputs_->sentences, pruning_, what_);
}

TEST_P(CudaPrunedSharedGrammarTest, MaxRuleSameTreesAsTheCpu) {
  ExpectSameMaxRuleAsCpu(inputs_->model, *inputs_->lexicon, inputs_->sentences, pruning_,
                         what_ + " max-rule");
}

INSTANTIATE_TEST_SUITE_P(Shared, CudaPrunedSharedGrammarTest,
                         ::testing::Combine(::testing::ValuesIn(kSharedGrammars),
                                            ::testing::Values("fast", "safe")),
                         [](const auto& info) {  // small_sm2_fast and the like
                           return Stem(std::get<0>(info.param)) + "_" + std::get<1>(info.param);
                         });

class CudaPrunedSharedGrammarExactTest : public ::testing::TestWithParam<SharedGrammar> {};

TEST_P(CudaPrunedSharedGrammarExactTest, MaxRuleWithoutThresholdsIsExact) {
  SKIP_WITHOUT_DEVICE();
  std::string skip;
  auto inputs = LoadSharedGrammar(GetParam(), &skip);
  if (!inputs && !skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(inputs);
  ExpectSameMaxRuleAsCpu(inputs->model, *inputs->lexicon, inputs->sentences,
                         PruningOptions::Exact(), GetParam().name + " max-rule exact",
                         /*against_exact=*/true);
}

INSTANTIATE_TEST_SUITE_P(Shared, CudaPrunedSharedGrammarExactTest,
                         ::testing::ValuesIn(kSharedGrammars),
                         [](const auto& info) { return Stem(info.param); });

TEST(CudaPrunedTest, AutoPrunesMaxRuleButNotViterbiOnTheGpu) {
  SKIP_WITHOUT_DEVICE();
  BerkeleyModel model = RandomModel(3);
  auto name = [&](const std::string& decoder, const std::string& prune) {
    auto backend = MakeBackend(
        model.grammar, {.device = DeviceKind::kCuda, .threads = 2, .decoder = *ParseDecoderKind(decoder), .prune = *ParsePruneMode(prune)});
    EXPECT_TRUE(backend.ok()) << backend.status().message();
    return backend.ok() ? (*backend)->name() : std::string();
  };
  EXPECT_EQ(name("max-rule", "auto"), "cuda/pruned-max-rule");
  EXPECT_EQ(name("max-rule", "safe"), "cuda/pruned-max-rule");
  EXPECT_EQ(name("max-rule", "off"), "cuda/max-rule");
  EXPECT_EQ(name("viterbi", "fast"), "cuda/pruned");
  EXPECT_NE(name("viterbi", "auto"), "cuda/pruned");
}

TEST(CudaPrunedTest, WithoutADeviceCreationFailsCleanly) {
  if (cuda::BuiltWithCuda() && cuda::DeviceAvailable()) GTEST_SKIP() << "a device is present";
  BerkeleyModel model = RandomModel(1);
  auto backend = MakeCudaPrunedBackend(model.grammar, PruningOptions::Berkeley(false));
  EXPECT_FALSE(backend.ok());
  auto max_rule =
      MakeCudaMaxRuleBackend(model.grammar, {.pruning = PruningOptions::Berkeley(false)});
  EXPECT_FALSE(max_rule.ok());
}

}  // namespace
}  // namespace cky
