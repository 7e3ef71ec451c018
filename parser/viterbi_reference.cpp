#include "parser/viterbi_reference.h"

namespace cky {

void ReferenceViterbiInside(const Grammar& g, const LexicalScores& lexical, Chart* chart,
                            Backpointers* bp) {
  const int32_t n = lexical.length;
  const int32_t num_states = g.num_states();
  *chart = Chart(n, num_states);
  if (bp) {
    const size_t size = static_cast<size_t>(Chart::NumCells(n)) * num_states;
    bp->binary_rule.assign(size, -1);
    bp->split.assign(size, -1);
    bp->unary_rule.assign(size, -1);
  }
  std::vector<double> pre(num_states);
  for (int32_t span = 1; span <= n; ++span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      const int32_t end = start + span;
      const int64_t cell_offset = chart->CellIndex(start, end) * num_states;
      if (span == 1) {
        for (int32_t a = 0; a < num_states; ++a) pre[a] = lexical.word(start)[a];
      } else {
        for (int32_t a = 0; a < num_states; ++a) {
          double best = kNegInf;
          for (int32_t r = g.binary_parent_begin[a]; r < g.binary_parent_begin[a + 1]; ++r) {
            for (int32_t split = start + 1; split < end; ++split) {
              const double score = g.binary_log_prob[r] +
                                   chart->score(start, split, g.binary_left[r]) +
                                   chart->score(split, end, g.binary_right[r]);
              if (score > best) {
                best = score;
                if (bp) {
                  bp->binary_rule[cell_offset + a] = r;
                  bp->split[cell_offset + a] = split;
                }
              }
            }
          }
          pre[a] = best;
        }
      }
      double* out = chart->cell(start, end);
      for (int32_t a = 0; a < num_states; ++a) {
        double best = pre[a];
        for (int32_t u = g.unary_parent_begin[a]; u < g.unary_parent_begin[a + 1]; ++u) {
          const double score = g.unary_log_prob[u] + pre[g.unary_child[u]];
          if (score > best) {
            best = score;
            if (bp) bp->unary_rule[cell_offset + a] = u;
          }
        }
        out[a] = best;
      }
    }
  }
}

}  // namespace cky
