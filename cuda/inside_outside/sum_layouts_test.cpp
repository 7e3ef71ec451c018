// The pair-sum and max-rule layouts hold every rule once, in the order and the limits that the
// kernels of inside_outside.cu assume. Host code only: runs without a device.
#include "cuda/inside_outside/sum_layouts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <tuple>

namespace cky::cuda {
namespace {

// A random split grammar as GrammarView: symbol 0 (ROOT) has one substate, the others
// 1 to max_substates; a share of the (A, B, C) base triples are rules, each with a random share of
// its substate triples. Binary rules are sorted by (parent, left, right), sum unaries by
// (parent, child).
struct RandomSumGrammar {
  std::vector<int32_t> state_symbol, first_state, substates;
  std::vector<int32_t> parent, left, right, unary_parent, unary_child;
  std::vector<double> log_prob, unary_log_prob;

  RandomSumGrammar(int symbols, int max_substates, double base_density, uint64_t seed) {
    std::mt19937_64 random(seed);
    std::uniform_real_distribution<double> unit(0, 1);
    for (int s = 0; s < symbols; ++s) {
      first_state.push_back(static_cast<int32_t>(state_symbol.size()));
      substates.push_back(s == 0 ? 1 : 1 + static_cast<int>(random() % max_substates));
      state_symbol.insert(state_symbol.end(), substates.back(), s);
    }
    for (int a = 0; a < symbols; ++a) {
      for (int b = 1; b < symbols; ++b) {
        for (int c = 1; c < symbols; ++c) {
          if (unit(random) >= base_density) continue;
          const double keep = unit(random);  // dense base rules and sparse ones
          for (int x = 0; x < substates[a]; ++x)
            for (int y = 0; y < substates[b]; ++y)
              for (int z = 0; z < substates[c]; ++z) {
                if (unit(random) >= keep) continue;
                parent.push_back(first_state[a] + x);
                left.push_back(first_state[b] + y);
                right.push_back(first_state[c] + z);
                log_prob.push_back(std::log(unit(random) + 1e-3));
              }
        }
      }
    }
    // Sorted by (parent, left, right): the loops above go by symbol, then substate.
    std::vector<size_t> order(parent.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t i, size_t j) {
      return std::tie(parent[i], left[i], right[i]) < std::tie(parent[j], left[j], right[j]);
    });
    auto permute = [&](auto& v) {
      auto copy = v;
      for (size_t i = 0; i < order.size(); ++i) v[i] = copy[order[i]];
    };
    permute(parent), permute(left), permute(right), permute(log_prob);
    const int states = static_cast<int>(state_symbol.size());
    for (int p = 0; p < states; ++p)
      for (int c = 0; c < states; ++c)
        if (unit(random) < 0.05) {
          unary_parent.push_back(p);
          unary_child.push_back(c);
          unary_log_prob.push_back(std::log(unit(random) + 1e-3));
        }
  }

  GrammarView view() const {
    GrammarView g;
    g.num_states = static_cast<int32_t>(state_symbol.size());
    g.num_symbols = static_cast<int32_t>(substates.size());
    g.state_symbol = state_symbol.data();
    g.symbol_first_state = first_state.data();
    g.symbol_num_substates = substates.data();
    g.num_binary = static_cast<int64_t>(parent.size());
    g.binary_parent = parent.data();
    g.binary_left = left.data();
    g.binary_right = right.data();
    g.binary_log_prob = log_prob.data();
    g.num_sum_unary = static_cast<int64_t>(unary_parent.size());
    g.sum_unary_parent = unary_parent.data();
    g.sum_unary_child = unary_child.data();
    g.sum_unary_log_prob = unary_log_prob.data();
    return g;
  }
};

using Rule = std::tuple<int, int, int, double>;  // (partner X, partner Y, target, probability)

std::vector<Rule> PassRules(const GrammarView& g, PairSumPass pass) {
  std::vector<Rule> rules;
  for (int64_t r = 0; r < g.num_binary; ++r) {
    const int a = g.binary_parent[r], b = g.binary_left[r], c = g.binary_right[r];
    const double p = std::exp(g.binary_log_prob[r]);
    if (pass == PairSumPass::kInside) rules.emplace_back(b, c, a, p);
    if (pass == PairSumPass::kOutLeft) rules.emplace_back(a, c, b, p);
    if (pass == PairSumPass::kOutRight) rules.emplace_back(a, b, c, p);
  }
  std::sort(rules.begin(), rules.end());
  return rules;
}

void ExpectValidPairSumLayout(const GrammarView& g, PairSumPass pass, double sparse_below = 0) {
  const PairSumLayout layout =
      BuildPairSumLayout(g, pass, PairWeights::kProbabilities, sparse_below);
  const size_t tiles = layout.info.size();
  ASSERT_EQ(layout.symbols.size(), tiles);
  ASSERT_EQ(layout.pl_begin.size(), tiles + 1);
  ASSERT_EQ(layout.pl_rule_begin.size(), layout.pl_target.size() + 1);
  ASSERT_EQ(layout.key.size(), layout.w.size());
  std::vector<Rule> rules;
  std::vector<int> rules_in_tile(tiles);
  int max_bc = 0;
  for (size_t i = 0; i < tiles; ++i) {
    const LayoutInt4 info = layout.info[i];  // first X state, X substates, first Y state, Y's
    const int x_sym = g.state_symbol[info.x], y_sym = g.state_symbol[info.z];
    EXPECT_EQ(layout.symbols[i].x, x_sym);
    EXPECT_EQ(layout.symbols[i].y, y_sym);
    EXPECT_EQ(info.z, g.symbol_first_state[y_sym]);
    EXPECT_EQ(info.w, g.symbol_num_substates[y_sym]);
    EXPECT_LE(info.x + info.y, g.symbol_first_state[x_sym] + g.symbol_num_substates[x_sym]);
    // A band of X's substates of at most kBandLimit pairs (one substate row at least).
    EXPECT_TRUE(info.y * info.w <= kBandLimit || info.y == 1) << "tile " << i;
    max_bc = std::max(max_bc, info.y * info.w);
    // A sparse tile's pairs: ascending, each used by a rule, fewer than sparse_below of the tile's.
    const int used_first = layout.used_begin.empty() ? 0 : layout.used_begin[i];
    const int used = layout.used_begin.empty() ? 0 : layout.used_begin[i + 1] - used_first;
    std::vector<int> pairs_read;
    for (int u = 1; u < used; ++u)
      EXPECT_LT(layout.used_key[used_first + u - 1], layout.used_key[used_first + u]);
    int previous_count = 1 << 30, previous_target = -1;
    for (int t = layout.pl_begin[i]; t < layout.pl_begin[i + 1]; ++t) {
      const int target = layout.pl_target[t];
      const int count = layout.pl_rule_begin[t + 1] - layout.pl_rule_begin[t];
      EXPECT_GT(count, 0);
      // Targets with the most rules first, then by state.
      EXPECT_TRUE(count < previous_count || (count == previous_count && target > previous_target))
          << "tile " << i << " target " << target;
      previous_count = count, previous_target = target;
      rules_in_tile[i] += count;
      for (int k = layout.pl_rule_begin[t]; k < layout.pl_rule_begin[t + 1]; ++k) {
        int pair = layout.key[k];
        if (used > 0) {
          EXPECT_LT(layout.key[k], used);
          pair = layout.used_key[used_first + layout.key[k]];
        }
        const int x = info.x + pair / info.w, y = info.z + pair % info.w;
        EXPECT_LT(pair, info.y * info.w);
        pairs_read.push_back(pair);
        rules.emplace_back(x, y, target, layout.w[k]);
      }
    }
    std::sort(pairs_read.begin(), pairs_read.end());
    pairs_read.erase(std::unique(pairs_read.begin(), pairs_read.end()), pairs_read.end());
    const bool sparse = double(pairs_read.size()) < sparse_below * info.y * info.w;
    EXPECT_EQ(used > 0, sparse) << "tile " << i;
    if (used > 0) {
      EXPECT_EQ(std::vector<int>(layout.used_key.begin() + used_first,
                                 layout.used_key.begin() + used_first + used),
                pairs_read)
          << "tile " << i;
    }
  }
  if (sparse_below == 0) EXPECT_TRUE(layout.used_begin.empty() && layout.used_key.empty());
  EXPECT_EQ(layout.max_bc, max_bc);
  std::sort(rules.begin(), rules.end());
  EXPECT_EQ(rules, PassRules(g, pass)) << "every rule once";
  // Tiles listed most rules first, each once.
  std::vector<int> seen(tiles, 0);
  for (size_t k = 0; k < layout.tiles.size(); ++k) {
    ASSERT_LT(size_t(layout.tiles[k]), tiles);
    ++seen[layout.tiles[k]];
    if (k > 0) EXPECT_GE(rules_in_tile[layout.tiles[k - 1]], rules_in_tile[layout.tiles[k]]);
  }
  EXPECT_EQ(seen, std::vector<int>(tiles, 1));
}

void ExpectValidMaxRuleLayout(const GrammarView& g, int kernel) {
  MaxRuleLayout m;
  ASSERT_TRUE(BuildMaxRuleLayout(g, kernel, &m));
  const int bases = static_cast<int>(m.base.size());
  ASSERT_EQ(m.entry_begin.size(), size_t(bases) + 1);
  ASSERT_EQ(m.chunk_begin.size(), size_t(g.num_symbols) + 1);
  // Chunks: each parent symbol's, in order, covering the base rules once.
  int next_base = 0;
  for (int a = 0; a < g.num_symbols; ++a) {
    for (int k = m.chunk_begin[a]; k < m.chunk_begin[a + 1]; ++k) {
      EXPECT_EQ(m.chunks[k].x, a);
      EXPECT_EQ(m.chunks[k].y, next_base);
      EXPECT_GT(m.chunks[k].z, m.chunks[k].y);
      next_base = m.chunks[k].z;
    }
  }
  EXPECT_EQ(next_base, bases);
  // Every rule once, from the sparse keys or the dense blocks, under its base rule (A, B, C) in
  // symbol order; and the same rules from the entries.
  std::vector<std::tuple<int, int, int, double>> from_keys, from_entries, want;
  std::tuple<int, int, int> previous{-1, -1, -1};
  for (int a = 0; a < g.num_symbols; ++a) {
    for (int k = m.chunk_begin[a]; k < m.chunk_begin[a + 1]; ++k) {
      for (int i = m.chunks[k].y; i < m.chunks[k].z; ++i) {
        const LayoutInt4 base = m.base[i];
        const int b = base.x, c = base.y;
        EXPECT_LT(previous, std::make_tuple(a, b, c));
        previous = {a, b, c};
        const int fa = g.symbol_first_state[a], fb = g.symbol_first_state[b],
                  fc = g.symbol_first_state[c];
        const int s_a = g.symbol_num_substates[a], s_b = g.symbol_num_substates[b],
                  s_c = g.symbol_num_substates[c];
        const int stride = s_c | 1;
        EXPECT_LE(s_b * stride, m.max_q);
        if (base.w < 0) {  // dense
          for (int pa = 0; pa < s_a; ++pa)
            for (int pb = 0; pb < s_b; ++pb)
              for (int pc = 0; pc < s_c; ++pc) {
                const double p = m.dense[base.z + (int64_t(pa) * s_b + pb) * s_c + pc];
                if (p != 0) from_keys.emplace_back(fa + pa, fb + pb, fc + pc, p);
              }
        } else {
          for (int k2 = base.z; k2 < base.w; ++k2) {
            const int pa = m.keys[k2] >> 16, bc = m.keys[k2] & 0xffff;
            from_keys.emplace_back(fa + pa, fb + bc / stride, fc + bc % stride, m.w[k2]);
          }
        }
        int previous_bc = -1;
        for (int e = m.entry_begin[i]; e < m.entry_begin[i + 1]; ++e) {
          EXPECT_GT(m.entry_bc[e], previous_bc) << "distinct (b, c), in order";
          previous_bc = m.entry_bc[e];
          for (int r = m.entry_rule_begin[e]; r < m.entry_rule_begin[e + 1]; ++r) {
            from_entries.emplace_back(fa + m.entry_a[r], fb + (m.entry_bc[e] >> 16),
                                      fc + (m.entry_bc[e] & 0xffff), m.entry_w[r]);
          }
        }
      }
    }
  }
  for (int64_t r = 0; r < g.num_binary; ++r) {
    want.emplace_back(g.binary_parent[r], g.binary_left[r], g.binary_right[r],
                      std::exp(g.binary_log_prob[r]));
  }
  std::sort(want.begin(), want.end());
  std::sort(from_keys.begin(), from_keys.end());
  std::sort(from_entries.begin(), from_entries.end());
  EXPECT_EQ(from_keys, want);
  EXPECT_EQ(from_entries, want);
  // Hybrid kernels: every chunk is a block chunk of one base rule or a warp chunk; kernels 13 and
  // 14 take each warp chunk's rules most entries first.
  if (kernel >= 9) {
    EXPECT_EQ(m.block_chunks.size() + m.warp_chunks.size(), m.chunks.size());
    for (int k : m.block_chunks) EXPECT_EQ(m.chunks[k].z - m.chunks[k].y, 1);
  }
  if (kernel >= 13) {
    ASSERT_EQ(m.warp_order.size(), size_t(bases));
    for (int k : m.warp_chunks) {
      std::vector<int> in_chunk(m.warp_order.begin() + m.chunks[k].y,
                                m.warp_order.begin() + m.chunks[k].z);
      for (size_t j = 1; j < in_chunk.size(); ++j) {
        const auto entries = [&](int i) { return m.entry_begin[i + 1] - m.entry_begin[i]; };
        EXPECT_GE(entries(in_chunk[j - 1]), entries(in_chunk[j]));
      }
      std::sort(in_chunk.begin(), in_chunk.end());
      for (size_t j = 0; j < in_chunk.size(); ++j) EXPECT_EQ(in_chunk[j], m.chunks[k].y + int(j));
    }
  }
  // Unary base pairs (A, C), A != C, in symbol order, each unary rule once.
  std::vector<std::tuple<int, int, double>> unaries, want_unaries;
  for (int a = 0; a < g.num_symbols; ++a) {
    for (int i = m.pair_begin[a]; i < m.pair_begin[a + 1]; ++i) {
      EXPECT_EQ(m.pair_symbols[i].x, a);
      EXPECT_NE(m.pair_symbols[i].y, a);
      for (int r = m.pair_rule_begin[i]; r < m.pair_rule_begin[i + 1]; ++r) {
        EXPECT_EQ(g.state_symbol[m.pu_parent[r]], a);
        EXPECT_EQ(g.state_symbol[m.pu_child[r]], m.pair_symbols[i].y);
        unaries.emplace_back(m.pu_parent[r], m.pu_child[r], m.pu_w[r]);
      }
    }
  }
  for (int64_t u = 0; u < g.num_sum_unary; ++u) {
    if (g.state_symbol[g.sum_unary_parent[u]] == g.state_symbol[g.sum_unary_child[u]]) continue;
    want_unaries.emplace_back(g.sum_unary_parent[u], g.sum_unary_child[u],
                              std::exp(g.sum_unary_log_prob[u]));
  }
  std::sort(unaries.begin(), unaries.end());
  std::sort(want_unaries.begin(), want_unaries.end());
  EXPECT_EQ(unaries, want_unaries);
}

// Each sparse base rule's rules in grammar order, which for a RandomSumGrammar (rules made in
// substate order) is ascending key order.
void ExpectSparseRulesInGrammarOrder(const GrammarView& g) {
  MaxRuleLayout m;
  ASSERT_TRUE(BuildMaxRuleLayout(g, 13, &m));
  int sparse = 0;
  for (const LayoutInt4& base : m.base) {
    if (base.w < 0) continue;
    ++sparse;
    for (int k = base.z + 1; k < base.w; ++k) EXPECT_LT(m.keys[k - 1], m.keys[k]);
  }
  EXPECT_GT(sparse, 0);
}

TEST(SumLayoutsTest, PairSumLayoutsHoldEveryRuleOnceInTheKernelsOrder) {
  // Up to 8 substates a symbol (one band a tile), and up to 40 (several bands).
  for (const auto& [substates, seed] : {std::pair{8, 1}, {40, 2}}) {
    const RandomSumGrammar grammar(7, substates, 0.3, seed);
    SCOPED_TRACE("substates " + std::to_string(substates));
    ASSERT_GT(grammar.parent.size(), 100u);
    for (PairSumPass pass : {PairSumPass::kInside, PairSumPass::kOutLeft, PairSumPass::kOutRight})
      ExpectValidPairSumLayout(grammar.view(), pass);
  }
}

// Tiles whose rules use few of their substate pairs list those (the max-plus kernels form only
// them); the others stay dense.
TEST(SumLayoutsTest, SparseTilesListTheSubstatePairsTheirRulesUse) {
  const RandomSumGrammar grammar(7, 12, 0.3, 8);
  for (PairSumPass pass : {PairSumPass::kInside, PairSumPass::kOutLeft, PairSumPass::kOutRight}) {
    for (double below : {0.5, 2.0}) ExpectValidPairSumLayout(grammar.view(), pass, below);
  }
  const PairSumLayout half =
      BuildPairSumLayout(grammar.view(), PairSumPass::kInside, PairWeights::kLogProbabilities, 0.5);
  ASSERT_EQ(half.used_begin.size(), half.info.size() + 1);
  int sparse = 0;
  for (size_t t = 0; t < half.info.size(); ++t)
    sparse += half.used_begin[t + 1] > half.used_begin[t];
  EXPECT_GT(sparse, 0);
  EXPECT_LT(sparse, int(half.info.size())) << "some tiles dense";
}

TEST(SumLayoutsTest, SeveralBandsWhenAPartnerHasManySubstates) {
  const RandomSumGrammar grammar(7, 40, 0.3, 2);
  const PairSumLayout layout = BuildPairSumLayout(grammar.view(), PairSumPass::kInside);
  int split = 0;  // tiles with fewer X substates than their symbol has
  for (const LayoutInt4& info : layout.info)
    split += info.y < grammar.substates[grammar.state_symbol[info.x]];
  EXPECT_GT(split, 0);
}

// Groups of 1 to 4 consecutive substates (as a coarser level of a split hierarchy makes them).
std::vector<int32_t> GroupsOfSubstates(const RandomSumGrammar& grammar, int32_t* num_groups) {
  std::vector<int32_t> group_of;
  int32_t groups = 0;
  for (size_t s = 0; s < grammar.substates.size(); ++s) {
    for (int k = 0; k < grammar.substates[s]; ++k) {
      if (k % 4 == 0) ++groups;
      group_of.push_back(groups - 1);
    }
  }
  *num_groups = groups;
  return group_of;
}

TEST(SumLayoutsTest, PairLayoutsTiledByStateGroups) {
  const RandomSumGrammar grammar(7, 12, 0.3, 5);
  int32_t num_groups = 0;
  const std::vector<int32_t> group_of = GroupsOfSubstates(grammar, &num_groups);
  ASSERT_GT(num_groups, 7);
  const std::optional<StateGroups> groups =
      GroupStates(grammar.view(), group_of.data(), num_groups);
  ASSERT_TRUE(groups.has_value());
  EXPECT_EQ(groups->num_groups(), num_groups);
  EXPECT_EQ(groups->state_group, group_of);
  for (int32_t group = 0; group < num_groups; ++group) {
    const int32_t first = groups->first_state[group], count = groups->num_states[group];
    ASSERT_GT(count, 0);
    for (int32_t s = first; s < first + count; ++s) EXPECT_EQ(group_of[s], group);
  }
  // The layout over the groups as symbols holds every rule once, each tile inside one group pair.
  const GrammarView view = groups->AsSymbols(grammar.view());
  for (PairSumPass pass : {PairSumPass::kInside, PairSumPass::kOutLeft, PairSumPass::kOutRight})
    ExpectValidPairSumLayout(view, pass);
  EXPECT_GT(BuildPairSumLayout(view, PairSumPass::kInside).info.size(),
            BuildPairSumLayout(grammar.view(), PairSumPass::kInside).info.size());
}

TEST(SumLayoutsTest, StateGroupsThatTheTilesCannotTakeAreRefused) {
  const RandomSumGrammar grammar(7, 12, 0.3, 5);
  const GrammarView g = grammar.view();
  int32_t num_groups = 0;
  const std::vector<int32_t> good = GroupsOfSubstates(grammar, &num_groups);
  // The symbols themselves: nothing finer.
  EXPECT_FALSE(GroupStates(g, grammar.state_symbol.data(), g.num_symbols).has_value());
  // A group across two symbols (ROOT's one state joined to symbol 1's first group).
  std::vector<int32_t> across = good;
  for (int32_t& group : across) group = std::max(0, group - 1);
  EXPECT_FALSE(GroupStates(g, across.data(), num_groups - 1).has_value());
  // A group whose states are not consecutive: the last state of a symbol's first group and the
  // first of its second swap groups.
  std::vector<int32_t> apart = good;
  int32_t symbol = 1;
  while (symbol < g.num_symbols && g.symbol_num_substates[symbol] <= 4) ++symbol;
  ASSERT_LT(symbol, g.num_symbols) << "needs a symbol of two groups";
  const int32_t boundary = g.symbol_first_state[symbol] + 4;
  std::swap(apart[boundary - 1], apart[boundary]);
  EXPECT_FALSE(GroupStates(g, apart.data(), num_groups).has_value());
  // An empty group, one out of range, more than the live lists take.
  EXPECT_FALSE(GroupStates(g, good.data(), num_groups + 1).has_value());
  std::vector<int32_t> outside = good;
  outside[0] = num_groups;
  EXPECT_FALSE(GroupStates(g, outside.data(), num_groups).has_value());
  const RandomSumGrammar big(250, 8, 0.00001, 6);
  int32_t big_groups = 0;
  const std::vector<int32_t> many = GroupsOfSubstates(big, &big_groups);
  ASSERT_GT(big_groups, kMaxPairSymbols);
  EXPECT_FALSE(GroupStates(big.view(), many.data(), big_groups).has_value());
  EXPECT_FALSE(GroupStates(g, nullptr, num_groups).has_value());
}

TEST(SumLayoutsTest, MaxRuleLayoutsHoldEveryRuleOnceForEveryKernel) {
  // Dense base rules: small symbols with most triples; sparse ones: big symbols.
  for (const auto& [substates, seed] : {std::pair{3, 3}, {12, 4}}) {
    const RandomSumGrammar grammar(7, substates, 0.4, seed);
    for (int kernel : {1, 2, 7, 9, 11, 13, 14}) {
      SCOPED_TRACE("substates " + std::to_string(substates) + ", kernel " + std::to_string(kernel));
      ExpectValidMaxRuleLayout(grammar.view(), kernel);
    }
    if (substates == 12) ExpectSparseRulesInGrammarOrder(grammar.view());
  }
}

// With many symbols the symbol triples outnumber the rules: the layouts order their rules with a
// comparison sort instead of a counting sort, and must hold the same order.
TEST(SumLayoutsTest, LayoutsOfAGrammarWithManySymbols) {
  const RandomSumGrammar grammar(180, 2, 0.0005, 7);
  ASSERT_GT(grammar.parent.size(), 1000u);
  ASSERT_GT(180u * 180u * 180u, 4 * grammar.parent.size());
  for (PairSumPass pass : {PairSumPass::kInside, PairSumPass::kOutLeft, PairSumPass::kOutRight})
    ExpectValidPairSumLayout(grammar.view(), pass);
  for (int kernel : {2, 13}) {
    SCOPED_TRACE("kernel " + std::to_string(kernel));
    ExpectValidMaxRuleLayout(grammar.view(), kernel);
  }
  ExpectSparseRulesInGrammarOrder(grammar.view());
}

TEST(SumLayoutsTest, AGrammarBeyondTheKernelsLimitsIsRefused) {
  // Q = s_B * (s_C | 1) must stay under 2^16: 300 substates give 300 * 301.
  const RandomSumGrammar small(3, 2, 1.0, 5);
  RandomSumGrammar big = small;
  big.substates.assign(big.substates.size(), 300);
  big.state_symbol.clear();
  big.first_state.clear();
  for (size_t s = 0; s < big.substates.size(); ++s) {
    big.first_state.push_back(static_cast<int32_t>(big.state_symbol.size()));
    big.state_symbol.insert(big.state_symbol.end(), 300, static_cast<int32_t>(s));
  }
  MaxRuleLayout m;
  EXPECT_TRUE(BuildMaxRuleLayout(small.view(), 13, &m));
  EXPECT_FALSE(BuildMaxRuleLayout(big.view(), 13, &m));
}

// A product layout of `grammars` (each one's max-rule layout, its symbols renamed to grammar
// k's by member_symbol[k]) holds, in grammar 0's order, exactly grammar 0's base rules and unary
// pairs that every grammar has, each grammar's index of it naming the same (mapped) symbols; chunks
// of at most chunk_rules rules of one parent symbol cover the rules in order, grouped by parent
// from chunk_begin, and pairs by parent from pair_begin.
void ExpectValidProductLayout(const std::vector<std::vector<int32_t>>& bases,
                              const std::vector<std::vector<int32_t>>& pairs,
                              const std::vector<std::vector<int32_t>>& member_symbol,
                              int num_symbols, int chunk_rules) {
  const size_t members = bases.size();
  std::vector<const std::vector<int32_t>*> base_ptrs, pair_ptrs;
  for (size_t k = 0; k < members; ++k)
    base_ptrs.push_back(&bases[k]), pair_ptrs.push_back(&pairs[k]);
  ProductLayout p;
  std::string error;
  ASSERT_TRUE(
      BuildProductLayout(base_ptrs, pair_ptrs, member_symbol, num_symbols, chunk_rules, &p, &error))
      << error;
  // Expected: grammar 0's rules every grammar has, by brute force.
  std::vector<std::array<int32_t, 3>> want_rules;
  for (size_t r = 0; r < bases[0].size() / 3; ++r) {
    const int32_t a = bases[0][3 * r], b = bases[0][3 * r + 1], c = bases[0][3 * r + 2];
    bool all = true;
    for (size_t k = 1; k < members && all; ++k) {
      bool found = false;
      for (size_t q = 0; q < bases[k].size() / 3 && !found; ++q) {
        found = bases[k][3 * q] == member_symbol[k][a] &&
                bases[k][3 * q + 1] == member_symbol[k][b] &&
                bases[k][3 * q + 2] == member_symbol[k][c];
      }
      all = found;
    }
    if (all) want_rules.push_back({a, b, c});
  }
  std::vector<std::array<int32_t, 3>> rules;
  ASSERT_EQ(p.rule_member.size(), p.rules.size() * members);
  for (size_t r = 0; r < p.rules.size(); ++r) {
    const LayoutInt4& rule = p.rules[r];
    rules.push_back({rule.z, rule.x, rule.y});
    for (size_t k = 0; k < members; ++k) {
      const int m = p.rule_member[r * members + k];
      ASSERT_GE(m, 0);
      ASSERT_LT(size_t(m), bases[k].size() / 3);
      EXPECT_EQ(bases[k][3 * m], member_symbol[k][rule.z]) << "rule " << r << ", grammar " << k;
      EXPECT_EQ(bases[k][3 * m + 1], member_symbol[k][rule.x]) << "rule " << r << ", grammar " << k;
      EXPECT_EQ(bases[k][3 * m + 2], member_symbol[k][rule.y]) << "rule " << r << ", grammar " << k;
    }
  }
  EXPECT_EQ(rules, want_rules);
  // Chunks.
  ASSERT_EQ(p.chunk_begin.size(), size_t(num_symbols) + 1);
  int next = 0;
  for (int a = 0; a < num_symbols; ++a) {
    for (int c = p.chunk_begin[a]; c < p.chunk_begin[a + 1]; ++c) {
      const LayoutInt4& chunk = p.chunks[c];
      EXPECT_EQ(chunk.x, a);
      EXPECT_EQ(chunk.y, next);
      EXPECT_GT(chunk.z, chunk.y);
      EXPECT_LE(chunk.z - chunk.y, chunk_rules);
      for (int r = chunk.y; r < chunk.z; ++r) EXPECT_EQ(p.rules[r].z, a);
      next = chunk.z;
    }
  }
  EXPECT_EQ(next, static_cast<int>(p.rules.size()));
  EXPECT_EQ(p.chunk_begin.back(), static_cast<int>(p.chunks.size()));
  // Unary pairs.
  std::vector<std::pair<int32_t, int32_t>> want_pairs, got_pairs;
  for (size_t q = 0; q < pairs[0].size() / 2; ++q) {
    const int32_t a = pairs[0][2 * q], c = pairs[0][2 * q + 1];
    bool all = true;
    for (size_t k = 1; k < members && all; ++k) {
      bool found = false;
      for (size_t u = 0; u < pairs[k].size() / 2 && !found; ++u)
        found =
            pairs[k][2 * u] == member_symbol[k][a] && pairs[k][2 * u + 1] == member_symbol[k][c];
      all = found;
    }
    if (all) want_pairs.emplace_back(a, c);
  }
  ASSERT_EQ(p.pair_member.size(), p.pairs.size() * members);
  ASSERT_EQ(p.pair_begin.size(), size_t(num_symbols) + 1);
  for (int a = 0; a < num_symbols; ++a) {
    for (int q = p.pair_begin[a]; q < p.pair_begin[a + 1]; ++q) {
      EXPECT_EQ(p.pairs[q].x, a);
      got_pairs.emplace_back(p.pairs[q].x, p.pairs[q].y);
      for (size_t k = 0; k < members; ++k) {
        const int m = p.pair_member[q * members + k];
        ASSERT_GE(m, 0);
        EXPECT_EQ(pairs[k][2 * m], member_symbol[k][p.pairs[q].x]);
        EXPECT_EQ(pairs[k][2 * m + 1], member_symbol[k][p.pairs[q].y]);
      }
    }
  }
  EXPECT_EQ(got_pairs, want_pairs);
}

TEST(SumLayoutsTest, ProductLayoutsHoldTheRulesEveryGrammarHas) {
  constexpr int kSymbols = 7;
  const RandomSumGrammar a(kSymbols, 4, 0.5, 6), b(kSymbols, 3, 0.5, 7);
  MaxRuleLayout la, lb;
  ASSERT_TRUE(BuildMaxRuleLayout(a.view(), 13, &la));
  ASSERT_TRUE(BuildMaxRuleLayout(b.view(), 13, &lb));
  // Grammar b with its symbols renamed (ROOT stays 0): its lists in its own numbering, sorted.
  const std::vector<int32_t> rename = {0, 3, 1, 6, 2, 5, 4};
  std::vector<std::array<int32_t, 3>> renamed;
  const std::vector<int32_t> b_base = BaseRuleSymbols(lb);
  for (size_t r = 0; r < b_base.size() / 3; ++r)
    renamed.push_back(
        {rename[b_base[3 * r]], rename[b_base[3 * r + 1]], rename[b_base[3 * r + 2]]});
  std::sort(renamed.begin(), renamed.end());
  std::vector<int32_t> b_renamed;
  for (const auto& t : renamed) b_renamed.insert(b_renamed.end(), t.begin(), t.end());
  std::vector<std::pair<int32_t, int32_t>> renamed_pairs;
  const std::vector<int32_t> b_pairs = UnaryPairSymbols(lb);
  for (size_t q = 0; q < b_pairs.size() / 2; ++q)
    renamed_pairs.emplace_back(rename[b_pairs[2 * q]], rename[b_pairs[2 * q + 1]]);
  std::sort(renamed_pairs.begin(), renamed_pairs.end());
  std::vector<int32_t> b_pairs_renamed;
  for (const auto& [x, y] : renamed_pairs) b_pairs_renamed.insert(b_pairs_renamed.end(), {x, y});
  std::vector<int32_t> identity(kSymbols);
  for (int s = 0; s < kSymbols; ++s) identity[s] = s;
  const std::vector<int32_t> a_base = BaseRuleSymbols(la), a_pairs = UnaryPairSymbols(la);
  ASSERT_GT(a_base.size(), 30u);
  for (int chunk_rules : {1, 3, 16}) {
    SCOPED_TRACE("chunks of " + std::to_string(chunk_rules));
    // One grammar: all its rules.
    ExpectValidProductLayout({a_base}, {a_pairs}, {identity}, kSymbols, chunk_rules);
    // Two, and the second renamed: the rules both have.
    ExpectValidProductLayout({a_base, b_base}, {a_pairs, b_pairs}, {identity, identity}, kSymbols,
                             chunk_rules);
    ExpectValidProductLayout({a_base, b_renamed}, {a_pairs, b_pairs_renamed}, {identity, rename},
                             kSymbols, chunk_rules);
    ExpectValidProductLayout({a_base, b_base, a_base}, {a_pairs, b_pairs, a_pairs},
                             {identity, identity, identity}, kSymbols, chunk_rules);
  }
  // A product of a grammar with itself keeps every rule; with the renamed copy of another, fewer.
  ProductLayout self, both;
  std::string error;
  ASSERT_TRUE(BuildProductLayout({&a_base, &a_base}, {&a_pairs, &a_pairs}, {identity, identity},
                                 kSymbols, 16, &self, &error));
  EXPECT_EQ(self.rules.size() * 3, a_base.size());
  ASSERT_TRUE(BuildProductLayout({&a_base, &b_renamed}, {&a_pairs, &b_pairs_renamed},
                                 {identity, rename}, kSymbols, 16, &both, &error));
  EXPECT_LT(both.rules.size(), self.rules.size());
  EXPECT_GT(both.rules.size(), 0u);
}

TEST(SumLayoutsTest, ProductLayoutsRefuseWhatTheyCannotMap) {
  const std::vector<int32_t> base = {1, 2, 3, 0, 1, 2}, pairs = {1, 2}, map = {0, 1, 2, 3};
  ProductLayout p;
  std::string error;
  // Grammar 0's base rules out of parent order.
  EXPECT_FALSE(BuildProductLayout({&base}, {&pairs}, {map}, 4, 16, &p, &error));
  EXPECT_NE(error.find("parent symbol order"), std::string::npos) << error;
  // A symbol map of the wrong size.
  const std::vector<int32_t> sorted = {0, 1, 2, 1, 2, 3};
  EXPECT_FALSE(BuildProductLayout({&sorted}, {&pairs}, {{0, 1}}, 4, 16, &p, &error));
  EXPECT_NE(error.find("symbol map"), std::string::npos) << error;
  EXPECT_TRUE(BuildProductLayout({&sorted}, {&pairs}, {map}, 4, 16, &p, &error)) << error;
  EXPECT_EQ(p.rules.size(), 2u);
}

}  // namespace
}  // namespace cky::cuda
