#include "parser/viterbi_cpu.h"

#include <algorithm>

#include "parser/child_pair_runs.h"

namespace cky {

CpuViterbi::CpuViterbi(const Grammar& g, AdditionOrder order) : grammar_(g), order_(order) {
  ChildPairRuns runs(g);
  for (int32_t r : runs.order) {
    parent_.push_back(g.binary_parent[r]);
    log_prob_.push_back(g.binary_log_prob[r]);
  }
  left_begin_ = std::move(runs.left_pair_begin);
  pair_right_ = std::move(runs.pair_right);
  pair_begin_ = std::move(runs.pair_begin);
}

void CpuViterbi::Inside(const LexicalScores& lexical, const ItemMask* mask, Chart* post, Chart* pre,
                        AdditionOrder order) const {
  const Grammar& g = grammar_;
  const int32_t n = lexical.length;
  const int32_t states = g.num_states();
  *post = Chart(n, states);
  if (pre) *pre = Chart(n, states);
  std::vector<double> below(states);
  std::vector<std::vector<int32_t>> present(Chart::NumCells(n));
  for (int32_t span = 1; span <= n; ++span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      const int32_t end = start + span;
      const int64_t index = post->CellIndex(start, end);
      const uint8_t* allowed = mask ? mask->cell(index) : nullptr;
      std::fill(below.begin(), below.end(), kNegInf);
      if (span == 1) {
        const double* word = lexical.word(start);
        for (int32_t s = 0; s < states; ++s) {
          if (!allowed || allowed[s]) below[s] = word[s];
        }
      } else {
        for (int32_t split = start + 1; split < end; ++split) {
          const double* left = post->cell(start, split);
          const double* right = post->cell(split, end);
          for (int32_t l : present[post->CellIndex(start, split)]) {
            const double left_score = left[l];
            for (int32_t pair = left_begin_[l]; pair < left_begin_[l + 1]; ++pair) {
              const double right_score = right[pair_right_[pair]];
              if (right_score == kNegInf) continue;
              // Parents not allowed are scored too and cleared below: no test in this loop.
              if (order == AdditionOrder::kPairFirst) {
                const double children = left_score + right_score;
                for (int32_t k = pair_begin_[pair]; k < pair_begin_[pair + 1]; ++k) {
                  double& best = below[parent_[k]];
                  best = std::max(best, log_prob_[k] + children);
                }
                continue;
              }
              for (int32_t k = pair_begin_[pair]; k < pair_begin_[pair + 1]; ++k) {
                // The reference's order of additions, so that unpruned charts are bit-identical.
                const double score = log_prob_[k] + left_score + right_score;
                double& best = below[parent_[k]];
                best = std::max(best, score);
              }
            }
          }
        }
        if (allowed) {
          for (int32_t s = 0; s < states; ++s) {
            if (!allowed[s]) below[s] = kNegInf;
          }
        }
      }
      double* out = post->cell(start, end);
      for (int32_t a = 0; a < states; ++a) {
        if (allowed && !allowed[a]) continue;  // stays -infinity
        double best = below[a];
        for (int32_t u = g.unary_parent_begin[a]; u < g.unary_parent_begin[a + 1]; ++u) {
          const double score = g.unary_log_prob[u] + below[g.unary_child[u]];
          if (score > best) best = score;
        }
        out[a] = best;
      }
      if (pre) std::copy(below.begin(), below.end(), pre->cell(start, end));
      PresentLeftStates(out, kNegInf, left_begin_, &present[index]);
    }
  }
}

void CpuViterbi::MaxMarginals(const Chart& post, const Chart& pre, std::vector<double>* mm) const {
  const Grammar& g = grammar_;
  const int32_t n = post.length();
  const int32_t states = g.num_states();
  const double best = post.score(0, n, Grammar::kRootState);
  Chart out_post(n, states), out_pre(n, states);
  out_post.cell(0, n)[Grammar::kRootState] = 0;
  std::vector<std::vector<int32_t>> present(Chart::NumCells(n));
  for (int32_t span = 1; span < n; ++span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      PresentLeftStates(post.cell(start, start + span), kNegInf, left_begin_,
                        &present[post.CellIndex(start, start + span)]);
    }
  }
  mm->assign(post.data().size(), kNegInf);
  std::vector<double> down(states);
  for (int32_t span = n; span >= 1; --span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      const int32_t end = start + span;
      const double* in_post = post.cell(start, end);
      const double* in_pre = pre.cell(start, end);
      const double* above = out_post.cell(start, end);
      double* below = out_pre.cell(start, end);
      // The unary layer: the node below is read as is (identity) or under a closed unary.
      for (int32_t c = 0; c < states; ++c) below[c] = in_pre[c] > kNegInf ? above[c] : kNegInf;
      for (int32_t a = 0; a < states; ++a) {
        if (above[a] == kNegInf || in_post[a] == kNegInf) continue;
        for (int32_t u = g.unary_parent_begin[a]; u < g.unary_parent_begin[a + 1]; ++u) {
          const int32_t c = g.unary_child[u];
          if (in_pre[c] == kNegInf) continue;
          const double score = above[a] + g.unary_log_prob[u];
          if (score > below[c]) below[c] = score;
        }
      }
      double* marginal = mm->data() + post.CellIndex(start, end) * states;
      for (int32_t s = 0; s < states; ++s) {
        const double m = std::max(in_post[s] + above[s], in_pre[s] + below[s]);
        if (m > kNegInf) marginal[s] = m - best;
      }
      if (span == 1) continue;
      // A parent's outside score below its unary layer where it has an inside one, else
      // -infinity: a rule into it then adds -infinity, which no maximum takes, so the rule loop
      // needs no test.
      for (int32_t s = 0; s < states; ++s) down[s] = in_pre[s] > kNegInf ? below[s] : kNegInf;
      for (int32_t split = start + 1; split < end; ++split) {
        const double* left = post.cell(start, split);
        const double* right = post.cell(split, end);
        double* left_out = out_post.cell(start, split);
        double* right_out = out_post.cell(split, end);
        for (int32_t l : present[post.CellIndex(start, split)]) {
          const double left_score = left[l];
          double left_best = left_out[l];  // in a register across the rules of l
          for (int32_t pair = left_begin_[l]; pair < left_begin_[l + 1]; ++pair) {
            const int32_t r = pair_right_[pair];
            const double right_score = right[r];
            if (right_score == kNegInf) continue;
            double right_best = right_out[r];
            if (order_ == AdditionOrder::kPairFirst) {
              for (int32_t k = pair_begin_[pair]; k < pair_begin_[pair + 1]; ++k) {
                const double above = down[parent_[k]];
                left_best = std::max(left_best, log_prob_[k] + (above + right_score));
                right_best = std::max(right_best, log_prob_[k] + (above + left_score));
              }
            } else {
              for (int32_t k = pair_begin_[pair]; k < pair_begin_[pair + 1]; ++k) {
                const double through = down[parent_[k]] + log_prob_[k];
                left_best = std::max(left_best, through + right_score);
                right_best = std::max(right_best, through + left_score);
              }
            }
            right_out[r] = right_best;
          }
          left_out[l] = left_best;
        }
      }
    }
  }
}

}  // namespace cky
