// THE CPU REFERENCE for sum-product inside and outside scores over a split grammar: plain loops,
// double precision, never tuned. Every faster path (multi-threaded CPU, CUDA) is tested against it.
//
// The quantities are the Berkeley parser's for max-rule decoding (CoarseToFineMaxRuleParser's
// doConstrainedInsideScores / doConstrainedOutsideScores with viterbi = false, on an unpruned
// chart). Probabilities, not logs. For a span [start, end) and a state s:
//
//   pre(s)  = P(word | s)                                            one-word spans (the lexicon)
//           = sum_{s -> l r, start < split < end} p(s -> l r) in_l[start, split) in_r[split, end)
//   in(s)   = pre(s) + sum_{s -> c} p_sum(s -> c) pre(c)     one layer of closed sum unaries
//                                                            (Grammar::sum_unary_*)
//   outpost(ROOT_0 over the sentence) = 1, and for every other node the sum over binary parents
//   outpost(l) = sum_{p -> l r, split} outpre(p) p(p -> l r) in(r)   (and the mirror for r;
//                only where in(l) > 0 and in(r) > 0)
//   outpre(c) = outpost(c) + sum_{p -> c} p_sum(p -> c) outpost(p)
//
// A chart stores in(s) (the score parents read) and outpre(s) (the outside of the node below the
// unary layer, the one binary rules and the lexicon build). P(w) = in(ROOT_0 over the sentence).
// The posterior of a binary rule use is outpre(p) p(p -> l r) in(l) in(r) / P(w), of a closed
// unary outpre(p) p_sum(p -> c) in(c) / P(w) (Berkeley's formula), of a tag on a word
// outpre(t) P(word | t) / P(w); over each word the tag posteriors sum to 1.
//
// Scaling, so that 200-word sentences neither underflow nor overflow: each cell holds values in
// [0, 1] (its largest is 1) and one natural-log scale; the true score is value * exp(log_scale).
// Within a cell doubles keep ~700 nats of range, far more than any posterior that matters needs.
// Outside mass flows through a binary rule only where both children have a positive inside score,
// as in Berkeley's parser: a state with inside 0 gets outpost 0 (its outpre can still be positive
// through the unary layer, and Berkeley's unary posterior reads it).
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "grammar_io/grammar.h"
#include "parser/chart.h"
#include "parser/viterbi_reference.h"

namespace cky {

// Per-cell scaled probabilities of one sentence, cells in Chart's order (by span length, then
// start), num_states values per cell.
struct ScaledChart {
  int32_t length = 0;
  int32_t num_states = 0;
  std::vector<double> values;     // NumCells(length) * num_states
  std::vector<double> log_scale;  // NumCells(length); -infinity for a cell whose values are all 0

  void Reset(int32_t sentence_length, int32_t states);
  int64_t CellIndex(int32_t start, int32_t end) const;
  double* cell(int32_t start, int32_t end) {
    return values.data() + CellIndex(start, end) * num_states;
  }
  const double* cell(int32_t start, int32_t end) const {
    return values.data() + CellIndex(start, end) * num_states;
  }
  double scale(int32_t start, int32_t end) const { return log_scale[CellIndex(start, end)]; }
  // log(value * exp(scale)); -infinity for a zero.
  double LogScore(int32_t start, int32_t end, int32_t state) const {
    const double v = cell(start, end)[state];
    return v > 0 ? std::log(v) + scale(start, end) : kNegInf;
  }
};

struct InsideOutsideCharts {
  ScaledChart inside;               // in(s): after the cell's unary layer
  ScaledChart outside;              // outpre(s): outside of the node below the unary layer
  double log_likelihood = kNegInf;  // log P(w); -infinity when the grammar derives no tree
};

// Fills `charts` for one sentence. When the sentence has no parse, log_likelihood is -infinity and
// the outside chart is all zero.
void ReferenceInsideOutside(const Grammar& grammar, const LexicalScores& lexical,
                            InsideOutsideCharts* charts);

// The rules as the fast CPU path reads them: probabilities (not logs), binary rules grouped by left
// child state so that a left child of probability 0 skips all its rules, and each rule's base rule
// (parent, left, right symbols; for unaries parent, child) for max-rule sums.
struct SumProductRules {
  explicit SumProductRules(const Grammar& grammar);
  // Binary rules in runs of one (left, right) child pair (parser/child_pair_runs.h), so that an
  // absent right child skips its run with one test: left child l's pairs are [left_pair_begin[l],
  // left_pair_begin[l + 1]), pair p has right child pair_right[p] and the rules [pair_begin[p],
  // pair_begin[p + 1]) of parent, base and prob.
  std::vector<int32_t> left_pair_begin, pair_right, pair_begin;
  std::vector<int32_t> parent, base;
  std::vector<double> prob;
  struct BaseBinary {
    int32_t parent, left, right;
  };
  std::vector<BaseBinary> base_binaries;  // sorted by (parent, left, right)
  std::vector<double> unary_prob;         // Grammar::sum_unary_* order
  // The same unaries grouped by child state: child c's are unary_by_child[unary_child_begin[c] ..
  // unary_child_begin[c + 1]) (indices into Grammar::sum_unary_*, ascending parent).
  std::vector<int32_t> unary_child_begin, unary_by_child;
  std::vector<int32_t> unary_base;
  std::vector<std::pair<int32_t, int32_t>> base_unaries;  // (parent, child) symbols, sorted
};

// The multi-threaded CPU path's inside-outside for one sentence: the reference's quantities (equal
// up to the order of floating-point sums), skipping zero children. When `allowed` is given (per
// cell in Chart's order, num_states entries, 1 = usable: coarse-to-fine pruning), every other item
// has inside and outside 0, below and above the unary layer: the charts are those of the grammar
// restricted to the allowed items, and the max-rule pass's rule scores posteriors of the pruned
// chart's trees (at most 1).
void FastInsideOutside(const Grammar& grammar, const SumProductRules& rules,
                       const LexicalScores& lexical, InsideOutsideCharts* charts,
                       const std::vector<uint8_t>* allowed = nullptr);

// Pieces both CPU paths share. A one-word cell's pre-unary values exp(lexical - scale) into `pre`
// (num_states entries), returning the scale (the largest lexical log-score; -infinity: no tag).
double LexicalCell(const LexicalScores& lexical, int32_t word, std::vector<double>* pre);
// The unary layers: post = pre + sum_{p -> c} p_sum pre(c) (inside), below = above +
// sum_{p -> c} p_sum above(p) (outside), with `unary_prob` in Grammar::sum_unary_* order.
void InsideUnaryLayer(const Grammar& grammar, const std::vector<double>& unary_prob,
                      const std::vector<double>& pre, std::vector<double>* post);
void OutsideUnaryLayer(const Grammar& grammar, const std::vector<double>& unary_prob,
                       const std::vector<double>& above, std::vector<double>* below);

// Scaled-cell arithmetic shared by the CPU paths: divide a cell by its largest value and move it
// into the scale (all zeros: scale -infinity); add a scaled vector into a scaled accumulator.
void NormalizeScaledCell(double* values, int32_t n, double log_scale_in, double* log_scale_out);
void AddScaledCell(std::vector<double>& acc, double& acc_scale, const std::vector<double>& add,
                   double add_scale);

}  // namespace cky
