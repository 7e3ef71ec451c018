// One conformance suite in the manner of ggml's test-backend-ops. Each row of the table below is a
// backend, {device x decoder x pruning x variant}, made as the library makes it (MakeBackend,
// MakeCudaBackend, MakeCudaMaxRuleBackend, MakeCudaPrunedBackend, the multi-device layer), with
// the oracle it must agree with and the tolerance its header states. Each row parses each fixture
// of its list (parser/backend_test_support.h: seeded random grammars of several shapes, the shared
// real grammars; lengths 1, 2 and the longest) and must give the oracle's statuses and trees, with
// scores within the tolerance. One test per (row, fixture):
// Rows/BackendConformanceTest.AgreesWithItsOracle/<row>__<fixture>.
//
// Oracles: the CPU reference (MakeReferenceBackend, MakeReferenceMaxRuleBackend with the same
// k-best lists) for every exact row and for pruned rows without thresholds (PruningOptions::Exact()
// or an unsplit grammar); the CPU pruned backend with the same pruning for the other pruned rows.
// Tolerances (backend_test_support.h): the CPU Viterbi paths bit for bit, CPU max-rule 1e-9
// absolute, GPU Viterbi 1e-5 relative (floats), GPU max-rule scores and log P(w) 1e-9 relative
// (cuda/inside_outside/inside_outside.h), GPU pruned Viterbi 1e-5 relative to the CPU's score.
//
// CUDA rows skip without a device; real-grammar fixtures without the shared data. CKY_TEST_VARIANTS
// (common/test_variants.h) keeps the rows of the variants it names: a CUDA Viterbi kernel's name,
// a CUDA max-rule variant's ("default", "g16", "pair-sum-1", ...), a pruned one's ("dispatch-1",
// "kernels-3", ...); every other row is "default". CKY_TEST_SHARD keeps a share of the real
// grammars' sentences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "common/test_variants.h"
#include "parser/backend_factory.h"
#include "parser/backend_test_support.h"
#include "parser/cpu_backend.h"
#include "parser/cuda_backend.h"
#include "parser/cuda_max_rule_backend.h"
#include "parser/multi_device_backend.h"

namespace cky {
namespace {

using Fixtures = std::vector<std::string>;

struct Row {
  std::string name;          // in the test's name: [a-z0-9_]
  std::string variant;       // for CKY_TEST_VARIANTS
  bool cuda = false;         // needs a CUDA device
  std::string backend_name;  // what the backend's name() says
  GrammarBackendFactory make;
  Oracle oracle;
  OutcomeComparison compare;
  int kbest = 1;  // the length of the k-best lists the backend gives (1: none)
  Fixtures fixtures;
};

// The exact GPU rows' fixtures: every random shape, the CPU decoders' grammars, two real grammars.
const Fixtures kExact = {"random_seed1",        "random_seed2",       "random_seed3",
                         "random_seed7",        "small_random_seed1", "small_random_seed21",
                         "small_random_seed33", "small_random_seed9", "many_substates",
                         "big_parent",          "small_sm2",          "wsj_1"};
// The CPU's: the shapes that only the GPU kernels care about (35 substates, a big parent) and all
// but one of the standard random grammars left out.
const Fixtures kCpuExact = {"random_seed1",
                            "small_random_seed1",
                            "small_random_seed21",
                            "small_random_seed33",
                            "small_random_seed9",
                            "small_sm2",
                            "wsj_1"};
// K-best lists, on random grammars (the reference's k-best decoding is slow on real ones).
const Fixtures kKBest = {"random_seed7", "small_random_seed9", "small_random_seed1"};
// The multi-device layer: which slot parses a sentence must not matter.
const Fixtures kMultiCpu = {"random_seed1", "small_random_seed21"};
const Fixtures kMultiCuda = {"random_seed1", "small_random_seed21", "small_sm2"};
// The pruned rows': two pre-parse levels on random grammars, and real grammars.
const Fixtures kSplit = {"split_seed1", "split_seed21", "split_seed33"};
const Fixtures kCpuPruned = {"split_seed1", "split_seed21", "split_seed33", "small_sm2"};
const Fixtures kPruned = {"split_seed1", "split_seed21", "split_seed33", "small_sm2", "gum_sm3"};
// GPU pruned Viterbi: also a fine grammar whose masked pass runs on the pair kernels.
const Fixtures kPrunedViterbi = {"split_seed1", "split_seed21", "split_seed33",
                                 "small_sm2",   "gum_sm3",      "split8_seed5"};

const OutcomeComparison kViterbiIdentical{.score = kIdenticalScores};
const OutcomeComparison kPrunedViterbiOnCpu{.score = kPairFirstScores};
const OutcomeComparison kViterbiOnDevice{.score = kDeviceFloatTolerance};
const OutcomeComparison kPrunedViterbiOnDevice{.score = kDevicePrunedTolerance};
const OutcomeComparison kMaxRuleOnCpu{.score = kCpuSumTolerance, .likelihood = true};
const OutcomeComparison kMaxRuleOnDevice{.score = kDeviceSumTolerance, .likelihood = true};

OutcomeComparison WithKBest(OutcomeComparison compare, ScoreTolerance kbest_score) {
  compare.kbest = true;
  compare.kbest_score = kbest_score;
  return compare;
}

// "pair-seg-g8" -> "pair_seg_g8".
std::string Id(std::string name) {
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

Fixtures Plus(Fixtures fixtures, const Fixtures& more) {
  fixtures.insert(fixtures.end(), more.begin(), more.end());
  return fixtures;
}

GrammarBackendFactory Factory(BackendOptions options) {
  return [options](const Grammar& g) { return MakeBackend(g, options); };
}

GrammarBackendFactory MultiCpu(DecoderKind decoder) {
  return [decoder](const Grammar& g) {
    std::vector<BackendSlot> slots;
    for (int k = 0; k < 2; ++k) {
      slots.push_back({.label = "cpu#" + std::to_string(k), .make = [&g, decoder] {
                         return MakeCpuBackend(g, {.decoder = decoder, .threads = 1});
                       }});
    }
    return MakeMultiDeviceBackend(std::move(slots));
  };
}

GrammarBackendFactory PrunedCpu(DecoderKind decoder, const std::string& pruning) {
  return [decoder, pruning](const Grammar& g) {
    return MakePrunedCpuBackend(g, decoder, TestPruning(pruning), 2);
  };
}

GrammarBackendFactory CudaViterbi(CudaBackendOptions options) {
  return [options](const Grammar& g) { return MakeCudaBackend(g, options); };
}

GrammarBackendFactory CudaMaxRule(CudaMaxRuleOptions options) {
  return [options](const Grammar& g) { return MakeCudaMaxRuleBackend(g, options); };
}

// device_trees false: the fine chart's entries come back and the trees are extracted on the host;
// tree_node_slots 3: every tree of more than 3 nodes overflows the device search's buffer, and the
// CPU pruned backend parses its sentence.
GrammarBackendFactory CudaPrunedViterbi(const std::string& pruning, int pruning_kernels = 0,
                                        bool device_trees = true, int tree_node_slots = 0) {
  return [pruning, pruning_kernels, device_trees, tree_node_slots](const Grammar& g) {
    return MakeCudaPrunedBackend(g, TestPruning(pruning),
                                 {.max_batch_sentences = 7,
                                  .pruning_kernels = pruning_kernels,
                                  .device_trees = device_trees,
                                  .tree_node_slots = tree_node_slots});
  };
}

CudaMaxRuleOptions PrunedMaxRule(const std::string& pruning) {
  return {.device = {.max_batch_sentences = 7}, .pruning = TestPruning(pruning)};
}

std::vector<Row> MakeRows() {
  using K = DecoderKind;
  std::vector<Row> rows;
  // The CPU, through the factory.
  rows.push_back({"cpu_viterbi", "default", false, "cpu",
                  Factory({.device = DeviceKind::kCpu,
                           .threads = 2,
                           .decoder = K::kViterbi,
                           .prune = PruneMode::kOff}),
                  ReferenceViterbiOracle(), kViterbiIdentical, 1, kCpuExact});
  rows.push_back({"cpu_max_rule", "default", false, "cpu/max-rule",
                  Factory({.device = DeviceKind::kCpu, .threads = 2, .prune = PruneMode::kOff}),
                  ReferenceMaxRuleOracle(), kMaxRuleOnCpu, 1, kCpuExact});
  // K-best decoding leaves the best tree and its scores as they are.
  rows.push_back({"reference_max_rule_kbest5_best_tree",
                  "default",
                  false,
                  "reference/max-rule",
                  Factory({.device = DeviceKind::kReference, .prune = PruneMode::kOff, .kbest = 5}),
                  ReferenceMaxRuleOracle(),
                  {.score = kIdenticalScores, .likelihood = true},
                  5,
                  kKBest});
  for (KBestStyle style : {KBestStyle::kExact, KBestStyle::kBerkeley}) {
    const std::string suffix = style == KBestStyle::kBerkeley ? "_berkeley" : "";
    rows.push_back({"cpu_max_rule_kbest5" + suffix, "default", false, "cpu/max-rule",
                    Factory({.device = DeviceKind::kCpu,
                             .threads = 2,
                             .prune = PruneMode::kOff,
                             .kbest = 5,
                             .kbest_style = style}),
                    ReferenceMaxRuleOracle({.kbest = 5, .kbest_style = style}),
                    WithKBest(kMaxRuleOnCpu, kCpuSumTolerance), 5, kKBest});
  }
  // The multi-device layer over two CPU backends.
  rows.push_back({"multi_cpu_x2_viterbi", "default", false, "cpu on cpu#0,cpu#1",
                  MultiCpu(K::kViterbi), ReferenceViterbiOracle(), kViterbiIdentical, 1,
                  kMultiCpu});
  rows.push_back({"multi_cpu_x2_max_rule", "default", false, "cpu/max-rule on cpu#0,cpu#1",
                  MultiCpu(K::kMaxRule), ReferenceMaxRuleOracle(), kMaxRuleOnCpu, 1, kMultiCpu});
  // CPU pruning without thresholds, at every level or at level 1 alone, keeps the exact trees; on
  // an unsplit grammar there is no pre-parse level to prune with.
  rows.push_back({"cpu_pruned_viterbi_exact", "default", false, "cpu/pruned",
                  PrunedCpu(K::kViterbi, "exact"), ReferenceViterbiOracle(), kPrunedViterbiOnCpu, 1,
                  kCpuPruned});
  rows.push_back({"cpu_pruned_max_rule_exact", "default", false, "cpu/pruned-max-rule",
                  PrunedCpu(K::kMaxRule, "exact"), ReferenceMaxRuleOracle(), kMaxRuleOnCpu, 1,
                  kCpuPruned});
  rows.push_back({"cpu_pruned_max_rule_exact_level1", "default", false, "cpu/pruned-max-rule",
                  PrunedCpu(K::kMaxRule, "exact@1"), ReferenceMaxRuleOracle(), kMaxRuleOnCpu, 1,
                  kSplit});
  rows.push_back({"cpu_pruned_viterbi_fast_unsplit",
                  "default",
                  false,
                  "cpu/pruned",
                  PrunedCpu(K::kViterbi, "fast"),
                  ReferenceViterbiOracle(),
                  kPrunedViterbiOnCpu,
                  1,
                  {"unsplit"}});
  rows.push_back({"cpu_pruned_max_rule_fast_unsplit",
                  "default",
                  false,
                  "cpu/pruned-max-rule",
                  PrunedCpu(K::kMaxRule, "fast"),
                  ReferenceMaxRuleOracle(),
                  kMaxRuleOnCpu,
                  1,
                  {"unsplit"}});

  // CUDA Viterbi: every kernel variant, with the trees read on the device; on the sparse grammar's
  // copies also read on the host; about 1,000 sentences in one batch; the 800-word sentence.
  const std::vector<std::string> kernels = CudaKernelNames();
  for (const std::string& kernel : kernels) {
    rows.push_back({"cuda_viterbi_kernel_" + Id(kernel), kernel, true, "cuda/" + kernel,
                    CudaViterbi({.kernel = kernel}), ReferenceViterbiOracle(), kViterbiOnDevice, 1,
                    Plus(kExact, {"sparse_copies", "sparse_mixed", "eight_hundred"})});
    rows.push_back({"cuda_viterbi_host_trees_" + Id(kernel),
                    kernel,
                    true,
                    "cuda/" + kernel,
                    CudaViterbi({.kernel = kernel, .device_trees = false}),
                    ReferenceViterbiOracle(),
                    kViterbiOnDevice,
                    1,
                    {"sparse_copies"}});
    rows.push_back({"cuda_viterbi_one_batch_" + Id(kernel),
                    kernel,
                    true,
                    "cuda/" + kernel,
                    CudaViterbi({.kernel = kernel, .device = {.max_batch_sentences = 1024}}),
                    ReferenceViterbiOracle(),
                    kViterbiOnDevice,
                    1,
                    {"thousand"}});
  }
  // Many small batches (the default kernel).
  rows.push_back({"cuda_viterbi_batches_of_3",
                  kernels.front(),
                  true,
                  "cuda/" + kernels.front(),
                  CudaViterbi({.device = {.max_batch_sentences = 3}}),
                  ReferenceViterbiOracle(),
                  kViterbiOnDevice,
                  1,
                  {"splits"}});

  // CUDA max-rule: every kernel variant.
  for (const MaxRuleKernelVariant& v : MaxRuleKernelVariants()) {
    rows.push_back({"cuda_max_rule_variant_" + Id(v.name), v.name, true, "cuda/max-rule",
                    CudaMaxRule({.cells_per_group = v.cells_per_group,
                                 .pair_sum_kernel = v.pair_sum_kernel,
                                 .max_rule_kernel = v.max_rule_kernel}),
                    ReferenceMaxRuleOracle(), kMaxRuleOnDevice, 1, kExact});
  }
  rows.push_back({"cuda_max_rule_batches_of_3",
                  "default",
                  true,
                  "cuda/max-rule",
                  CudaMaxRule({.device = {.max_batch_sentences = 3}}),
                  ReferenceMaxRuleOracle(),
                  kMaxRuleOnDevice,
                  1,
                  {"splits"}});
  // K-best lists from the device's posteriors (decoded on the host): the reference's trees, scores
  // within 1e-9.
  for (KBestStyle style : {KBestStyle::kExact, KBestStyle::kBerkeley}) {
    const DecoderOptions decoding{.kbest = 5, .kbest_style = style};
    rows.push_back(
        {std::string("cuda_max_rule_kbest5") + (style == KBestStyle::kBerkeley ? "_berkeley" : ""),
         "default", true, "cuda/max-rule", CudaMaxRule({.decoder = decoding}),
         ReferenceMaxRuleOracle(decoding), WithKBest(kMaxRuleOnDevice, kCpuSumTolerance), 5,
         kKBest});
  }

  // The multi-device layer: one and two backends on device 0, made by the factory.
  const std::string viterbi_name = "cuda/" + kernels.front();
  for (const std::vector<int>& devices : {std::vector<int>{0}, std::vector<int>{0, 0}}) {
    const std::string count = std::to_string(devices.size());
    const std::string on = devices.size() == 1 ? " on cuda:0" : " on cuda:0#0,cuda:0#1";
    rows.push_back({"multi_cuda_x" + count + "_viterbi", "default", true, viterbi_name + on,
                    Factory({.device = DeviceKind::kCuda,
                             .decoder = K::kViterbi,
                             .prune = PruneMode::kOff,
                             .devices = devices}),
                    ReferenceViterbiOracle(), kViterbiOnDevice, 1, kMultiCuda});
    rows.push_back(
        {"multi_cuda_x" + count + "_max_rule", "default", true, "cuda/max-rule" + on,
         Factory({.device = DeviceKind::kCuda, .prune = PruneMode::kOff, .devices = devices}),
         ReferenceMaxRuleOracle(), kMaxRuleOnDevice, 1, kMultiCuda});
  }

  // CUDA pruned Viterbi: the CPU pruned backend's trees (tight thresholds, Berkeley's, safe; the
  // pre-parse kernel variants), the exact trees without thresholds or levels.
  const Oracle viterbi_tight = CpuPrunedOracle(K::kViterbi, "tight");
  rows.push_back({"cuda_pruned_viterbi_tight", "default", true, "cuda/pruned",
                  CudaPrunedViterbi("tight"), viterbi_tight, kPrunedViterbiOnDevice, 1, kSplit});
  for (int kernels_variant : {1, 3, 4, 5}) {
    const std::string v = "kernels-" + std::to_string(kernels_variant);
    rows.push_back({"cuda_pruned_viterbi_tight_" + Id(v), v, true, "cuda/pruned",
                    CudaPrunedViterbi("tight", kernels_variant), viterbi_tight,
                    kPrunedViterbiOnDevice, 1, kSplit});
  }
  rows.push_back({"cuda_pruned_viterbi_tight_host_trees", "host-trees", true, "cuda/pruned",
                  CudaPrunedViterbi("tight", 0, false), viterbi_tight, kPrunedViterbiOnDevice, 1,
                  kSplit});
  rows.push_back({"cuda_pruned_viterbi_tight_searches_on_host", "host-searches", true,
                  "cuda/pruned", CudaPrunedViterbi("tight", 0, true, 3), viterbi_tight,
                  kPrunedViterbiOnDevice, 1, kSplit});
  for (const std::string pruning : {"fast", "safe"}) {
    rows.push_back({"cuda_pruned_viterbi_" + pruning, "default", true, "cuda/pruned",
                    CudaPrunedViterbi(pruning), CpuPrunedOracle(K::kViterbi, pruning),
                    kPrunedViterbiOnDevice, 1, kPrunedViterbi});
  }
  rows.push_back({"cuda_pruned_viterbi_exact", "default", true, "cuda/pruned",
                  CudaPrunedViterbi("exact"), ReferenceViterbiOracle(), kPrunedViterbiOnDevice, 1,
                  kSplit});
  rows.push_back({"cuda_pruned_viterbi_fast_unsplit",
                  "default",
                  true,
                  "cuda/pruned",
                  CudaPrunedViterbi("fast"),
                  ReferenceViterbiOracle(),
                  kPrunedViterbiOnDevice,
                  1,
                  {"unsplit"}});

  // CUDA pruned max-rule: the same, and the masked passes' dispatch variants (3, work lists, is
  // the default), and k-best lists.
  const Oracle max_rule_tight = CpuPrunedOracle(K::kMaxRule, "tight");
  rows.push_back({"cuda_pruned_max_rule_tight", "default", true, "cuda/pruned-max-rule",
                  CudaMaxRule(PrunedMaxRule("tight")), max_rule_tight, kMaxRuleOnDevice, 1,
                  kSplit});
  struct PrunedVariant {
    std::string name;
    int masked_dispatch, pruning_kernels;
  };
  for (const PrunedVariant& v :
       {PrunedVariant{"dispatch-1", 1, 0}, PrunedVariant{"dispatch-2", 2, 0},
        PrunedVariant{"kernels-1", 0, 1}, PrunedVariant{"kernels-3", 0, 3},
        PrunedVariant{"kernels-4", 0, 4}, PrunedVariant{"kernels-5", 0, 5}}) {
    CudaMaxRuleOptions options = PrunedMaxRule("tight");
    options.masked_dispatch = v.masked_dispatch;
    options.pruning_kernels = v.pruning_kernels;
    rows.push_back({"cuda_pruned_max_rule_tight_" + Id(v.name), v.name, true,
                    "cuda/pruned-max-rule", CudaMaxRule(options), max_rule_tight, kMaxRuleOnDevice,
                    1, kSplit});
  }
  for (const std::string pruning : {"fast", "safe"}) {
    rows.push_back({"cuda_pruned_max_rule_" + pruning, "default", true, "cuda/pruned-max-rule",
                    CudaMaxRule(PrunedMaxRule(pruning)), CpuPrunedOracle(K::kMaxRule, pruning),
                    kMaxRuleOnDevice, 1, kPruned});
  }
  rows.push_back({"cuda_pruned_max_rule_exact", "default", true, "cuda/pruned-max-rule",
                  CudaMaxRule(PrunedMaxRule("exact")), ReferenceMaxRuleOracle(), kMaxRuleOnDevice,
                  1, kPruned});
  rows.push_back({"cuda_pruned_max_rule_fast_unsplit",
                  "default",
                  true,
                  "cuda/pruned-max-rule",
                  CudaMaxRule(PrunedMaxRule("fast")),
                  ReferenceMaxRuleOracle(),
                  kMaxRuleOnDevice,
                  1,
                  {"unsplit"}});
  for (int kernels_variant : {0, 3}) {
    const std::string v = kernels_variant ? "kernels-3" : "default";
    CudaMaxRuleOptions options = PrunedMaxRule("tight");
    options.decoder = {.kbest = 3};
    options.pruning_kernels = kernels_variant;
    rows.push_back({"cuda_pruned_max_rule_kbest3_tight" + (kernels_variant ? "_" + Id(v) : ""), v,
                    true, "cuda/pruned-max-rule", CudaMaxRule(options),
                    CpuPrunedOracle(K::kMaxRule, "tight", {.kbest = 3}),
                    WithKBest(kMaxRuleOnDevice, kDeviceSumTolerance), 3, kSplit});
  }
  return rows;
}

const std::vector<Row>& Rows() {
  static const std::vector<Row>* rows = new std::vector<Row>(MakeRows());
  return *rows;
}

struct Case {
  const Row* row;
  std::string fixture;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.row->name << " on " << c.fixture; }

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const Row& row : Rows())
    for (const std::string& fixture : row.fixtures) cases.push_back({&row, fixture});
  return cases;
}

class BackendConformanceTest : public ::testing::TestWithParam<Case> {};

TEST_P(BackendConformanceTest, AgreesWithItsOracle) {
  const Row& row = *GetParam().row;
  if (row.cuda) CKY_SKIP_WITHOUT_CUDA_DEVICE();
  if (!TestVariantSelected(row.variant)) GTEST_SKIP() << row.variant << " not selected";
  std::string skip;
  const TestFixture* fixture = FindTestFixture(GetParam().fixture, &skip);
  if (!fixture) GTEST_SKIP() << skip;
  ASSERT_EQ(fixture->broken, "") << fixture->name;
  const TestGrammar& grammar = *fixture->grammar;
  const Sentences& sentences = fixture->sentences;

  const std::vector<ParseOutcome>& expected = OracleOutcomes(*fixture, row.oracle);
  ASSERT_EQ(expected.size(), sentences.size());
  auto backend = row.make(grammar.grammar());
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  EXPECT_EQ((*backend)->name(), row.backend_name);
  const std::vector<ParseOutcome> actual = ParseWith(grammar, std::move(*backend), sentences);
  const std::string what = row.name + " on " + fixture->name;
  const int parsed = ExpectSameOutcomes(expected, actual, row.compare, what, sentences);
  EXPECT_GE(parsed, fixture->min_parsed) << what << ": the comparison needs sentences with a parse";
  for (size_t i : fixture->must_parse) {
    EXPECT_EQ(expected[i].status, ParseStatus::kOk) << what << ", sentence " << i << " has none";
  }

  int full_lists = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const ParseOutcome& o = actual[i];
    const std::string at = what + ", sentence " + std::to_string(i);
    if (sentences[i].empty()) {
      EXPECT_EQ(o.status, ParseStatus::kNoParse) << at;
    }
    if (row.cuda && fixture->all_on_device) {
      EXPECT_EQ(o.message, "") << at;
    }
    if (o.status != ParseStatus::kOk) continue;
    // A k-best list starts with the best tree; every tree spans the sentence.
    if (row.kbest == 1) {
      EXPECT_TRUE(o.kbest.empty()) << at;
      continue;
    }
    ASSERT_FALSE(o.kbest.empty()) << at;
    EXPECT_LE(o.kbest.size(), size_t(row.kbest)) << at;
    EXPECT_EQ(ToBracketString(o.kbest[0].tree), ToBracketString(o.tree)) << at;
    for (const ScoredTree& t : o.kbest) EXPECT_EQ(Leaves(t.tree), sentences[i]) << at;
    full_lists += o.kbest.size() == size_t(row.kbest);
  }
  if (row.kbest > 1) {
    EXPECT_GE(full_lists, fixture->min_full_kbest_lists) << what;
  }
  // The max-rule oracles: each posterior is at most 1 (random grammars are not normalized, so P(w)
  // may exceed 1), and the tree is rooted at ROOT. Pruned ones too: their charts are those of the
  // allowed items (parser/inside_outside_cpu.h).
  if (row.compare.likelihood) {
    for (const ParseOutcome& o : expected) {
      if (o.status != ParseStatus::kOk) continue;
      EXPECT_LE(o.log_score, 1e-9) << row.oracle.key << " on " << fixture->name;
      EXPECT_EQ(o.tree.label, "ROOT") << row.oracle.key << " on " << fixture->name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, BackendConformanceTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.row->name + "__" + info.param.fixture;
                         });

// Every fixture a row names exists.
TEST(BackendConformanceTableTest, RowsNameKnownFixturesAndDistinctTests) {
  const std::vector<std::string> names = TestFixtureNames();
  std::set<std::string> tests;
  for (const Case& c : Cases()) {
    EXPECT_NE(std::find(names.begin(), names.end(), c.fixture), names.end()) << c.fixture;
    EXPECT_TRUE(tests.insert(c.row->name + "__" + c.fixture).second) << c.row->name;
  }
  EXPECT_GT(tests.size(), CudaKernelNames().size());
}

}  // namespace
}  // namespace cky
