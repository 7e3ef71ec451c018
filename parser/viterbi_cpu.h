// The fast CPU Viterbi passes: the reference's recurrence (parser/viterbi_reference.h),
// reorganised so that only child states with a finite score are visited, optionally restricted to
// allowed items (coarse-to-fine pruning, parser/coarse_to_fine.h), and the max-marginals the
// pruner thresholds. Rules are walked in runs of one (left, right) child pair
// (parser/child_pair_runs.h): for each split point, each left-child state present in the left cell
// walks its pairs, and an absent right child skips its run. Additions happen in the reference's
// order, (rule + left) + right, so an unmasked chart is bit-identical to ReferenceViterbiInside's.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar_io/grammar.h"
#include "parser/chart.h"
#include "parser/viterbi_reference.h"

namespace cky {

// Per chart cell (Chart's order) and state of some grammar: 1 where the item may be used.
struct ItemMask {
  int32_t length = 0;
  int32_t num_states = 0;
  std::vector<uint8_t> allowed;
  const uint8_t* cell(int64_t cell_index) const { return allowed.data() + cell_index * num_states; }
};

// The order of a binary candidate's additions. A maximum is exact whatever its terms' order, but
// a sum of three doubles is not, so a device pass that must give these charts bit for bit adds in
// the same order.
enum class AdditionOrder {
  kRuleFirst,  // (rule + left) + right, as the reference (exact Viterbi decoding)
  // rule + (left + right) inside, rule + (outside + sibling) in the max-marginals: the order of
  // the device's pair-factored pre-parse passes, which take each child pair's sum first
  // (cuda/pruning/pruned_viterbi.h, pruning kernels 4 to 6)
  kPairFirst,
};

class CpuViterbi {
 public:
  explicit CpuViterbi(const Grammar& grammar, AdditionOrder order = AdditionOrder::kRuleFirst);
  // Fills `post` (scores after each cell's unary layer, -infinity for items not allowed or not
  // derivable) and, when `pre` is non-null, the scores below the unary layer. `mask` null: every
  // item allowed.
  void Inside(const LexicalScores& lexical, const ItemMask* mask, Chart* post, Chart* pre) const {
    Inside(lexical, mask, post, pre, order_);
  }
  // The same in another order of additions than the constructor's (a pruned fine pass adds in its
  // pruner's order: CoarseToFinePruner::order()).
  void Inside(const LexicalScores& lexical, const ItemMask* mask, Chart* post, Chart* pre,
              AdditionOrder order) const;
  void Inside(const LexicalScores& lexical, Chart* chart) const {
    Inside(lexical, nullptr, chart, nullptr);
  }
  // Max-marginals of every item from the inside charts, into `mm` (Chart layout, -infinity where
  // no complete derivation uses the item): the log-score of the best complete derivation that
  // uses the item minus that of the best derivation overall,
  //   mm(item) = max(in_post + out_post, in_pre + out_pre) - best.
  // Requires a finite root score.
  void MaxMarginals(const Chart& post, const Chart& pre, std::vector<double>* mm) const;
  const Grammar& grammar() const { return grammar_; }

 private:
  const Grammar& grammar_;
  AdditionOrder order_;
  // Binary rules grouped by left child state, then by right child: left child l's (l, r) pairs are
  // [left_begin_[l], left_begin_[l + 1]); pair i has right child pair_right_[i] and the rules
  // [pair_begin_[i], pair_begin_[i + 1]) (parent_, log_prob_). A right child absent from its cell
  // then skips all its parents with one test.
  std::vector<int32_t> left_begin_;
  std::vector<int32_t> pair_right_, pair_begin_;
  std::vector<int32_t> parent_;
  std::vector<double> log_prob_;
};

}  // namespace cky
