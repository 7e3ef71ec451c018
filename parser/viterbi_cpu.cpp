#include "parser/viterbi_cpu.h"

#include <algorithm>
#include <cmath>

#include "parser/child_pair_runs.h"

namespace cky {

CpuViterbi::CpuViterbi(const Grammar& g) : grammar_(g) {
  ChildPairRuns runs(g);
  parent_.reserve(runs.order.size());
  log_prob_.reserve(runs.order.size());
  for (int32_t r : runs.order) {
    parent_.push_back(g.binary_parent[r]);
    log_prob_.push_back(g.binary_log_prob[r]);
  }
  left_pair_begin_ = std::move(runs.left_pair_begin);
  pair_right_ = std::move(runs.pair_right);
  pair_begin_ = std::move(runs.pair_begin);
}

void CpuViterbi::Inside(const LexicalScores& lexical, Chart* chart) const {
  const Grammar& g = grammar_;
  const int32_t n = lexical.length;
  const int32_t num_states = g.num_states();
  *chart = Chart(n, num_states);
  std::vector<double> pre(num_states);
  // Per cell, its states with a finite score that are some rule's left child: made once when the
  // cell is complete, read at every split point it is the left child of.
  std::vector<std::vector<int32_t>> active(Chart::NumCells(n));
  for (int32_t span = 1; span <= n; ++span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      const int32_t end = start + span;
      if (span == 1) {
        std::copy(lexical.word(start), lexical.word(start) + num_states, pre.begin());
      } else {
        std::fill(pre.begin(), pre.end(), kNegInf);
        for (int32_t split = start + 1; split < end; ++split) {
          const double* left = chart->cell(start, split);
          const double* right = chart->cell(split, end);
          for (int32_t l : active[chart->CellIndex(start, split)]) {
            const double left_score = left[l];
            for (int32_t p = left_pair_begin_[l]; p < left_pair_begin_[l + 1]; ++p) {
              const double right_score = right[pair_right_[p]];
              if (right_score == kNegInf) continue;
              for (int32_t k = pair_begin_[p]; k < pair_begin_[p + 1]; ++k) {
                const double score = log_prob_[k] + left_score + right_score;
                double& best = pre[parent_[k]];
                best = std::max(best, score);
              }
            }
          }
        }
      }
      double* out = chart->cell(start, end);
      for (int32_t a = 0; a < num_states; ++a) {
        double best = pre[a];
        for (int32_t u = g.unary_parent_begin[a]; u < g.unary_parent_begin[a + 1]; ++u) {
          const double score = g.unary_log_prob[u] + pre[g.unary_child[u]];
          if (score > best) best = score;
        }
        out[a] = best;
      }
      PresentLeftStates(out, kNegInf, left_pair_begin_, &active[chart->CellIndex(start, end)]);
    }
  }
}

}  // namespace cky
