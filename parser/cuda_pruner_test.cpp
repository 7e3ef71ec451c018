// GPU coarse-to-fine pruning (parser/cuda_pruner.h) against the CPU pruner
// (parser/coarse_to_fine.h): the same survivors at every pre-parse level and the same fine chart,
// bit for bit, with the pre-parse kernel variants, on seeded random grammars and on small_sm2.gr
// and gum_sm3.gr (backend_test_support.h's fixtures: sentences of 1, 2 and many words). The pruned
// backends' outcomes (pruned Viterbi and pruned max-rule on the GPU against the CPU pruned backends
// and, without thresholds, the exact trees; k-best lists; dispatch and kernel variants) are rows
// of parser/backend_conformance_test.cpp. Also: which backend `auto` pruning makes on a GPU, and
// creation without a device. Skips without a CUDA device (and the shared-grammar fixtures without
// ../shared or $CKY_SHARED_DIR).
#include "parser/cuda_pruner.h"

#include <gtest/gtest.h>

#include <tuple>

#include "cuda/common/device.h"
#include "parser/backend_factory.h"
#include "parser/backend_test_support.h"
#include "parser/cuda_backend.h"
#include "parser/cuda_max_rule_backend.h"
#include "parser/viterbi_cpu.h"

namespace cky {
namespace {

// Runs the device over `sentences` and checks every level's survivors and the fine chart against
// the CPU pruner's. Returns how many items were compared at pre-parse levels (kept ones).
// pruning_kernels: cuda/pruning's pre-parse kernel variant (0: the default).
// dense_chunk, pair_group_substates, pair_sparse_below, pair_cells: CudaPrunerOptions' (0, 0, -1,
// 0: their defaults). *pair_groups (when given): CudaCoarseToFine::pair_groups(). `first`, when
// given: CudaPrunerOptions::first_lexical, and max_batch_sentences.
struct FirstLexical {
  std::function<std::span<const LexicalScores>()> given;
  int max_batch_sentences = 1024;
};
int64_t ExpectSameAsCpu(const Grammar& g, const std::vector<LexicalScores>& lexical,
                        const PruningOptions& pruning, const std::string& what,
                        int pruning_kernels = 0, int dense_chunk = 0, int pair_group_substates = 0,
                        std::vector<int32_t>* pair_groups = nullptr, double pair_sparse_below = -1,
                        int pair_cells = 0, const FirstLexical& first = {}) {
  auto device = CudaCoarseToFine::Create(g, pruning,
                                         {.max_batch_sentences = first.max_batch_sentences,
                                          .keep_level_survivors = true,
                                          .pruning_kernels = pruning_kernels,
                                          .device_trees = false,
                                          .dense_chunk = dense_chunk,
                                          .pair_group_substates = pair_group_substates,
                                          .pair_sparse_below = pair_sparse_below,
                                          .pair_cells = pair_cells,
                                          .first_lexical = first.given});
  EXPECT_TRUE(device.ok()) << device.status().message();
  if (!device.ok()) return 0;
  if (pair_groups) *pair_groups = (*device)->pair_groups();
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
          fine.Inside(lex, &mask, &want, nullptr, pruner.order());
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

// The sentences' lexical scores, as the parser hands them to a backend.
std::vector<LexicalScores> LexicalOf(const TestGrammar& grammar, const Sentences& sentences) {
  std::vector<LexicalScores> lexical;
  for (const SentenceInput& input : ScoredInputs(grammar, sentences))
    lexical.push_back(input.lexical);
  return lexical;
}

// Every level's survivors and the fine chart, with the given pruning settings (TestPruning), the
// default pre-parse kernels and `kernels` (cuda/pruning's variants): the same items, so the same
// number kept. One (fixture, setting) a test, so that each runs in one process under a sanitizer
// within a device command's limit.
class CudaPrunerTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string, std::vector<int>>> {};

TEST_P(CudaPrunerTest, SameSurvivorsAndChartsAsTheCpu) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  const auto& [name, pruning_name, kernels] = GetParam();
  std::string skip;
  const TestFixture* f = FindTestFixture(name, &skip);
  if (!f) GTEST_SKIP() << skip;
  const Grammar& g = f->grammar->grammar();
  const std::vector<LexicalScores> lexical = LexicalOf(*f->grammar, f->sentences);
  const PruningOptions pruning = TestPruning(pruning_name);
  const std::string what = name + " " + pruning_name;
  const int64_t kept = ExpectSameAsCpu(g, lexical, pruning, what);
  EXPECT_GT(kept, 0) << what;
  for (int variant : kernels) {
    EXPECT_EQ(ExpectSameAsCpu(g, lexical, pruning, what + ", kernels " + std::to_string(variant),
                              variant),
              kept);
  }
  // Pruning kernels 6 staging one and three split points (parent cells) at a time, as they do on
  // long sentences of big levels.
  for (int chunk : {1, 3}) {
    EXPECT_EQ(
        ExpectSameAsCpu(g, lexical, pruning, what + ", chunk " + std::to_string(chunk), 6, chunk),
        kept);
  }
  // The pair kernels' tiles all sparse (their S phase only at the pairs their rules use) and all
  // dense.
  for (double below : {2.0, 0.0}) {
    EXPECT_EQ(ExpectSameAsCpu(g, lexical, pruning, what + ", sparse below " + std::to_string(below),
                              0, 0, 0, nullptr, below),
              kept);
  }
  // The pair kernels' groups of 8 and of 16 target cells at every level (by default a level's
  // substates a symbol choose).
  for (int cells : {8, 16}) {
    EXPECT_EQ(ExpectSameAsCpu(g, lexical, pruning, what + ", cells " + std::to_string(cells), 0, 0,
                              0, nullptr, -1, cells),
              kept);
  }
}

// Random grammars: tight thresholds with every pre-parse kernel variant, Berkeley's, and none;
// the shared grammars with Berkeley's and safe thresholds.
INSTANTIATE_TEST_SUITE_P(
    Random, CudaPrunerTest,
    ::testing::Combine(::testing::Values("split_seed1", "split_seed21", "split_seed33"),
                       ::testing::Values("tight"),
                       ::testing::Values(std::vector<int>{3, 1, 2, 4, 5})),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });
INSTANTIATE_TEST_SUITE_P(
    RandomUntuned, CudaPrunerTest,
    ::testing::Combine(::testing::Values("split_seed1", "split_seed21", "split_seed33"),
                       ::testing::Values("fast", "exact"), ::testing::Values(std::vector<int>{})),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });
INSTANTIATE_TEST_SUITE_P(Shared, CudaPrunerTest,
                         ::testing::Combine(::testing::Values("small_sm2", "gum_sm3"),
                                            ::testing::Values("fast", "safe"),
                                            ::testing::Values(std::vector<int>{3, 2, 4, 5})),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

// A fine grammar of 8 substates a symbol: its masked inside pass runs on the pair kernels (levels
// of 4 or more substates a symbol on average do), adding pair first as the CPU's pruned fine pass;
// the coarser levels (1, 2 and 4 substates) as before. Sentences of 1, 2, up to 16 and 40 words.
TEST(CudaPrunerTest, FineGrammarOnThePairKernelsGivesTheCpuChart) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  const TestGrammar grammar = MakeRandomTestGrammar(SplitShape(5, 8));
  const Grammar& g = grammar.grammar();
  ASSERT_GE(g.num_states(), 4 * g.num_symbols())
      << "the fine grammar would not run the pair kernels";
  const std::vector<LexicalScores> lexical =
      LexicalOf(grammar, RandomTestSentences(grammar.model, 12, 1, 16, 5, 40));
  for (const std::string name : {"tight", "exact"}) {
    const int64_t kept = ExpectSameAsCpu(g, lexical, TestPruning(name), "split8 " + name);
    EXPECT_GT(kept, 0) << name;
    // The fine pass's tiles all sparse (the S phase only at the pairs the rules use).
    EXPECT_EQ(ExpectSameAsCpu(g, lexical, TestPruning(name), "split8 sparse " + name, 0, 0, 0,
                              nullptr, 2.0),
              kept);
  }
}

// A fine grammar of 16 substates a symbol: its pass's pair tiles cut by the states of pre-parse
// level 1 (2 a symbol; cuda::PruningLevel::pair_groups) where a symbol has at least 2 states (the
// default cuts symbols of 32 and more), by symbols otherwise: the same chart as the CPU's either
// way. Sentences of 1, 2, up to 12 and 25 words.
TEST(CudaPrunerTest, FinePassTiledByStateGroupsGivesTheCpuChart) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  const TestGrammar grammar = MakeRandomTestGrammar(SplitShape(7, 16));
  const Grammar& g = grammar.grammar();
  const std::vector<LexicalScores> lexical =
      LexicalOf(grammar, RandomTestSentences(grammar.model, 6, 1, 12, 7, 25));
  const PruningOptions pruning = TestPruning("tight");
  std::vector<int32_t> groups;
  const int64_t kept = ExpectSameAsCpu(g, lexical, pruning, "split16", 0, 0, 0, &groups);
  EXPECT_GT(kept, 0);
  EXPECT_EQ(groups, std::vector<int32_t>(groups.size(), 0)) << "no symbol of 32 states";
  EXPECT_EQ(ExpectSameAsCpu(g, lexical, pruning, "split16 groups", 0, 0, 2, &groups), kept);
  ASSERT_FALSE(groups.empty());
  EXPECT_EQ(groups.back(), 2 * g.num_symbols() - 1) << "ROOT has one state, the others two groups";
  EXPECT_EQ(ExpectSameAsCpu(g, lexical, pruning, "split16 symbols", 0, 0, -1, &groups), kept);
  EXPECT_EQ(groups, std::vector<int32_t>(groups.size(), 0));
  // Groups and every tile sparse.
  EXPECT_EQ(ExpectSameAsCpu(g, lexical, pruning, "split16 groups, sparse", 0, 0, 2, nullptr, 2.0),
            kept);
}

// The first batch's projections made while the pruner is created (CudaPrunerOptions::
// first_lexical, the sentences `cky parse` scores beside the load): the same survivors and charts,
// whether the given sentences are the batches' (the first batch takes theirs, the next one's are
// taken for its projections ahead), only some of them (the first batch misses one: all dropped),
// or carry no ahead_id.
TEST(CudaPrunerTest, FirstBatchProjectedAtCreationGivesTheCpuCharts) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  const TestGrammar grammar = MakeRandomTestGrammar(SplitShape(5, 8));
  const Grammar& g = grammar.grammar();
  std::vector<LexicalScores> lexical =
      LexicalOf(grammar, RandomTestSentences(grammar.model, 10, 1, 14, 9, 30));
  for (size_t i = 0; i < lexical.size(); ++i) lexical[i].ahead_id = 1000 + i;
  const PruningOptions pruning = TestPruning("tight");
  const int64_t kept = ExpectSameAsCpu(g, lexical, pruning, "no first");
  EXPECT_GT(kept, 0);
  const std::vector<LexicalScores> some(lexical.begin(), lexical.begin() + 4);
  std::vector<LexicalScores> unnumbered = lexical;
  for (LexicalScores& l : unnumbered) l.ahead_id = 0;
  struct Case {
    std::string name;
    const std::vector<LexicalScores>* given;
  };
  int asked = 0;
  for (const Case& c :
       {Case{"all", &lexical}, Case{"some", &some}, Case{"unnumbered", &unnumbered}}) {
    const std::vector<LexicalScores>* given = c.given;
    const FirstLexical first{.given = [&asked, given]() -> std::span<const LexicalScores> {
                               ++asked;
                               return *given;
                             },
                             .max_batch_sentences = 3};
    EXPECT_EQ(
        ExpectSameAsCpu(g, lexical, pruning, "first " + c.name, 0, 0, 0, nullptr, -1, 0, first),
        kept)
        << c.name;
  }
  EXPECT_EQ(asked, 3);
}

TEST(CudaPrunedTest, AutoPrunesMaxRuleButNotViterbiOnTheGpu) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  BerkeleyModel model = MakeRandomModel(SplitShape(3));
  auto name = [&](const std::string& decoder, const std::string& prune) {
    auto backend = MakeBackend(model.grammar, {.device = DeviceKind::kCuda,
                                               .threads = 2,
                                               .decoder = *ParseDecoderKind(decoder),
                                               .prune = *ParsePruneMode(prune)});
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
  BerkeleyModel model = MakeRandomModel(SplitShape(1));
  auto backend = MakeCudaPrunedBackend(model.grammar, PruningOptions::Berkeley(false));
  EXPECT_FALSE(backend.ok());
  auto max_rule =
      MakeCudaMaxRuleBackend(model.grammar, {.pruning = PruningOptions::Berkeley(false)});
  EXPECT_FALSE(max_rule.ok());
}

}  // namespace
}  // namespace cky
