// Binary rules in runs of one (left child, right child) pair, left child by left child: the layout
// the CPU passes (CpuViterbi, the sum-product rules) iterate, so that a right child
// absent from its cell skips all the rules of its pair with one test.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar_io/grammar.h"

namespace cky {

struct ChildPairRuns {
  explicit ChildPairRuns(const Grammar& grammar);
  // The grammar's binary rule indices, stably sorted by (left, right): position k holds rule
  // order[k]. Callers lay their per-rule arrays out in this order.
  std::vector<int32_t> order;
  // Left child l's pairs are [left_pair_begin[l], left_pair_begin[l + 1]) (num_states + 1
  // entries); pair p has right child pair_right[p] and the positions [pair_begin[p],
  // pair_begin[p + 1]) of `order` (one entry more than there are pairs).
  std::vector<int32_t> left_pair_begin, pair_right, pair_begin;
};

// The states of a chart cell whose score is above `absent` (-infinity for max-plus log scores,
// 0 for scaled probabilities) that are the left child of some rule (left_pair_begin as above),
// ascending, into *present: the left children the CPU passes visit at every split point the cell
// is the left child of.
void PresentLeftStates(const double* cell, double absent,
                       const std::vector<int32_t>& left_pair_begin, std::vector<int32_t>* present);

}  // namespace cky
