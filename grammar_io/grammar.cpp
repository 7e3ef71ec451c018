#include "grammar_io/grammar.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <tuple>

namespace cky {

int32_t Grammar::FindSymbol(std::string_view name) const {
  auto it = symbol_index_.find(std::string(name));
  return it == symbol_index_.end() ? -1 : it->second;
}

int32_t Grammar::FindState(std::string_view name) const {
  std::string_view symbol;
  int32_t substate;
  if (!SplitStateName(name, &symbol, &substate)) return -1;
  int32_t id = FindSymbol(symbol);
  if (id < 0 || substate >= symbol_num_substates[id]) return -1;
  return symbol_first_state[id] + substate;
}

std::string Grammar::StateName(int32_t state) const {
  return symbol_names[state_symbol[state]] + "_" + std::to_string(state_substate[state]);
}

void Grammar::IndexSymbols() {
  symbol_index_.clear();
  for (int32_t i = 0; i < num_symbols(); ++i) symbol_index_[symbol_names[i]] = i;
}

bool SplitStateName(std::string_view name, std::string_view* symbol, int32_t* substate) {
  size_t underscore = name.rfind('_');
  if (underscore == std::string_view::npos || underscore == 0 || underscore + 1 == name.size()) {
    return false;
  }
  const char* begin = name.data() + underscore + 1;
  const char* end = name.data() + name.size();
  auto [ptr, ec] = std::from_chars(begin, end, *substate);
  if (ec != std::errc() || ptr != end || *substate < 0) return false;
  *symbol = name.substr(0, underscore);
  return true;
}

int32_t GrammarBuilder::AddSymbol(std::string_view name) {
  auto [it, inserted] = index_.try_emplace(std::string(name), static_cast<int32_t>(names_.size()));
  if (inserted) {
    names_.emplace_back(name);
    substates_.push_back(1);
    split_trees_.emplace_back();
  }
  return it->second;
}

void GrammarBuilder::SetNumSubstates(int32_t symbol, int32_t count) {
  substates_[symbol] = std::max(substates_[symbol], count);
}

void GrammarBuilder::SetSplitTree(int32_t symbol, std::string tree) {
  split_trees_[symbol] = std::move(tree);
}

void GrammarBuilder::Cover(int32_t symbol, int32_t substate) {
  substates_[symbol] = std::max(substates_[symbol], substate + 1);
}

void GrammarBuilder::AddBinary(int32_t parent_sym, int32_t parent_sub, int32_t left_sym,
                               int32_t left_sub, int32_t right_sym, int32_t right_sub,
                               double prob) {
  Cover(parent_sym, parent_sub);
  Cover(left_sym, left_sub);
  Cover(right_sym, right_sub);
  binaries_.push_back({parent_sym, parent_sub, left_sym, left_sub, right_sym, right_sub, prob});
}

void GrammarBuilder::AddUnary(int32_t parent_sym, int32_t parent_sub, int32_t child_sym,
                              int32_t child_sub, double prob) {
  Cover(parent_sym, parent_sub);
  Cover(child_sym, child_sub);
  if (parent_sym == child_sym && parent_sub == child_sub) return;  // identity: implicit
  unaries_.push_back({parent_sym, parent_sub, child_sym, child_sub, 0, 0, prob});
}

void GrammarBuilder::AddSumUnary(int32_t parent_sym, int32_t parent_sub, int32_t child_sym,
                                 int32_t child_sub, double prob) {
  Cover(parent_sym, parent_sub);
  Cover(child_sym, child_sub);
  has_sum_unaries_ = true;
  if (parent_sym == child_sym) return;  // Berkeley's parser skips them (pState == cState)
  sum_unaries_.push_back({parent_sym, parent_sub, child_sym, child_sub, 0, 0, prob});
}

void GrammarBuilder::AddBaseUnary(int32_t parent_sym, int32_t parent_sub, int32_t child_sym,
                                  int32_t child_sub, double prob) {
  Cover(parent_sym, parent_sub);
  Cover(child_sym, child_sub);
  has_base_unaries_ = true;
  base_unaries_.push_back({parent_sym, parent_sub, child_sym, child_sub, 0, 0, prob});
}

void GrammarBuilder::SetUnaryIntermediate(int32_t parent_sym, int32_t child_sym,
                                          int32_t intermediate_sym) {
  intermediates_.emplace_back(parent_sym, child_sym, intermediate_sym);
}

namespace {

// CSR offsets of rules sorted by parent: begin[p] .. begin[p + 1].
std::vector<int32_t> ParentOffsets(const std::vector<int32_t>& parents, int32_t num_states) {
  std::vector<int32_t> begin(num_states + 1, 0);
  for (int32_t p : parents) ++begin[p + 1];
  std::partial_sum(begin.begin(), begin.end(), begin.begin());
  return begin;
}

}  // namespace

Grammar GrammarBuilder::Finish(std::vector<int32_t>* final_ids) {
  AddSymbol("ROOT");
  // ROOT first, everything else in order of first mention.
  const int32_t n = num_symbols();
  std::vector<int32_t> new_id(n);
  int32_t root_old = index_.at("ROOT");
  new_id[root_old] = 0;
  for (int32_t old = 0, next = 1; old < n; ++old) {
    if (old != root_old) new_id[old] = next++;
  }
  if (final_ids) *final_ids = new_id;

  Grammar g;
  g.symbol_names.resize(n);
  g.symbol_num_substates.resize(n);
  g.symbol_split_trees.resize(n);
  g.symbol_is_phrasal.assign(n, 0);
  for (int32_t old = 0; old < n; ++old) {
    g.symbol_names[new_id[old]] = names_[old];
    g.symbol_num_substates[new_id[old]] = substates_[old];
    g.symbol_split_trees[new_id[old]] = split_trees_[old];
  }
  g.symbol_first_state.resize(n);
  for (int32_t s = 0; s < n; ++s) {
    g.symbol_first_state[s] = static_cast<int32_t>(g.state_symbol.size());
    for (int32_t k = 0; k < g.symbol_num_substates[s]; ++k) {
      g.state_symbol.push_back(s);
      g.state_substate.push_back(k);
    }
  }
  auto state = [&](int32_t old_sym, int32_t sub) {
    return g.symbol_first_state[new_id[old_sym]] + sub;
  };

  struct Binary {
    int32_t p, l, r;
    double log_prob;
  };
  std::vector<Binary> binaries;
  binaries.reserve(binaries_.size());
  for (const RawRule& r : binaries_) {
    if (!(r.prob > 0)) continue;
    binaries.push_back({state(r.parent_sym, r.parent_sub), state(r.left_sym, r.left_sub),
                        state(r.right_sym, r.right_sub), std::log(r.prob)});
    g.symbol_is_phrasal[new_id[r.parent_sym]] = 1;
  }
  // stable_sort + keep-last: a duplicated rule keeps its last probability.
  auto key = [](const Binary& b) { return std::tie(b.p, b.l, b.r); };
  std::stable_sort(binaries.begin(), binaries.end(),
                   [&](const Binary& a, const Binary& b) { return key(a) < key(b); });
  for (size_t i = 0; i < binaries.size(); ++i) {
    if (i + 1 < binaries.size() && key(binaries[i]) == key(binaries[i + 1])) continue;
    g.binary_parent.push_back(binaries[i].p);
    g.binary_left.push_back(binaries[i].l);
    g.binary_right.push_back(binaries[i].r);
    g.binary_log_prob.push_back(binaries[i].log_prob);
  }
  g.binary_parent_begin = ParentOffsets(g.binary_parent, g.num_states());

  // Unary rules laid out sorted by (parent, child), a duplicate keeping its last probability.
  auto lay_out_unaries = [&](const std::vector<RawRule>& raw, bool mark_phrasal,
                             std::vector<int32_t>* parents, std::vector<int32_t>* children,
                             std::vector<double>* log_probs) {
    struct Unary {
      int32_t p, c;
      double log_prob;
    };
    std::vector<Unary> unaries;
    for (const RawRule& r : raw) {
      if (!(r.prob > 0)) continue;
      unaries.push_back(
          {state(r.parent_sym, r.parent_sub), state(r.left_sym, r.left_sub), std::log(r.prob)});
      if (mark_phrasal) g.symbol_is_phrasal[new_id[r.parent_sym]] = 1;
    }
    std::stable_sort(unaries.begin(), unaries.end(), [](const Unary& a, const Unary& b) {
      return std::tie(a.p, a.c) < std::tie(b.p, b.c);
    });
    for (size_t i = 0; i < unaries.size(); ++i) {
      if (i + 1 < unaries.size() && unaries[i].p == unaries[i + 1].p &&
          unaries[i].c == unaries[i + 1].c) {
        continue;
      }
      parents->push_back(unaries[i].p);
      children->push_back(unaries[i].c);
      log_probs->push_back(unaries[i].log_prob);
    }
  };
  lay_out_unaries(unaries_, /*mark_phrasal=*/true, &g.unary_parent, &g.unary_child,
                  &g.unary_log_prob);
  g.unary_parent_begin = ParentOffsets(g.unary_parent, g.num_states());

  // Closed sum-product unaries: the grammar's own, else the closed Viterbi ones between symbols.
  g.sum_unaries_exact = has_sum_unaries_;
  if (has_sum_unaries_) {
    lay_out_unaries(sum_unaries_, /*mark_phrasal=*/false, &g.sum_unary_parent, &g.sum_unary_child,
                    &g.sum_unary_log_prob);
  } else {
    for (size_t i = 0; i < g.unary_parent.size(); ++i) {
      if (g.state_symbol[g.unary_parent[i]] == g.state_symbol[g.unary_child[i]]) continue;
      g.sum_unary_parent.push_back(g.unary_parent[i]);
      g.sum_unary_child.push_back(g.unary_child[i]);
      g.sum_unary_log_prob.push_back(g.unary_log_prob[i]);
    }
  }
  g.sum_unary_parent_begin = ParentOffsets(g.sum_unary_parent, g.num_states());
  g.base_unaries_known = has_base_unaries_;
  lay_out_unaries(base_unaries_, /*mark_phrasal=*/false, &g.base_unary_parent,
                  &g.base_unary_child, &g.base_unary_log_prob);
  g.base_unary_parent_begin = ParentOffsets(g.base_unary_parent, g.num_states());
  if (!intermediates_.empty()) {
    g.unary_intermediate.assign(size_t(n) * n, -1);
    for (const auto& [p, c, m] : intermediates_) {
      if (m < 0 || m >= n) continue;
      g.unary_intermediate[size_t(new_id[p]) * n + new_id[c]] = new_id[m];
    }
  }
  g.IndexSymbols();
  return g;
}

}  // namespace cky
