#include "parser/grammar_projection.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include "cuda/common/host_parallel.h"

namespace cky {
namespace {

// The path from the root to every leaf of a split tree such as "(0 (0 0 1) (1 2 3))": for leaf
// (fine substate) s, paths[s][d] is the preorder number of its ancestor at depth d, the leaf last.
Status SplitTreePaths(std::string_view text, int32_t num_substates,
                      std::vector<std::vector<int32_t>>* paths) {
  paths->assign(num_substates, {});
  std::vector<int32_t> stack;  // open nodes' preorder numbers
  int32_t next_node = 0;
  size_t i = 0;
  auto error = [&](const std::string& why) {
    return Status::Error("split tree '" + std::string(text) + "': " + why);
  };
  bool expect_label = false;  // right after '(' comes the node's own label
  while (i < text.size()) {
    const char c = text[i];
    if (c == ' ' || c == '\t') {
      ++i;
    } else if (c == '(') {
      if (expect_label) return error("a node without a label");
      stack.push_back(next_node++);
      if (stack.size() > 64) return error("deeper than 64 levels");
      expect_label = true;
      ++i;
    } else if (c == ')') {
      if (stack.empty() || expect_label) return error("unbalanced parentheses");
      stack.pop_back();
      ++i;
    } else if (c >= '0' && c <= '9') {
      size_t j = i;
      int64_t value = 0;
      while (j < text.size() && text[j] >= '0' && text[j] <= '9' && value < (1 << 30)) {
        value = value * 10 + (text[j] - '0');
        ++j;
      }
      i = j;
      if (expect_label) {  // an inner node's label: its number is its preorder position
        expect_label = false;
        continue;
      }
      if (value >= num_substates) return error("substate " + std::to_string(value) + " too large");
      auto& path = (*paths)[value];
      if (!path.empty()) return error("substate " + std::to_string(value) + " appears twice");
      path = stack;
      path.push_back(next_node++);
    } else {
      return error(std::string("unexpected character '") + c + "'");
    }
  }
  if (!stack.empty()) return error("unbalanced parentheses");
  for (int32_t s = 0; s < num_substates; ++s) {
    if ((*paths)[s].empty()) return error("substate " + std::to_string(s) + " is missing");
  }
  return Status();
}

// For one symbol: fine substate -> substate at `level`, numbered left to right. Returns the count.
StatusOr<int32_t> SubstateMapping(const Grammar& g, int32_t symbol, int32_t level,
                                  std::vector<int32_t>* mapping) {
  const int32_t n = g.symbol_num_substates[symbol];
  mapping->assign(n, 0);
  const std::string& tree =
      symbol < int32_t(g.symbol_split_trees.size()) ? g.symbol_split_trees[symbol] : std::string();
  if (tree.empty() || n == 1) {
    const int64_t groups = level >= 30 ? n : std::min<int64_t>(n, int64_t(1) << level);
    for (int32_t s = 0; s < n; ++s) (*mapping)[s] = int32_t(int64_t(s) * groups / n);
    return int32_t(groups);
  }
  std::vector<std::vector<int32_t>> paths;
  if (Status status = SplitTreePaths(tree, n, &paths); !status.ok()) {
    return Status::Error("symbol " + g.symbol_names[symbol] + ": " + status.message());
  }
  // Number the depth-`level` ancestors (a leaf above that depth stands for itself) in the order
  // of their leftmost leaf: preorder numbers increase left to right at every depth.
  std::vector<std::pair<int32_t, int32_t>> node_of;  // (node, fine substate)
  for (int32_t s = 0; s < n; ++s) {
    const auto& path = paths[s];
    node_of.push_back({path[std::min<size_t>(level, path.size() - 1)], s});
  }
  std::sort(node_of.begin(), node_of.end());
  int32_t groups = 0;
  for (size_t i = 0; i < node_of.size(); ++i) {
    if (i > 0 && node_of[i].first != node_of[i - 1].first) ++groups;
    (*mapping)[node_of[i].second] = groups;
  }
  return groups + 1;
}

struct Projected {
  int64_t key;
  double prob;
};

// Sums weighted fine rules that fall on the same projected rule, in key order; the rules of one
// key are added in their input (fine grammar) order.
std::vector<Projected> Aggregate(std::vector<Projected> rules) {
  std::stable_sort(rules.begin(), rules.end(),
                   [](const Projected& a, const Projected& b) { return a.key < b.key; });
  size_t kept = 0;
  for (const Projected& r : rules) {
    if (kept > 0 && rules[kept - 1].key == r.key) {
      rules[kept - 1].prob += r.prob;
    } else {
      rules[kept++] = r;
    }
  }
  rules.resize(kept);
  return rules;
}

// The fine binary rules projected and summed: per projected rule (in key order) the sum of its
// fine rules' weighted probabilities, added in fine grammar order. The fine rules are grouped by
// parent (binary_parent_begin), so each projected parent gathers the rules of its fine parents:
// into a dense (left, right) table, or, where that table would be large, Aggregate's sorted list
// (the same sums in the same order). Projected parents are split into up to 8 slices, run on the
// host's threads.
std::vector<Projected> ProjectBinaries(const Grammar& fine, const std::vector<int32_t>& from_fine,
                                       const std::vector<double>& fine_weight,
                                       int32_t coarse_states) {
  const int64_t cs = coarse_states;
  std::vector<std::vector<int32_t>> fine_of(cs);  // projected state -> its fine states, in order
  for (int32_t f = 0; f < fine.num_states(); ++f) fine_of[from_fine[f]].push_back(f);
  const int slices = std::clamp<int64_t>(int64_t(fine.binary_parent.size()) >> 17, 1, 8);
  const bool dense = cs * cs <= (int64_t(1) << 22);
  std::vector<std::vector<Projected>> out(slices);
  auto project = [&](int k) {
    std::vector<double> table(dense ? cs * cs : 0, 0.0);
    std::vector<uint8_t> seen(dense ? cs * cs : 0, 0);
    std::vector<int64_t> touched;
    std::vector<Projected> list;
    for (int64_t parent = cs * k / slices; parent < cs * (k + 1) / slices; ++parent) {
      touched.clear();
      list.clear();
      for (int32_t f : fine_of[parent]) {
        const double weight = fine_weight[f];
        for (int32_t r = fine.binary_parent_begin[f]; r < fine.binary_parent_begin[f + 1]; ++r) {
          const int64_t cell =
              int64_t(from_fine[fine.binary_left[r]]) * cs + from_fine[fine.binary_right[r]];
          const double p = weight * std::exp(fine.binary_log_prob[r]);
          if (!dense) {
            list.push_back({parent * cs * cs + cell, p});
            continue;
          }
          if (!seen[cell]) {
            seen[cell] = 1;
            touched.push_back(cell);
          }
          table[cell] += p;
        }
      }
      if (dense) {
        std::sort(touched.begin(), touched.end());
        for (int64_t cell : touched) {
          out[k].push_back({parent * cs * cs + cell, table[cell]});
          table[cell] = 0;
          seen[cell] = 0;
        }
        continue;
      }
      for (const Projected& r : Aggregate(std::move(list))) out[k].push_back(r);
      list.clear();
    }
  };
  cuda::ForEachOnHostThreads(slices, fine.binary_parent.size(), project);
  std::vector<Projected> all;
  for (std::vector<Projected>& part : out) all.insert(all.end(), part.begin(), part.end());
  return all;
}

}  // namespace

int32_t NumProjectionLevels(const Grammar& fine) {
  int32_t most = 1;
  for (int32_t n : fine.symbol_num_substates) most = std::max(most, n);
  int32_t levels = 0;
  while ((int64_t(1) << levels) < most) ++levels;
  return levels;
}

std::vector<double> ExpectedStateCounts(const Grammar& g) {
  const int32_t states = g.num_states();
  std::vector<double> counts(states, 0.0), next(states, 0.0);
  counts[Grammar::kRootState] = 1;
  const int64_t binaries = static_cast<int64_t>(g.binary_log_prob.size());
  std::vector<double> binary_prob(binaries);
  for (int64_t r = 0; r < binaries; ++r) binary_prob[r] = std::exp(g.binary_log_prob[r]);
  std::vector<double> unary_prob(g.sum_unary_log_prob.size());
  for (size_t u = 0; u < unary_prob.size(); ++u) unary_prob[u] = std::exp(g.sum_unary_log_prob[u]);
  // Each round's binary sums in a fixed number of slices of the rules, each slice's sums on its
  // own thread, added slice by slice: the result does not depend on the host's cores. Grammars of
  // fewer rules than starting the threads costs sum in one slice, in rule order.
  constexpr int kSlices = 16;
  const int slices = binaries >= (int64_t(1) << 19) ? kSlices : 1;
  std::vector<std::vector<double>> partial(slices, std::vector<double>(states));
  auto slice_sums = [&](int k) {
    std::vector<double>& out = partial[k];
    std::fill(out.begin(), out.end(), 0.0);
    for (int64_t r = binaries * k / slices; r < binaries * (k + 1) / slices; ++r) {
      const double c = counts[g.binary_parent[r]] * binary_prob[r];
      out[g.binary_left[r]] += c;
      out[g.binary_right[r]] += c;
    }
  };
  // Berkeley's iteration: at most 50 rounds, until the counts move by less than 1e-10 in total.
  for (int iteration = 0; iteration < 50; ++iteration) {
    // The slices over the host's threads (the sums do not depend on which thread).
    cuda::ForEachOnHostThreads(slices, size_t(binaries), slice_sums);
    for (int32_t s = 0; s < states; ++s) {
      double total = 0;
      for (int k = 0; k < slices; ++k) total += partial[k][s];
      next[s] = total;
    }
    for (size_t u = 0; u < g.sum_unary_parent.size(); ++u) {
      next[g.sum_unary_child[u]] += counts[g.sum_unary_parent[u]] * unary_prob[u];
    }
    next[Grammar::kRootState] = 1;
    double diff = 0;
    for (int32_t s = 0; s < states; ++s) diff += std::abs(next[s] - counts[s]);
    counts.swap(next);
    if (diff <= 1e-10) break;
  }
  return counts;
}

StatusOr<int32_t> ProjectStates(const Grammar& fine, int32_t level, std::vector<int32_t>* from_fine,
                                std::vector<int32_t>* symbol_states) {
  // A symbol's projected substates consecutive, in symbol order: the layout GrammarBuilder::Finish
  // gives when symbols are added in fine order.
  const int32_t symbols = fine.num_symbols();
  from_fine->assign(fine.num_states(), 0);
  if (symbol_states) symbol_states->assign(symbols, 0);
  int32_t coarse_states = 0;
  std::vector<int32_t> mapping;
  for (int32_t s = 0; s < symbols; ++s) {
    auto count = SubstateMapping(fine, s, level, &mapping);
    if (!count.ok()) return count.status();
    if (symbol_states) (*symbol_states)[s] = *count;
    for (int32_t k = 0; k < fine.symbol_num_substates[s]; ++k) {
      (*from_fine)[fine.symbol_first_state[s] + k] = coarse_states + mapping[k];
    }
    coarse_states += *count;
  }
  return coarse_states;
}

StatusOr<ProjectedGrammar> ProjectGrammar(const Grammar& fine, int32_t level, double min_rule_prob,
                                          const std::vector<double>* expected_counts) {
  if (level < 0 || level > NumProjectionLevels(fine)) {
    return Status::Error("projection level " + std::to_string(level) + " outside 0.." +
                         std::to_string(NumProjectionLevels(fine)));
  }
  const int32_t symbols = fine.num_symbols();
  const int32_t fine_states = fine.num_states();
  ProjectedGrammar out;
  out.level = level;

  std::vector<int32_t> coarse_count(symbols), coarse_first(symbols);
  StatusOr<int32_t> projected = ProjectStates(fine, level, &out.from_fine, &coarse_count);
  if (!projected.ok()) return projected.status();
  const int32_t coarse_states = *projected;
  for (int32_t s = 0, first = 0; s < symbols; first += coarse_count[s++]) coarse_first[s] = first;

  // P(fine | coarse) from expected counts; uniform where the counts are all zero.
  std::vector<double> computed;
  if (!expected_counts) computed = ExpectedStateCounts(fine);
  const std::vector<double>& counts = expected_counts ? *expected_counts : computed;
  if (counts.size() != static_cast<size_t>(fine_states)) {
    return Status::Error("expected state counts for " + std::to_string(counts.size()) +
                         " states, the grammar has " + std::to_string(fine_states));
  }
  std::vector<double> coarse_total(coarse_states, 0.0);
  std::vector<int32_t> coarse_size(coarse_states, 0);
  for (int32_t f = 0; f < fine_states; ++f) {
    coarse_total[out.from_fine[f]] += counts[f];
    ++coarse_size[out.from_fine[f]];
  }
  out.fine_weight.resize(fine_states);
  for (int32_t f = 0; f < fine_states; ++f) {
    const int32_t c = out.from_fine[f];
    out.fine_weight[f] = coarse_total[c] > 0 ? counts[f] / coarse_total[c] : 1.0 / coarse_size[c];
  }

  const int64_t cs = coarse_states;
  auto project_unaries = [&](const std::vector<int32_t>& parent, const std::vector<int32_t>& child,
                             const std::vector<double>& log_prob) {
    std::vector<Projected> rules;
    for (size_t u = 0; u < parent.size(); ++u) {
      rules.push_back({int64_t(out.from_fine[parent[u]]) * cs + out.from_fine[child[u]],
                       out.fine_weight[parent[u]] * std::exp(log_prob[u])});
    }
    return Aggregate(std::move(rules));
  };

  GrammarBuilder builder;
  for (int32_t s = 0; s < symbols; ++s) {
    builder.AddSymbol(fine.symbol_names[s]);
    builder.SetNumSubstates(s, coarse_count[s]);
  }
  const auto symbol_of = [&](int64_t state) {
    return int32_t(std::upper_bound(coarse_first.begin(), coarse_first.end(), int32_t(state)) -
                   coarse_first.begin() - 1);
  };
  const std::vector<Projected> projected_binaries =
      ProjectBinaries(fine, out.from_fine, out.fine_weight, coarse_states);
  builder.ReserveBinaries(projected_binaries.size());
  for (const Projected& r : projected_binaries) {
    if (!(r.prob >= min_rule_prob) || !(r.prob > 0)) continue;
    const int64_t p = r.key / (cs * cs), l = (r.key / cs) % cs, rr = r.key % cs;
    const int32_t ps = symbol_of(p), ls = symbol_of(l), rs = symbol_of(rr);
    builder.AddBinary(ps, int32_t(p - coarse_first[ps]), ls, int32_t(l - coarse_first[ls]), rs,
                      int32_t(rr - coarse_first[rs]), r.prob);
  }
  for (const Projected& r :
       project_unaries(fine.unary_parent, fine.unary_child, fine.unary_log_prob)) {
    if (!(r.prob >= min_rule_prob) || !(r.prob > 0)) continue;
    const int64_t p = r.key / cs, c = r.key % cs;
    if (p == c) continue;  // a unary within one projected substate is an identity there
    const int32_t ps = symbol_of(p), ch = symbol_of(c);
    builder.AddUnary(ps, int32_t(p - coarse_first[ps]), ch, int32_t(c - coarse_first[ch]), r.prob);
  }
  bool any_sum_unary = false;
  for (const Projected& r :
       project_unaries(fine.sum_unary_parent, fine.sum_unary_child, fine.sum_unary_log_prob)) {
    if (!(r.prob >= min_rule_prob) || !(r.prob > 0)) continue;
    const int64_t p = r.key / cs, c = r.key % cs;
    const int32_t ps = symbol_of(p), ch = symbol_of(c);
    builder.AddSumUnary(ps, int32_t(p - coarse_first[ps]), ch, int32_t(c - coarse_first[ch]),
                        r.prob);
    any_sum_unary = true;
  }
  std::vector<int32_t> final_ids;
  out.grammar = builder.Finish(&final_ids);
  for (int32_t s = 0; s < symbols; ++s) {
    if (final_ids[s] != s) return Status::Error("projection reordered the grammar's symbols");
  }
  Grammar& g = out.grammar;
  if (g.num_states() != coarse_states) return Status::Error("projection lost states");
  // Same symbols as the fine grammar: keep its flags and unary chain intermediates.
  g.symbol_is_phrasal = fine.symbol_is_phrasal;
  g.unary_intermediate = fine.unary_intermediate;
  g.sum_unaries_exact = fine.sum_unaries_exact;
  if (!any_sum_unary && !fine.sum_unary_parent.empty()) g.sum_unaries_exact = false;
  return out;
}

void ProjectLexicalScores(const ProjectedGrammar& projection, const LexicalScores& fine,
                          LexicalScores* coarse) {
  const int32_t coarse_states = projection.grammar.num_states();
  coarse->length = fine.length;
  coarse->num_states = coarse_states;
  coarse->scores.assign(size_t(fine.length) * coarse_states, kNegInf);
  // Runs of consecutive fine states of one coarse state (a symbol's substates refine in order, so
  // mostly one run a coarse state): at the coarse levels, whose runs are long, a run's maximum and
  // sum are kept in registers, where updating best[c] and sum[c] state by state chained every step
  // through memory (runs of 2 or fewer states were slower that way: bench/RESULTS.md). The sums
  // add the fine states in their order from 0.0 either way, so the scores are the same bit for
  // bit.
  std::vector<int32_t> run_begin;
  for (int32_t f = 0; f < fine.num_states; ++f) {
    if (f == 0 || projection.from_fine[f] != projection.from_fine[f - 1]) run_begin.push_back(f);
  }
  const bool by_runs = 3 * run_begin.size() <= size_t(fine.num_states);
  run_begin.push_back(fine.num_states);
  const size_t runs = run_begin.size() - 1;
  std::vector<double> best(coarse_states), sum(coarse_states);
  for (int32_t i = 0; i < fine.length; ++i) {
    const double* word = fine.word(i);
    double* out = coarse->scores.data() + int64_t(i) * coarse_states;
    // log sum_t w_t exp(x_t), shifted by the largest x per coarse state for range.
    std::fill(best.begin(), best.end(), kNegInf);
    std::fill(sum.begin(), sum.end(), 0.0);
    if (!by_runs) {
      for (int32_t f = 0; f < fine.num_states; ++f) {
        const int32_t c = projection.from_fine[f];
        best[c] = std::max(best[c], word[f]);
      }
      for (int32_t f = 0; f < fine.num_states; ++f) {
        if (!(word[f] > kNegInf)) continue;
        const int32_t c = projection.from_fine[f];
        sum[c] += projection.fine_weight[f] * std::exp(word[f] - best[c]);
      }
    }
    for (size_t r = 0; by_runs && r < runs; ++r) {
      double most = best[projection.from_fine[run_begin[r]]];
      for (int32_t f = run_begin[r]; f < run_begin[r + 1]; ++f) most = std::max(most, word[f]);
      best[projection.from_fine[run_begin[r]]] = most;
    }
    for (size_t r = 0; by_runs && r < runs; ++r) {
      const int32_t c = projection.from_fine[run_begin[r]];
      const double shift = best[c];
      double total = sum[c];
      for (int32_t f = run_begin[r]; f < run_begin[r + 1]; ++f) {
        if (!(word[f] > kNegInf)) continue;
        total += projection.fine_weight[f] * std::exp(word[f] - shift);
      }
      sum[c] = total;
    }
    for (int32_t c = 0; c < coarse_states; ++c) {
      if (sum[c] > 0) out[c] = best[c] + std::log(sum[c]);
    }
  }
}

}  // namespace cky
