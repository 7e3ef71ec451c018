#include "parser/child_pair_runs.h"

#include <gtest/gtest.h>

#include "parser/chart.h"
#include "parser/random_grammar.h"

namespace cky {
namespace {

// Every rule lies in exactly one run, and the run's left and right children are the rule's.
TEST(ChildPairRunsTest, RunsPartitionTheRulesByChildPair) {
  BerkeleyModel model = MakeRandomModel({.phrasal_symbols = 5, .substates = 3, .seed = 4});
  const Grammar& g = model.grammar;
  ChildPairRuns runs(g);
  ASSERT_EQ(runs.order.size(), size_t(g.num_binary_rules()));
  ASSERT_EQ(runs.left_pair_begin.size(), size_t(g.num_states() + 1));
  ASSERT_EQ(runs.pair_begin.size(), runs.pair_right.size() + 1);
  EXPECT_EQ(runs.left_pair_begin.back(), int32_t(runs.pair_right.size()));
  EXPECT_EQ(runs.pair_begin.back(), int32_t(runs.order.size()));
  std::vector<int> seen(g.num_binary_rules(), 0);
  for (int32_t l = 0; l < g.num_states(); ++l) {
    for (int32_t p = runs.left_pair_begin[l]; p < runs.left_pair_begin[l + 1]; ++p) {
      ASSERT_LT(runs.pair_begin[p], runs.pair_begin[p + 1]) << "an empty run";
      if (p > runs.left_pair_begin[l]) EXPECT_LT(runs.pair_right[p - 1], runs.pair_right[p]);
      for (int32_t k = runs.pair_begin[p]; k < runs.pair_begin[p + 1]; ++k) {
        const int32_t r = runs.order[k];
        EXPECT_EQ(g.binary_left[r], l);
        EXPECT_EQ(g.binary_right[r], runs.pair_right[p]);
        if (k > runs.pair_begin[p]) EXPECT_LT(runs.order[k - 1], r) << "the sort is stable";
        ++seen[r];
      }
    }
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

// Only states above `absent` that are some rule's left child are listed, in ascending order.
TEST(ChildPairRunsTest, PresentLeftStatesKeepsScoredLeftChildren) {
  // States 0 and 2 are left children (one pair each), state 1 is not, state 3 has no pairs.
  const std::vector<int32_t> left_pair_begin = {0, 1, 1, 2, 2};
  std::vector<int32_t> present = {7};  // replaced, not appended to
  const double log_scores[] = {-1.0, -2.0, kNegInf, -3.0};
  PresentLeftStates(log_scores, kNegInf, left_pair_begin, &present);
  EXPECT_EQ(present, std::vector<int32_t>({0}));
  const double probabilities[] = {0.0, 0.5, 0.25, 1.0};
  PresentLeftStates(probabilities, 0.0, left_pair_begin, &present);
  EXPECT_EQ(present, std::vector<int32_t>({2}));
}

}  // namespace
}  // namespace cky
