// The max-rule chart: per cell and base symbol, the best max-rule score and the choice that gave it
// (the Berkeley parser's maxc arrays, doConstrainedMaxCScores). parser/max_rule.h fills and decodes
// it, parser/kbest.h ranks the trees below it; both read it through this header only, so that the
// two modules depend on it and not on each other.
#pragma once

#include <cstdint>
#include <vector>

#include "parser/chart.h"

namespace cky {

// Berkeley's maxc arrays for one sentence: per cell (Chart's order) and base symbol.
struct MaxRuleChart {
  int32_t length = 0;
  int32_t num_symbols = 0;
  std::vector<double> score;  // after the unary layer; -infinity: no derivation
  // Before the unary layer (the binary or lexical best), for k-best decoding (parser/kbest.h).
  // Filled by the CPU max-rule passes; empty when the chart came from the CUDA device.
  std::vector<double> score_before_unary;
  std::vector<int32_t> split;        // the best binary's split point; -1: none (or one word)
  std::vector<int32_t> left;         // its left child symbol
  std::vector<int32_t> right;        // its right child symbol
  std::vector<int32_t> unary_child;  // the unary layer's choice; -1: the node is not a unary

  void Reset(int32_t sentence_length, int32_t symbols);
  int64_t Index(int32_t start, int32_t end, int32_t symbol) const;
  double root_score() const { return length > 0 ? score[Index(0, length, 0)] : kNegInf; }
};

}  // namespace cky
