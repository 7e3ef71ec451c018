// What is specific to the CUDA max-rule backend (parser/cuda_max_rule_backend.h); its outcomes
// against the CPU reference (every variant, k-best lists, batches of 3 sentences) are rows of
// parser/backend_conformance_test.cpp. Here, value by value against the CPU reference
// (parser/inside_outside_cpu.h, parser/max_rule.h), for every kernel variant: every inside value,
// every outside value of a state with a positive inside, log P(w), and every max-rule array entry,
// within the tolerance of cuda/inside_outside/inside_outside.h (backend_test_support.h's
// kDeviceSumTolerance); on the random grammars, symbols of 35 substates, a parent with more rules
// than a block, the batch-splitting fixture and small_sm2.gr and wsj_1 with GUM sentences
// (backend_test_support.h's fixtures). And the CPU fallback for a sentence over the batch budget.
// Skips without a CUDA device; the real-grammar fixtures without the shared data.
#include "parser/cuda_max_rule_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "common/test_variants.h"
#include "parser/backend_test_support.h"
#include "parser/cpu_backend.h"
#include "parser/cuda_grammar_view.h"

namespace cky {
namespace {

// Chart values compared as log scores where the reference's exceeds this share of its cell's
// largest value (below it, both must be tiny).
constexpr double kTiny = 1e-250;

bool Close(double x, double y) { return kDeviceSumTolerance.Holds(x, y); }

struct MaxDiff {
  double chart = 0, likelihood = 0, max_rule = 0;
  void Note(double* slot, double x, double y) {
    if (std::isfinite(x) && std::isfinite(y)) *slot = std::max(*slot, std::abs(x - y));
  }
};

// `only_where`: compare only states whose value there is positive (the outside of a state with a
// zero inside is unspecified, parser/inside_outside_cpu.h).
void CompareChart(const ScaledChart& expected, const ScaledChart& actual,
                  const ScaledChart* only_where, const std::string& what, MaxDiff* diff,
                  int* failures) {
  ASSERT_EQ(expected.values.size(), actual.values.size()) << what;
  const int32_t n = expected.length;
  for (int32_t span = 1; span <= n; ++span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      for (int32_t s = 0; s < expected.num_states; ++s) {
        if (only_where && !(only_where->cell(start, start + span)[s] > 0)) continue;
        const double e = expected.cell(start, start + span)[s];
        const double a = actual.cell(start, start + span)[s];
        const double le = expected.LogScore(start, start + span, s);
        const double la = actual.LogScore(start, start + span, s);
        bool ok;
        if (e > kTiny) {
          ok = Close(le, la);
          diff->Note(&diff->chart, le, la);
        } else {
          ok = a <= 1e-240;
        }
        if (!ok && ++*failures <= 5) {
          ADD_FAILURE() << what << " [" << start << "," << start + span << ") state " << s
                        << ": reference " << e << " (log " << le << "), device " << a << " (log "
                        << la << ")";
        }
      }
    }
  }
}

void CompareMaxRule(const MaxRuleChart& e, const MaxRuleChart& a, const std::string& what,
                    MaxDiff* diff, int* failures) {
  ASSERT_EQ(e.score.size(), a.score.size()) << what;
  for (size_t i = 0; i < e.score.size(); ++i) {
    diff->Note(&diff->max_rule, e.score[i], a.score[i]);
    const bool ok = Close(e.score[i], a.score[i]) && e.split[i] == a.split[i] &&
                    e.left[i] == a.left[i] && e.right[i] == a.right[i] &&
                    e.unary_child[i] == a.unary_child[i];
    if (!ok && ++*failures <= 5) {
      ADD_FAILURE() << what << " max-rule entry " << i << ": reference " << e.score[i] << " split "
                    << e.split[i] << " " << e.left[i] << " " << e.right[i] << " unary "
                    << e.unary_child[i] << "; device " << a.score[i] << " split " << a.split[i]
                    << " " << a.left[i] << " " << a.right[i] << " unary " << a.unary_child[i];
    }
  }
}

// One fixture a test, so that each runs in one process under racecheck within a device command's
// limit.
class CudaMaxRuleChartsTest : public ::testing::TestWithParam<std::string> {};

// Charts, log P(w) and max-rule arrays of every sentence of the fixture, device against reference,
// for every variant.
TEST_P(CudaMaxRuleChartsTest, MatchTheReference) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  std::string skip;
  const TestFixture* f = FindTestFixture(GetParam(), &skip);
  if (!f) GTEST_SKIP() << skip;
  ASSERT_EQ(f->broken, "");
  const Grammar& g = f->grammar->grammar();
  const std::vector<SentenceInput> inputs = ScoredInputs(*f->grammar, f->sentences);
  std::vector<const LexicalScores*> nonempty;
  std::vector<size_t> index;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].words.empty()) nonempty.push_back(&inputs[i].lexical), index.push_back(i);
  }
  // The reference once per sentence.
  std::vector<InsideOutsideCharts> expected_charts(nonempty.size());
  std::vector<MaxRuleChart> expected_maxc(nonempty.size());
  for (size_t k = 0; k < nonempty.size(); ++k) {
    ReferenceInsideOutside(g, *nonempty[k], &expected_charts[k]);
    if (expected_charts[k].log_likelihood > kNegInf)
      ReferenceMaxRuleChart(g, *nonempty[k], expected_charts[k], &expected_maxc[k]);
  }
  // Every kernel variant; CKY_TEST_VARIANTS (common/test_variants.h) may keep only some of them.
  for (const MaxRuleKernelVariant& variant : MaxRuleKernelVariants()) {
    if (!TestVariantSelected(variant.name)) continue;
    cuda::DeviceInsideOutsideOptions options{.cells_per_group = variant.cells_per_group};
    if (variant.pair_sum_kernel > 0) options.pair_sum_kernel = variant.pair_sum_kernel;
    if (variant.max_rule_kernel > 0) options.max_rule_kernel = variant.max_rule_kernel;
    auto device = CudaInsideOutsideBatch(g, nonempty, options);
    ASSERT_TRUE(device.ok()) << device.status().message();
    MaxDiff diff;
    int failures = 0, parsed = 0;
    for (size_t k = 0; k < nonempty.size(); ++k) {
      const std::string where = f->name + " " + variant.name + " sentence " +
                                std::to_string(index[k]) + " (" +
                                std::to_string(nonempty[k]->length) + " words)";
      const InsideOutsideCharts& expected = expected_charts[k];
      const CudaInsideOutsideResult& actual = (*device)[k];
      EXPECT_TRUE(Close(expected.log_likelihood, actual.charts.log_likelihood))
          << where << ": log P(w) " << expected.log_likelihood << " vs "
          << actual.charts.log_likelihood;
      diff.Note(&diff.likelihood, expected.log_likelihood, actual.charts.log_likelihood);
      CompareChart(expected.inside, actual.charts.inside, nullptr, where + " inside", &diff,
                   &failures);
      CompareChart(expected.outside, actual.charts.outside, &expected.inside, where + " outside",
                   &diff, &failures);
      if (expected.log_likelihood > kNegInf) {
        ++parsed;
        CompareMaxRule(expected_maxc[k], actual.maxc, where, &diff, &failures);
      }
    }
    EXPECT_GT(parsed, 0) << f->name << ": the comparison needs sentences with a parse";
    std::printf(
        "[ max diff ] %s %s: log-score chart %.3g, log P(w) %.3g, max-rule %.3g (%d parsed)\n",
        f->name.c_str(), variant.name.c_str(), diff.chart, diff.likelihood, diff.max_rule, parsed);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaMaxRuleChartsTest,
                         ::testing::Values("random_seed1", "random_seed2", "random_seed3",
                                           "many_substates", "big_parent", "splits", "small_sm2",
                                           "wsj_1"),
                         [](const auto& info) { return info.param; });

// A budget of two 12-word sentences (fixture splits): the 30-word sentence 5 never fits and is
// parsed on the CPU. (Batches of 3 sentences are a conformance row.)
TEST(CudaMaxRuleTest, FallsBackToCpuForSentencesThatNeverFit) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  std::string skip;
  const TestFixture* f = FindTestFixture("splits", &skip);
  ASSERT_TRUE(f) << skip;
  const Grammar& g = f->grammar->grammar();
  ASSERT_EQ(f->sentences[5].size(), 30u);
  std::string error;
  auto device = cuda::DeviceInsideOutside::Create(CudaGrammarView(g), {}, &error);
  ASSERT_TRUE(device) << error;
  EXPECT_GE(device->MaxLength(), 200);  // sentences up to 200 words run on the device
  CudaMaxRuleOptions small{
      .device = {.max_batch_bytes = 2 * device->BytesForSentence(12), .max_batch_sentences = 1000}};
  auto backend = MakeCudaMaxRuleBackend(g, small);
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  const auto actual = ParseWith(*f->grammar, std::move(*backend), f->sentences);
  ExpectSameOutcomes(OracleOutcomes(*f, ReferenceMaxRuleOracle()), actual,
                     {.score = kDeviceSumTolerance, .likelihood = true}, "small budget",
                     f->sentences);
  ASSERT_EQ(actual[5].status, ParseStatus::kOk) << actual[5].message;
  EXPECT_NE(actual[5].message.find("parsed on the CPU"), std::string::npos) << actual[5].message;
}

}  // namespace
}  // namespace cky
