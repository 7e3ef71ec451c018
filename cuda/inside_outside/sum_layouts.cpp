#include "cuda/inside_outside/sum_layouts.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace cky::cuda {

namespace {

// Rules r = 0 .. n - 1 as (key(r), r) in (key, r) order: a stable counting sort by key when its
// range is small next to the rules (the grammars' symbol pairs and triples), else a comparison
// sort; both give the same order (the pairs are unique).
template <typename KeyOf>
std::vector<std::pair<uint64_t, int64_t>> OrderByKey(int64_t n, uint64_t key_range,
                                                     const KeyOf& key_of) {
  std::vector<std::pair<uint64_t, int64_t>> order(n);
  if (key_range > std::max<uint64_t>(uint64_t(1) << 22, 4 * uint64_t(n))) {
    for (int64_t r = 0; r < n; ++r) order[r] = {key_of(r), r};
    std::sort(order.begin(), order.end());
    return order;
  }
  std::vector<int64_t> place(key_range + 1, 0);
  for (int64_t r = 0; r < n; ++r) ++place[key_of(r) + 1];
  for (uint64_t k = 0; k < key_range; ++k) place[k + 1] += place[k];
  for (int64_t r = 0; r < n; ++r) {
    const uint64_t key = key_of(r);
    order[place[key]++] = {key, r};
  }
  return order;
}

}  // namespace

GrammarView StateGroups::AsSymbols(const GrammarView& g) const {
  GrammarView view = g;
  view.num_symbols = num_groups();
  view.state_symbol = state_group.data();
  view.symbol_first_state = first_state.data();
  view.symbol_num_substates = num_states.data();
  view.symbol_is_phrasal = nullptr;
  return view;
}

std::optional<StateGroups> GroupStates(const GrammarView& g, const int32_t* group_of,
                                       int32_t num_groups) {
  if (!group_of || !g.state_symbol || num_groups <= g.num_symbols || num_groups > kMaxPairSymbols)
    return {};
  StateGroups out;
  out.state_group.assign(group_of, group_of + g.num_states);
  out.first_state.assign(num_groups, -1);
  out.num_states.assign(num_groups, 0);
  for (int32_t s = 0; s < g.num_states; ++s) {
    const int32_t group = group_of[s];
    if (group < 0 || group >= num_groups) return {};
    int32_t& first = out.first_state[group];
    if (first < 0) {
      first = s;
    } else if (first + out.num_states[group] != s || g.state_symbol[first] != g.state_symbol[s]) {
      return {};  // not one run, or across symbols
    }
    ++out.num_states[group];
  }
  for (int32_t count : out.num_states) {
    if (count == 0) return {};
  }
  return out;
}

PairSumLayout BuildPairSumLayout(const GrammarView& g, PairSumPass pass, PairWeights weights,
                                 double sparse_below) {
  // The pass's partners X, Y and target T of each rule A -> B C.
  const int32_t* xs = pass == PairSumPass::kInside ? g.binary_left : g.binary_parent;
  const int32_t* ys = pass == PairSumPass::kOutRight ? g.binary_left : g.binary_right;
  const int32_t* ts = pass == PairSumPass::kInside    ? g.binary_parent
                      : pass == PairSumPass::kOutLeft ? g.binary_left
                                                      : g.binary_right;
  // Rules by (X symbol, Y symbol, X state), in grammar order within each: by X state first, then
  // (stable) by symbol pair.
  const uint64_t symbols = static_cast<uint64_t>(g.num_symbols);
  const std::vector<std::pair<uint64_t, int64_t>> by_x =
      OrderByKey(g.num_binary, uint64_t(g.num_states), [&](int64_t r) { return uint64_t(xs[r]); });
  std::vector<std::pair<uint64_t, int64_t>> order =
      OrderByKey(g.num_binary, symbols * symbols, [&](int64_t k) {
        const int64_t r = by_x[k].second;
        return uint64_t(g.state_symbol[xs[r]]) * symbols + uint64_t(g.state_symbol[ys[r]]);
      });
  for (auto& [key, rule] : order) {  // (pair, position in by_x) -> (pair << 32 | X state, rule)
    rule = by_x[rule].second;
    key = (key << 32) | uint64_t(xs[rule]);
  }
  PairSumLayout out;
  std::vector<int> tile_rules;
  std::vector<int> rules_of(g.num_states, 0);  // rules per target state in the band at hand
  std::vector<int64_t> band;                   // the band's rules
  out.key.reserve(order.size());
  out.w.reserve(order.size());
  out.pl_begin = {0};
  out.pl_rule_begin = {0};
  out.used_begin = {0};
  std::vector<int> used;  // the band's substate pairs its rules use
  size_t i = 0;
  while (i < order.size()) {
    const uint64_t group = order[i].first >> 32;
    size_t j = i;
    while (j < order.size() && order[j].first >> 32 == group) ++j;
    const int x_sym = g.state_symbol[xs[order[i].second]];
    const int y_sym = g.state_symbol[ys[order[i].second]];
    const int x_first = g.symbol_first_state[x_sym], s_x = g.symbol_num_substates[x_sym];
    const int y_first = g.symbol_first_state[y_sym], s_y = g.symbol_num_substates[y_sym];
    const int rows = std::max(1, kBandLimit / s_y);
    size_t k = i;  // the group is in X state order, so each band is a run of it
    for (int lo = 0; lo < s_x; lo += rows) {
      const int hi = std::min(s_x, lo + rows);
      band.clear();
      for (; k < j && xs[order[k].second] - x_first < hi; ++k) band.push_back(order[k].second);
      if (band.empty()) continue;
      // Target states with the most rules first (the rule phase of variant 2 gives a warp
      // several targets: neighbours should have about as many rules), then by state, then in
      // grammar order.
      for (int64_t r : band) ++rules_of[ts[r]];
      std::sort(band.begin(), band.end(), [&](int64_t a, int64_t b) {
        const int ta = ts[a], tb = ts[b];
        if (rules_of[ta] != rules_of[tb]) return rules_of[ta] > rules_of[tb];
        return ta != tb ? ta < tb : a < b;
      });
      for (int64_t r : band) rules_of[ts[r]] = 0;
      out.info.push_back({x_first + lo, hi - lo, y_first, s_y});
      out.symbols.push_back({x_sym, y_sym});
      tile_rules.push_back(static_cast<int>(band.size()));
      out.max_bc = std::max(out.max_bc, (hi - lo) * s_y);
      const auto pair_of = [&](int64_t r) {
        return (xs[r] - x_first - lo) * s_y + (ys[r] - y_first);
      };
      // (Only a layout that may have sparse tiles sorts each band's pairs: the sum-product
      // passes' layouts of every rule have none.)
      used.clear();
      if (sparse_below > 0) {
        for (int64_t r : band) used.push_back(pair_of(r));
        std::sort(used.begin(), used.end());
        used.erase(std::unique(used.begin(), used.end()), used.end());
      }
      const bool sparse = double(used.size()) < sparse_below * double((hi - lo) * s_y);
      if (sparse) out.used_key.insert(out.used_key.end(), used.begin(), used.end());
      out.used_begin.push_back(static_cast<int>(out.used_key.size()));
      for (size_t b = 0; b < band.size(); ++b) {
        const int64_t r = band[b];
        const bool new_target = b == 0 || ts[r] != ts[band[b - 1]];
        if (new_target && b > 0) out.pl_rule_begin.push_back(static_cast<int>(out.key.size()));
        if (new_target) out.pl_target.push_back(ts[r]);
        const int pair = pair_of(r);
        out.key.push_back(
            sparse
                ? static_cast<int>(std::lower_bound(used.begin(), used.end(), pair) - used.begin())
                : pair);
        out.w.push_back(weights == PairWeights::kProbabilities ? std::exp(g.binary_log_prob[r])
                                                               : g.binary_log_prob[r]);
      }
      out.pl_rule_begin.push_back(static_cast<int>(out.key.size()));
      out.pl_begin.push_back(static_cast<int>(out.pl_target.size()));
    }
    i = j;
  }
  if (out.used_key.empty()) out.used_begin.clear();  // no sparse tile
  out.tiles.resize(out.info.size());
  for (size_t t = 0; t < out.tiles.size(); ++t) out.tiles[t] = static_cast<int>(t);
  std::stable_sort(out.tiles.begin(), out.tiles.end(),
                   [&](int a, int b) { return tile_rules[a] > tile_rules[b]; });
  return out;
}

bool BuildMaxRuleLayout(const GrammarView& g, int max_rule_kernel, MaxRuleLayout* out) {
  MaxRuleLayout& m = *out;
  m = MaxRuleLayout();
  constexpr int64_t kChunkWork = 1 << 15;
  // Variants 9, 11, 13 and 14: a base rule with more entries than this gets a chunk of its own
  // (block mode); the others are chunked together for a warp each (variant 7's code). Variant 9
  // (128) puts the test grammars' bigger rules in block mode.
  const bool hybrid = max_rule_kernel >= 9;
  const int warp_entries = max_rule_kernel == 14 ? (1 << 30) : max_rule_kernel == 9 ? 128 : 2048;
  // Variants 13 and 14: warp chunks a quarter the work, for blocks of 64 threads.
  const int64_t warp_chunk_work = max_rule_kernel >= 13 ? kChunkWork / 4 : kChunkWork;
  m.warp_block = max_rule_kernel >= 13 ? 64 : 256;
  // Base rules (A, B, C) in symbol order, as parser/max_rule.cpp's tie order, each one's rules in
  // grammar order.
  const uint64_t symbols = static_cast<uint64_t>(g.num_symbols);
  const std::vector<std::pair<uint64_t, int64_t>> by_base =
      OrderByKey(g.num_binary, symbols * symbols * symbols, [&](int64_t r) {
        const uint64_t a = g.state_symbol[g.binary_parent[r]], b = g.state_symbol[g.binary_left[r]],
                       c = g.state_symbol[g.binary_right[r]];
        return (a * symbols + b) * symbols + c;
      });
  m.chunk_begin = {0};
  m.entry_begin = {0};
  m.entry_rule_begin = {0};
  m.keys.reserve(g.num_binary);
  m.w.reserve(g.num_binary);
  m.entry_a.reserve(g.num_binary);
  m.entry_w.reserve(g.num_binary);
  std::vector<int64_t> list;  // the base rule's rules
  size_t next = 0;            // the next base rule's first entry in by_base
  for (int a = 0; a < g.num_symbols; ++a) {
    int64_t work = 0;
    int chunk_first = static_cast<int>(m.base.size());
    while (next < by_base.size() && by_base[next].first / (symbols * symbols) == uint64_t(a)) {
      const uint64_t key = by_base[next].first;
      const int b = static_cast<int>(key / symbols % symbols), c = static_cast<int>(key % symbols);
      list.clear();
      for (; next < by_base.size() && by_base[next].first == key; ++next)
        list.push_back(by_base[next].second);
      const int s_b = g.symbol_num_substates[b], s_c = g.symbol_num_substates[c];
      const int stride = s_c | 1;
      m.max_q = std::max(m.max_q, s_b * stride);
      const int s_a = g.symbol_num_substates[a];
      m.max_substates = std::max(m.max_substates, s_a);
      const int64_t cube = int64_t(s_a) * s_b * s_c;
      // Dense when at least half of the substate triples are rules.
      const bool is_dense = 2 * int64_t(list.size()) >= cube;
      LayoutInt4 entry{b, c, 0, -1};
      if (is_dense) {
        entry.z = static_cast<int>(m.dense.size());
        m.dense.resize(m.dense.size() + cube, 0.0);
      } else {
        entry.z = static_cast<int>(m.keys.size());
      }
      for (int64_t r : list) {
        const int pa = g.binary_parent[r] - g.symbol_first_state[a];
        const int pb = g.binary_left[r] - g.symbol_first_state[b];
        const int pc = g.binary_right[r] - g.symbol_first_state[c];
        if (is_dense) {
          m.dense[entry.z + (int64_t(pa) * s_b + pb) * s_c + pc] = std::exp(g.binary_log_prob[r]);
        } else {
          m.keys.push_back((pa << 16) | (pb * stride + pc));
          m.w.push_back(std::exp(g.binary_log_prob[r]));
        }
      }
      if (!is_dense) entry.w = static_cast<int>(m.keys.size());
      {
        std::vector<std::array<int, 3>> triples;  // (b, c, rule index in list)
        triples.reserve(list.size());
        for (size_t k = 0; k < list.size(); ++k) {
          triples.push_back({g.binary_left[list[k]] - g.symbol_first_state[b],
                             g.binary_right[list[k]] - g.symbol_first_state[c],
                             static_cast<int>(k)});
        }
        std::sort(triples.begin(), triples.end());
        for (size_t k = 0; k < triples.size(); ++k) {
          if (k == 0 || triples[k][0] != triples[k - 1][0] || triples[k][1] != triples[k - 1][1]) {
            if (k > 0) m.entry_rule_begin.push_back(static_cast<int>(m.entry_a.size()));
            m.entry_bc.push_back((triples[k][0] << 16) | triples[k][1]);
          }
          const int64_t rule = list[triples[k][2]];
          m.entry_a.push_back(g.binary_parent[rule] - g.symbol_first_state[a]);
          m.entry_w.push_back(std::exp(g.binary_log_prob[rule]));
        }
        if (!triples.empty()) m.entry_rule_begin.push_back(static_cast<int>(m.entry_a.size()));
        m.entry_begin.push_back(static_cast<int>(m.entry_bc.size()));
      }
      if (m.dense.size() >= size_t(1) << 31) return false;
      int64_t cost = (is_dense ? cube : int64_t(list.size())) + 8 * int64_t(s_b) * s_c;
      if (hybrid) {
        const int entries = m.entry_begin.back() - m.entry_begin[m.entry_begin.size() - 2];
        if (entries > warp_entries) {  // a chunk of its own, after the pending warp chunk
          const int index = static_cast<int>(m.base.size());
          if (index > chunk_first) m.chunks.push_back({a, chunk_first, index, 1});
          m.chunks.push_back({a, index, index + 1, 0});
          m.base.push_back(entry);
          chunk_first = index + 1;
          work = 0;
          continue;
        }
        cost = int64_t(list.size()) + 8 * int64_t(entries);
      }
      if (work > 0 && work + cost > (hybrid ? warp_chunk_work : kChunkWork)) {
        m.chunks.push_back({a, chunk_first, static_cast<int>(m.base.size()), hybrid ? 1 : 0});
        chunk_first = static_cast<int>(m.base.size());
        work = 0;
      }
      m.base.push_back(entry);
      work += cost;
    }
    if (static_cast<int>(m.base.size()) > chunk_first)
      m.chunks.push_back({a, chunk_first, static_cast<int>(m.base.size()), hybrid ? 1 : 0});
    m.chunk_begin.push_back(static_cast<int>(m.chunks.size()));
  }
  const int num_chunks = static_cast<int>(m.chunks.size());
  for (int k = 0; k < num_chunks && hybrid; ++k)
    (m.chunks[k].w ? m.warp_chunks : m.block_chunks).push_back(k);
  // Variants 13 and 14: each warp chunk's rules taken most entries first (the longest work
  // first, so that a block's warps finish closer together); results do not depend on the order.
  if (max_rule_kernel >= 13) {
    m.warp_order.resize(m.base.size());
    for (size_t k = 0; k < m.base.size(); ++k) m.warp_order[k] = static_cast<int>(k);
    for (int k : m.warp_chunks) {
      std::stable_sort(m.warp_order.begin() + m.chunks[k].y, m.warp_order.begin() + m.chunks[k].z,
                       [&](int x, int y) {
                         return m.entry_begin[x + 1] - m.entry_begin[x] >
                                m.entry_begin[y + 1] - m.entry_begin[y];
                       });
    }
  }
  // Keys hold b * stride + c in 16 bits; Q and the split candidates share a block's memory.
  if (num_chunks > 65535 || m.max_q >= (1 << 16)) return false;

  // Unary pairs (A, C) in symbol order (parser/max_rule.cpp's tie order).
  std::map<std::pair<int, int>, std::vector<int64_t>> by_pair;
  for (int64_t u = 0; u < g.num_sum_unary; ++u) {
    const int a = g.state_symbol[g.sum_unary_parent[u]], c = g.state_symbol[g.sum_unary_child[u]];
    if (a != c) by_pair[{a, c}].push_back(u);
  }
  m.pair_begin = {0};
  m.pair_rule_begin = {0};
  auto pit = by_pair.begin();
  for (int a = 0; a < g.num_symbols; ++a) {
    for (; pit != by_pair.end() && pit->first.first == a; ++pit) {
      m.pair_symbols.push_back({a, pit->first.second});
      for (int64_t u : pit->second) {
        m.pu_parent.push_back(g.sum_unary_parent[u]);
        m.pu_child.push_back(g.sum_unary_child[u]);
        m.pu_w.push_back(std::exp(g.sum_unary_log_prob[u]));
      }
      m.pair_rule_begin.push_back(static_cast<int>(m.pu_parent.size()));
    }
    m.pair_begin.push_back(static_cast<int>(m.pair_symbols.size()));
  }
  return true;
}

std::vector<int32_t> BaseRuleSymbols(const MaxRuleLayout& m) {
  std::vector<int32_t> symbols(3 * m.base.size());
  for (const LayoutInt4& chunk : m.chunks) {
    for (int r = chunk.y; r < chunk.z; ++r) {
      symbols[3 * r] = chunk.x;
      symbols[3 * r + 1] = m.base[r].x;
      symbols[3 * r + 2] = m.base[r].y;
    }
  }
  return symbols;
}

std::vector<int32_t> UnaryPairSymbols(const MaxRuleLayout& m) {
  std::vector<int32_t> symbols;
  for (const LayoutInt2& pair : m.pair_symbols) symbols.insert(symbols.end(), {pair.x, pair.y});
  return symbols;
}

bool BuildProductLayout(const std::vector<const std::vector<int32_t>*>& base_symbols,
                        const std::vector<const std::vector<int32_t>*>& pair_symbols,
                        const std::vector<std::vector<int32_t>>& member_symbol, int num_symbols,
                        int chunk_rules, ProductLayout* out, std::string* error) {
  ProductLayout& p = *out;
  p = ProductLayout();
  const size_t members = base_symbols.size();
  if (members == 0 || pair_symbols.size() != members || member_symbol.size() != members) {
    *error = "a product layout needs each grammar's base rules, unary pairs and symbol map";
    return false;
  }
  for (size_t k = 0; k < members; ++k) {
    if (member_symbol[k].size() != size_t(num_symbols)) {
      *error = "grammar " + std::to_string(k + 1) + "'s symbol map has the wrong size";
      return false;
    }
  }
  // Each grammar's base rules and pairs by their symbols.
  std::vector<std::map<std::array<int32_t, 3>, int>> base_index(members);
  std::vector<std::map<std::pair<int32_t, int32_t>, int>> pair_index(members);
  for (size_t k = 0; k < members; ++k) {
    const std::vector<int32_t>& b = *base_symbols[k];
    for (size_t r = 0; r + 2 < b.size(); r += 3) base_index[k][{b[r], b[r + 1], b[r + 2]}] = r / 3;
    const std::vector<int32_t>& q = *pair_symbols[k];
    for (size_t r = 0; r + 1 < q.size(); r += 2) pair_index[k][{q[r], q[r + 1]}] = r / 2;
  }
  const std::vector<int32_t>& b0 = *base_symbols[0];
  const std::vector<int32_t>& q0 = *pair_symbols[0];
  // Grammar k's rule (or pair) of product symbols `symbols`, for every k; false when one lacks it.
  std::vector<int> each(members);
  auto find_all = [&](auto& index, auto key_of) {
    for (size_t k = 0; k < members; ++k) {
      auto it = index[k].find(key_of(member_symbol[k]));
      if (it == index[k].end()) return false;
      each[k] = it->second;
    }
    return true;
  };
  size_t r = 0, q = 0;
  p.chunk_begin = {0};
  p.pair_begin = {0};
  for (int a = 0; a < num_symbols; ++a) {
    int in_chunk = 0;
    for (; 3 * r + 2 < b0.size() && b0[3 * r] == a; ++r) {
      const int32_t left = b0[3 * r + 1], right = b0[3 * r + 2];
      if (!find_all(base_index, [&](const std::vector<int32_t>& to) {
            return std::array<int32_t, 3>{to[a], to[left], to[right]};
          })) {
        continue;
      }
      const int index = static_cast<int>(p.rules.size());
      if (in_chunk == 0 || in_chunk == chunk_rules) {
        p.chunks.push_back({a, index, index, 0});
        in_chunk = 0;
      }
      ++p.chunks.back().z;
      ++in_chunk;
      p.rules.push_back({left, right, a, 0});
      p.rule_member.insert(p.rule_member.end(), each.begin(), each.end());
    }
    p.chunk_begin.push_back(static_cast<int>(p.chunks.size()));
    for (; 2 * q + 1 < q0.size() && q0[2 * q] == a; ++q) {
      const int32_t child = q0[2 * q + 1];
      if (!find_all(pair_index, [&](const std::vector<int32_t>& to) {
            return std::pair<int32_t, int32_t>{to[a], to[child]};
          })) {
        continue;
      }
      p.pairs.push_back({a, child});
      p.pair_member.insert(p.pair_member.end(), each.begin(), each.end());
    }
    p.pair_begin.push_back(static_cast<int>(p.pairs.size()));
  }
  if (3 * r != b0.size() || 2 * q != q0.size()) {
    *error = "grammar 1's base rules or unary pairs are not in parent symbol order";
    return false;
  }
  return true;
}

}  // namespace cky::cuda
