// The fast CPU inside pass: the reference's recurrence, reorganised so that only child states
// with a finite score are visited. Rules are grouped by left child; for each split point, each
// left-child state present in the left cell walks its rules and reads the right cell. Additions
// happen in the reference's order, (rule + left) + right, so the chart is bit-identical to
// ReferenceViterbiInside's.
#pragma once

#include <vector>

#include "grammar_io/grammar.h"
#include "parser/chart.h"
#include "parser/viterbi_reference.h"

namespace cky {

class CpuViterbi {
 public:
  explicit CpuViterbi(const Grammar& grammar);
  void Inside(const LexicalScores& lexical, Chart* chart) const;

 private:
  const Grammar& grammar_;
  // The rules in runs of one (left, right) pair (parser/child_pair_runs.h), so that an absent
  // right child skips its run: left child l's pairs are [left_pair_begin_[l], left_pair_begin_[l +
  // 1]), pair p has right child pair_right_[p] and the rules [pair_begin_[p], pair_begin_[p + 1])
  // of parent_ and log_prob_. (A maximum does not depend on the order of its terms: the chart is
  // the same in any rule order.)
  std::vector<int32_t> left_pair_begin_, pair_right_, pair_begin_;
  std::vector<int32_t> parent_;
  std::vector<double> log_prob_;
};

}  // namespace cky
