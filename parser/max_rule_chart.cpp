#include "parser/max_rule_chart.h"

namespace cky {

void MaxRuleChart::Reset(int32_t sentence_length, int32_t symbols) {
  length = sentence_length;
  num_symbols = symbols;
  const size_t n = size_t(Chart::NumCells(sentence_length)) * symbols;
  score.assign(n, kNegInf);
  score_before_unary.clear();
  split.assign(n, -1);
  left.assign(n, -1);
  right.assign(n, -1);
  unary_child.assign(n, -1);
}

int64_t MaxRuleChart::Index(int32_t start, int32_t end, int32_t symbol) const {
  const int32_t span = end - start;
  const int64_t cell = int64_t(span - 1) * (2 * length - span + 2) / 2 + start;
  return cell * num_symbols + symbol;
}

}  // namespace cky
