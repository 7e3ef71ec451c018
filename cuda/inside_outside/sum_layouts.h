// The rule layouts of the sum-product and max-rule kernels (inside_outside.cu), built on the host
// from a split grammar: plain C++, so that the layouts are tested and timed without a device.
//
// Pair-sum layout (one per pass: inside over (left, right) partners into parents; outside into
// left children over (parent, right); into right children over (parent, left)): the binary rules
// grouped by (symbol of partner X, symbol of partner Y), each group cut into bands of X's
// substates so that a band holds at most kBandLimit substate pairs (a "tile"), each tile's rules
// grouped by target state, targets with the most rules first; tiles listed most rules first.
//
// Max-rule layout: base binary rules (A, B, C symbols) in symbol order, dense (every substate
// triple) when at least half the triples are rules, else sparse keys; per base rule its distinct
// (b, c) substate pairs ("entries") and their (a, p); chunks of base rules of one parent symbol,
// of about a fixed amount of work, or one chunk a big rule (the hybrid kernels 9, 11, 13, 14);
// base unary pairs (A, C) with A != C in symbol order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuda/common/grammar_view.h"

namespace cky::cuda {

constexpr int kBandLimit = 512;  // most substate pairs in a pair-sum tile

// The host twins of CUDA's int4 and int2 (same size and member order).
struct LayoutInt4 {
  int x, y, z, w;
};
struct LayoutInt2 {
  int x, y;
};

// Which partners and target a pair-sum pass takes from a rule A -> B C.
enum class PairSumPass { kInside, kOutLeft, kOutRight };

struct PairSumLayout {
  std::vector<LayoutInt4> info;     // per tile: first X state, X substates, first Y state, Y's
  std::vector<LayoutInt2> symbols;  // per tile: (X symbol, Y symbol)
  std::vector<int> tiles;           // tile indices, most rules first
  std::vector<int> pl_begin;        // per tile: its first target in pl_target (+ the end)
  std::vector<int> pl_target;       // target states
  std::vector<int> pl_rule_begin;   // per target: its first rule in key/w (+ the end)
  std::vector<int> key;             // per rule: x * (Y substates) + y within the tile
  std::vector<double> w;            // per rule: its probability (or log-probability)
  int max_bc = 0;                   // most substate pairs in a tile
  // Sparse tiles (BuildPairSumLayout's sparse_below): per tile its first entry in used_key (+ the
  // end; empty without sparse tiles); a sparse tile lists the substate pairs x * (Y substates) + y
  // its rules use, ascending, and its rules' key is the index of their pair in that list (a dense
  // tile lists none).
  std::vector<int> used_begin, used_key;
};

// The most symbols (or state groups) the masked pair kernels' live lists take (their bit masks).
constexpr int kMaxPairSymbols = 256;

// The pair layout's tiles and the presence flags cut by groups of states finer than symbols (a
// pruned level: its states' ancestors at an earlier pruning level, whose refinements the masks
// allow or prune together, so that a group pair absent from a cell's children costs nothing).
// Each group is one run of consecutive states inside one symbol.
struct StateGroups {
  std::vector<int32_t> state_group;  // per state
  std::vector<int32_t> first_state;  // per group
  std::vector<int32_t> num_states;   // per group
  int32_t num_groups() const { return static_cast<int32_t>(first_state.size()); }
  // `g` with the groups as its symbols (state_symbol, symbol_first_state, symbol_num_substates;
  // no phrasal flags): what BuildPairSumLayout and the live lists read. Points into both.
  GrammarView AsSymbols(const GrammarView& g) const;
};

// `g`'s states grouped by group_of[state] (0 .. num_groups - 1); nothing when a group is empty or
// not one run of consecutive states inside one symbol, or the groups are no more than the symbols
// (nothing finer) or more than kMaxPairSymbols.
std::optional<StateGroups> GroupStates(const GrammarView& g, const int32_t* group_of,
                                       int32_t num_groups);

// The rules' weights: probabilities (the sum-product passes) or log-probabilities (the max-plus
// pre-parses of cuda/pruning).
enum class PairWeights { kProbabilities, kLogProbabilities };

// sparse_below: a tile whose rules use less than this share of its substate pairs is sparse (its
// pairs listed, so that the kernels form only those); 0: every tile dense.
PairSumLayout BuildPairSumLayout(const GrammarView& g, PairSumPass pass,
                                 PairWeights weights = PairWeights::kProbabilities,
                                 double sparse_below = 0);

// The max-plus layouts' sparse_below: a sparse tile's pair costs its two chart reads a partner,
// where the dense S phase reads two values for four pairs (2 x 2 blocks), so listing pays below
// about half the pairs. gum_all_sm6's rules use 9% of their tiles' pairs, en_sm6s's 67%.
constexpr double kMaxPlusSparseBelow = 0.5;

struct MaxRuleLayout {
  std::vector<LayoutInt4> base;    // per base rule: (B, C, first key or dense offset, key end / -1)
  std::vector<LayoutInt4> chunks;  // (A, first base rule, end, 1 for a warp chunk / 0)
  std::vector<int> keys;           // sparse rules: (a << 16) | (b * (s_C | 1) + c)
  std::vector<double> w;           // their probabilities
  std::vector<double> dense;       // dense base rules: s_A * s_B * s_C probabilities each
  std::vector<int> chunk_begin;    // per parent symbol: its first chunk (+ the end)
  // Entries: per base rule its distinct (b, c), each with its rules' (a, p).
  std::vector<int> entry_begin, entry_bc, entry_rule_begin, entry_a;
  std::vector<double> entry_w;
  std::vector<int> block_chunks, warp_chunks;  // hybrid kernels: chunks of big / small rules
  std::vector<int> warp_order;  // kernels 13, 14: base rules of each warp chunk, most entries first
  // Unary base pairs (A, C), A != C.
  std::vector<int> pair_begin, pair_rule_begin, pu_parent, pu_child;
  std::vector<LayoutInt2> pair_symbols;
  std::vector<double> pu_w;
  int max_q = 1;          // most s_B * (s_C | 1) of a base rule
  int max_substates = 1;  // most substates of a parent symbol
  int warp_block = 256;   // threads a block of warp chunks
};

// False when the grammar exceeds the kernels' limits (the dense rules' 2^31 doubles, 65,535
// chunks, Q of 2^16). max_rule_kernel: DeviceInsideOutsideOptions::max_rule_kernel.
bool BuildMaxRuleLayout(const GrammarView& g, int max_rule_kernel, MaxRuleLayout* out);

// The layout's base rules as (A, B, C) symbol triples, and its unary pairs as (A, C), flat.
std::vector<int32_t> BaseRuleSymbols(const MaxRuleLayout& m);
std::vector<int32_t> UnaryPairSymbols(const MaxRuleLayout& m);

// The product's max-rule layout (product_max_rule.h): grammar 0's base rules and unary pairs that
// every grammar has, matched by symbols (member_symbol[k][s]: grammar k's symbol of product symbol
// s), in grammar 0's order (its tie order); base rules in chunks of at most chunk_rules of one
// parent symbol.
struct ProductLayout {
  std::vector<LayoutInt4> rules;   // per product rule: (B, C, A, 0), as MaxRuleLayout::base's B, C
  std::vector<int> rule_member;    // [rule * K + k]: grammar k's base rule (its max-rule layout's)
  std::vector<LayoutInt4> chunks;  // (A, first rule, end rule, 0)
  std::vector<int> chunk_begin;    // per product symbol: its first chunk (+ the end)
  std::vector<LayoutInt2> pairs;   // per product unary pair: (A, C)
  std::vector<int> pair_member;    // [pair * K + k]: grammar k's pair
  std::vector<int> pair_begin;     // per product symbol: its first pair (+ the end)
};

// base_symbols[k]: grammar k's base rules as (A, B, C) triples (its MaxRuleLayout order: by A, B,
// C); pair_symbols[k]: its unary pairs as (A, C) (by A, C). False, with *error, when the sizes
// disagree or grammar 0's lists are not in parent symbol order.
bool BuildProductLayout(const std::vector<const std::vector<int32_t>*>& base_symbols,
                        const std::vector<const std::vector<int32_t>*>& pair_symbols,
                        const std::vector<std::vector<int32_t>>& member_symbol, int num_symbols,
                        int chunk_rules, ProductLayout* out, std::string* error);

}  // namespace cky::cuda
