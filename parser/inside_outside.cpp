#include <algorithm>

#include "parser/inside_outside_cpu.h"

namespace cky {

void ScaledChart::Reset(int32_t sentence_length, int32_t states) {
  length = sentence_length;
  num_states = states;
  values.assign(size_t(Chart::NumCells(sentence_length)) * states, 0.0);
  log_scale.assign(size_t(Chart::NumCells(sentence_length)), kNegInf);
}

int64_t ScaledChart::CellIndex(int32_t start, int32_t end) const {
  const int32_t span = end - start;
  return int64_t(span - 1) * (2 * length - span + 2) / 2 + start;
}

double LexicalCell(const LexicalScores& lexical, int32_t word, std::vector<double>* pre) {
  const double* scores = lexical.word(word);
  const int32_t states = lexical.num_states;
  const double scale = *std::max_element(scores, scores + states);
  pre->assign(states, 0.0);
  if (scale > kNegInf) {
    for (int32_t s = 0; s < states; ++s) (*pre)[s] = std::exp(scores[s] - scale);
  }
  return scale;
}

void InsideUnaryLayer(const Grammar& g, const std::vector<double>& unary_prob,
                      const std::vector<double>& pre, std::vector<double>* post) {
  *post = pre;
  for (size_t u = 0; u < unary_prob.size(); ++u) {
    const double child = pre[g.sum_unary_child[u]];
    if (child != 0) (*post)[g.sum_unary_parent[u]] += unary_prob[u] * child;
  }
}

void OutsideUnaryLayer(const Grammar& g, const std::vector<double>& unary_prob,
                       const std::vector<double>& above, std::vector<double>* below) {
  *below = above;
  for (size_t u = 0; u < unary_prob.size(); ++u) {
    const double parent = above[g.sum_unary_parent[u]];
    if (parent != 0) (*below)[g.sum_unary_child[u]] += unary_prob[u] * parent;
  }
}

void NormalizeScaledCell(double* values, int32_t n, double log_scale_in, double* log_scale_out) {
  const double largest = *std::max_element(values, values + n);
  if (!(largest > 0) || !std::isfinite(log_scale_in)) {
    std::fill(values, values + n, 0.0);
    *log_scale_out = kNegInf;
    return;
  }
  for (int32_t s = 0; s < n; ++s) values[s] /= largest;
  *log_scale_out = log_scale_in + std::log(largest);
}

void AddScaledCell(std::vector<double>& acc, double& acc_scale, const std::vector<double>& add,
                   double add_scale) {
  if (add_scale == kNegInf) return;
  if (acc_scale == kNegInf || add_scale > acc_scale) {
    const double shrink = acc_scale == kNegInf ? 0.0 : std::exp(acc_scale - add_scale);
    for (size_t s = 0; s < acc.size(); ++s) acc[s] = acc[s] * shrink + add[s];
    acc_scale = add_scale;
  } else {
    const double shrink = std::exp(add_scale - acc_scale);
    for (size_t s = 0; s < acc.size(); ++s) acc[s] += add[s] * shrink;
  }
}

void ReferenceInsideOutside(const Grammar& g, const LexicalScores& lexical,
                            InsideOutsideCharts* charts) {
  const int32_t n = lexical.length;
  const int32_t states = g.num_states();
  ScaledChart& in = charts->inside;
  ScaledChart& out = charts->outside;
  in.Reset(n, states);
  out.Reset(n, states);
  charts->log_likelihood = kNegInf;
  if (n == 0) return;

  // Rule probabilities (the grammar stores logs).
  std::vector<double> binary_prob(g.num_binary_rules()), unary_prob(g.sum_unary_parent.size());
  for (int64_t r = 0; r < g.num_binary_rules(); ++r)
    binary_prob[r] = std::exp(g.binary_log_prob[r]);
  for (size_t u = 0; u < unary_prob.size(); ++u) unary_prob[u] = std::exp(g.sum_unary_log_prob[u]);

  std::vector<double> pre(states), post(states);
  // ---- inside, shortest spans first ----
  for (int32_t span = 1; span <= n; ++span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      const int32_t end = start + span;
      std::fill(pre.begin(), pre.end(), 0.0);
      double scale = kNegInf;
      if (span == 1) {
        scale = LexicalCell(lexical, start, &pre);
      } else {
        // The common scale of this cell's sums: the largest product of two child scales.
        for (int32_t split = start + 1; split < end; ++split) {
          scale = std::max(scale, in.scale(start, split) + in.scale(split, end));
        }
        if (scale > kNegInf) {
          for (int32_t split = start + 1; split < end; ++split) {
            const double factor = std::exp(in.scale(start, split) + in.scale(split, end) - scale);
            if (!(factor > 0)) continue;
            const double* left = in.cell(start, split);
            const double* right = in.cell(split, end);
            for (int64_t r = 0; r < g.num_binary_rules(); ++r) {
              const double l = left[g.binary_left[r]];
              const double rr = right[g.binary_right[r]];
              if (l == 0 || rr == 0) continue;
              pre[g.binary_parent[r]] += binary_prob[r] * l * rr * factor;
            }
          }
        }
      }
      // One layer of closed sum unaries over the pre-unary scores.
      InsideUnaryLayer(g, unary_prob, pre, &post);
      double* cell = in.cell(start, end);
      std::copy(post.begin(), post.end(), cell);
      NormalizeScaledCell(cell, states, scale, &in.log_scale[in.CellIndex(start, end)]);
    }
  }
  const double root = in.cell(0, n)[Grammar::kRootState];
  if (!(root > 0)) return;
  charts->log_likelihood = std::log(root) + in.scale(0, n);

  // ---- outside, longest spans first. Each cell first gathers outpost from its binary parents
  // (all longer, so already final), then adds the unary layer to get outpre. ----
  std::vector<std::vector<double>> outpost(Chart::NumCells(n), std::vector<double>());
  std::vector<double> outpost_scale(Chart::NumCells(n), kNegInf);
  auto gather = [&](int32_t start, int32_t end) -> std::vector<double>& {
    auto& v = outpost[in.CellIndex(start, end)];
    if (v.empty()) v.assign(states, 0.0);
    return v;
  };
  gather(0, n)[Grammar::kRootState] = 1.0;
  outpost_scale[in.CellIndex(0, n)] = 0.0;
  std::vector<double> to_left(states), to_right(states);
  for (int32_t span = n; span >= 1; --span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      const int32_t end = start + span;
      const int64_t index = in.CellIndex(start, end);
      std::vector<double>& above = gather(start, end);
      const double above_scale = outpost_scale[index];
      // outpre(c) = outpost(c) + sum_{p -> c} p_sum(p -> c) outpost(p)
      std::vector<double> below;
      OutsideUnaryLayer(g, unary_prob, above, &below);
      double* cell = out.cell(start, end);
      std::copy(below.begin(), below.end(), cell);
      NormalizeScaledCell(cell, states, above_scale, &out.log_scale[index]);
      outpost[index].clear();
      outpost[index].shrink_to_fit();
      if (span == 1 || out.log_scale[index] == kNegInf) continue;

      // Binary rules of this cell's pre-unary nodes send outside mass to both children.
      const double* parent_out = out.cell(start, end);
      for (int32_t split = start + 1; split < end; ++split) {
        const double left_scale = in.scale(start, split);
        const double right_scale = in.scale(split, end);
        if (left_scale == kNegInf || right_scale == kNegInf) continue;
        const double* left = in.cell(start, split);
        const double* right = in.cell(split, end);
        std::fill(to_left.begin(), to_left.end(), 0.0);
        std::fill(to_right.begin(), to_right.end(), 0.0);
        for (int64_t r = 0; r < g.num_binary_rules(); ++r) {
          const double o = parent_out[g.binary_parent[r]];
          const double l = left[g.binary_left[r]];
          const double rr = right[g.binary_right[r]];
          if (o == 0 || l == 0 || rr == 0) continue;  // as Berkeley's parser: see the header
          const double rule = binary_prob[r] * o;
          to_left[g.binary_left[r]] += rule * rr;
          to_right[g.binary_right[r]] += rule * l;
        }
        AddScaledCell(gather(start, split), outpost_scale[in.CellIndex(start, split)], to_left,
                      out.log_scale[index] + right_scale);
        AddScaledCell(gather(split, end), outpost_scale[in.CellIndex(split, end)], to_right,
                      out.log_scale[index] + left_scale);
      }
    }
  }
}

}  // namespace cky
