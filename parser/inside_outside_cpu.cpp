// The fast CPU path of parser/inside_outside_cpu.h: the reference's arithmetic, with binary rules
// grouped by left child, then right child, so that a zero child skips its rules. Tested against
// the reference.
#include "parser/inside_outside_cpu.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "parser/child_pair_runs.h"

namespace cky {

SumProductRules::SumProductRules(const Grammar& g) {
  // Base rules (A, B, C) numbered in symbol order: sorted distinct keys, a rule's base its key's
  // place (a std::map of tuples took about 0.25 s on en_sm6s's 1.73M rules).
  const int64_t rules = g.num_binary_rules();
  const uint64_t symbols = static_cast<uint64_t>(g.num_symbols());
  auto base_key = [&](int64_t r) {
    return (uint64_t(g.state_symbol[g.binary_parent[r]]) * symbols +
            uint64_t(g.state_symbol[g.binary_left[r]])) *
               symbols +
           uint64_t(g.state_symbol[g.binary_right[r]]);
  };
  std::vector<uint64_t> keys(rules);
  for (int64_t r = 0; r < rules; ++r) keys[r] = base_key(r);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (uint64_t key : keys) {
    base_binaries.push_back({int32_t(key / (symbols * symbols)), int32_t(key / symbols % symbols),
                             int32_t(key % symbols)});
  }
  ChildPairRuns runs(g);
  parent.reserve(rules);
  prob.reserve(rules);
  base.reserve(rules);
  for (int32_t r : runs.order) {
    parent.push_back(g.binary_parent[r]);
    prob.push_back(std::exp(g.binary_log_prob[r]));
    base.push_back(int32_t(std::lower_bound(keys.begin(), keys.end(), base_key(r)) - keys.begin()));
  }
  left_pair_begin = std::move(runs.left_pair_begin);
  pair_right = std::move(runs.pair_right);
  pair_begin = std::move(runs.pair_begin);

  std::map<std::pair<int32_t, int32_t>, int32_t> unary_ids;
  for (size_t u = 0; u < g.sum_unary_parent.size(); ++u) {
    unary_ids.emplace(
        std::make_pair(g.state_symbol[g.sum_unary_parent[u]], g.state_symbol[g.sum_unary_child[u]]),
        0);
  }
  for (auto& [key, id] : unary_ids) {
    id = int32_t(base_unaries.size());
    base_unaries.push_back(key);
  }
  unary_child_begin.assign(g.num_states() + 1, 0);
  for (int32_t child : g.sum_unary_child) ++unary_child_begin[child + 1];
  std::partial_sum(unary_child_begin.begin(), unary_child_begin.end(), unary_child_begin.begin());
  unary_by_child.resize(g.sum_unary_child.size());
  std::vector<int32_t> next(unary_child_begin.begin(), unary_child_begin.end() - 1);
  for (size_t u = 0; u < g.sum_unary_child.size(); ++u) {
    unary_by_child[next[g.sum_unary_child[u]]++] = int32_t(u);  // stable: ascending parent
  }
  for (size_t u = 0; u < g.sum_unary_parent.size(); ++u) {
    unary_prob.push_back(std::exp(g.sum_unary_log_prob[u]));
    unary_base.push_back(unary_ids.at(std::make_pair(g.state_symbol[g.sum_unary_parent[u]],
                                                     g.state_symbol[g.sum_unary_child[u]])));
  }
}

namespace {

// The unary layers of inside_outside_cpu.h visiting only the nonzero states' rules: out = in,
// plus prob[u] in[x] at target[u] for each state x with in[x] != 0 and each of its rules
// u = rule_at(i), i in [begin[x], begin[x + 1]). Each sum receives its terms in the reference's
// order (InsideUnaryLayer, OutsideUnaryLayer), so the values are equal.
template <typename RuleAt>
void SparseUnaryLayer(const std::vector<int32_t>& begin, RuleAt rule_at,
                      const std::vector<int32_t>& target, const std::vector<double>& prob,
                      const std::vector<double>& in, std::vector<double>* out) {
  *out = in;
  for (int32_t x = 0; x < int32_t(in.size()); ++x) {
    const double value = in[x];
    if (value == 0) continue;
    for (int32_t i = begin[x]; i < begin[x + 1]; ++i) {
      const int32_t u = rule_at(i);
      (*out)[target[u]] += prob[u] * value;
    }
  }
}

// Inside: x is the child, its rules in ascending parent order.
void SparseInsideUnaryLayer(const Grammar& g, const SumProductRules& rules,
                            const std::vector<double>& pre, std::vector<double>* post) {
  SparseUnaryLayer(
      rules.unary_child_begin, [&](int32_t i) { return rules.unary_by_child[i]; },
      g.sum_unary_parent, rules.unary_prob, pre, post);
}

// Outside: x is the parent.
void SparseOutsideUnaryLayer(const Grammar& g, const SumProductRules& rules,
                             const std::vector<double>& above, std::vector<double>* below) {
  SparseUnaryLayer(
      g.sum_unary_parent_begin, [](int32_t i) { return i; }, g.sum_unary_child, rules.unary_prob,
      above, below);
}

}  // namespace

void FastInsideOutside(const Grammar& g, const SumProductRules& rules, const LexicalScores& lexical,
                       InsideOutsideCharts* charts, const std::vector<uint8_t>* allowed) {
  const int32_t n = lexical.length;
  const int32_t states = g.num_states();
  ScaledChart& in = charts->inside;
  ScaledChart& out = charts->outside;
  in.Reset(n, states);
  out.Reset(n, states);
  charts->log_likelihood = kNegInf;
  if (n == 0) return;

  std::vector<double> pre(states), post(states);
  // Per cell, the states with a positive inside score (the left children worth visiting).
  std::vector<std::vector<int32_t>> nonzero(Chart::NumCells(n));
  auto mask_cell = [&](int64_t index, std::vector<double>& values) {
    if (!allowed) return;
    const uint8_t* keep = allowed->data() + index * states;
    for (int32_t s = 0; s < states; ++s) {
      if (!keep[s]) values[s] = 0;
    }
  };
  for (int32_t span = 1; span <= n; ++span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      const int32_t end = start + span;
      std::fill(pre.begin(), pre.end(), 0.0);
      double scale = kNegInf;
      if (span == 1) {
        scale = LexicalCell(lexical, start, &pre);
      } else {
        for (int32_t split = start + 1; split < end; ++split) {
          scale = std::max(scale, in.scale(start, split) + in.scale(split, end));
        }
        if (scale > kNegInf) {
          for (int32_t split = start + 1; split < end; ++split) {
            const double factor = std::exp(in.scale(start, split) + in.scale(split, end) - scale);
            if (!(factor > 0)) continue;
            const double* left = in.cell(start, split);
            const double* right = in.cell(split, end);
            for (int32_t l : nonzero[in.CellIndex(start, split)]) {
              const double lf = left[l] * factor;
              for (int32_t p = rules.left_pair_begin[l]; p < rules.left_pair_begin[l + 1]; ++p) {
                const double rv = right[rules.pair_right[p]];
                if (rv == 0) continue;
                for (int32_t r = rules.pair_begin[p]; r < rules.pair_begin[p + 1]; ++r)
                  pre[rules.parent[r]] += rules.prob[r] * lf * rv;
              }
            }
          }
        }
      }
      const int64_t index = in.CellIndex(start, end);
      mask_cell(index, pre);
      SparseInsideUnaryLayer(g, rules, pre, &post);
      mask_cell(index, post);
      double* cell = in.cell(start, end);
      std::copy(post.begin(), post.end(), cell);
      NormalizeScaledCell(cell, states, scale, &in.log_scale[index]);
      PresentLeftStates(cell, 0.0, rules.left_pair_begin, &nonzero[index]);
    }
  }
  const double root = in.cell(0, n)[Grammar::kRootState];
  if (!(root > 0)) return;
  charts->log_likelihood = std::log(root) + in.scale(0, n);

  std::vector<std::vector<double>> outpost(Chart::NumCells(n));
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
      // Pruned items get outside 0 too, above and below the unary layer: no outside flows through
      // an item that no derivation of the pruned chart uses (the Berkeley parser's constrained
      // outside pass), so the rule scores are posteriors of the pruned chart's trees.
      mask_cell(index, above);
      std::vector<double> below;
      SparseOutsideUnaryLayer(g, rules, above, &below);
      mask_cell(index, below);
      double* cell = out.cell(start, end);
      std::copy(below.begin(), below.end(), cell);
      NormalizeScaledCell(cell, states, outpost_scale[index], &out.log_scale[index]);
      outpost[index].clear();
      outpost[index].shrink_to_fit();
      if (span == 1 || out.log_scale[index] == kNegInf) continue;
      const double* parent_out = out.cell(start, end);
      for (int32_t split = start + 1; split < end; ++split) {
        const double left_scale = in.scale(start, split);
        const double right_scale = in.scale(split, end);
        if (left_scale == kNegInf || right_scale == kNegInf) continue;
        const double* left = in.cell(start, split);
        const double* right = in.cell(split, end);
        std::fill(to_left.begin(), to_left.end(), 0.0);
        std::fill(to_right.begin(), to_right.end(), 0.0);
        for (int32_t l : nonzero[in.CellIndex(start, split)]) {
          const double lv = left[l];
          double sum_left = 0;
          for (int32_t p = rules.left_pair_begin[l]; p < rules.left_pair_begin[l + 1]; ++p) {
            const int32_t right_state = rules.pair_right[p];
            const double rv = right[right_state];
            if (rv == 0) continue;
            // A parent with outside 0 (pruned) adds exact zeros: no test, which measured faster.
            for (int32_t r = rules.pair_begin[p]; r < rules.pair_begin[p + 1]; ++r) {
              const double o = parent_out[rules.parent[r]];
              const double po = rules.prob[r] * o;
              sum_left += po * rv;
              to_right[right_state] += po * lv;
            }
          }
          to_left[l] += sum_left;
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
