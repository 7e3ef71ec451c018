// The split (latent-variable) PCFG, in the dense layout every parser backend reads.
//
// Berkeley grammars name each annotated symbol as BASE_k, e.g. "NP_3" is substate 3 of NP. Here
// each base symbol gets a dense id (ROOT is always symbol 0) and each (symbol, substate) pair a
// dense *state* id; a symbol's substates are consecutive states. Rules are log-probabilities in
// plain arrays (structure of arrays), sorted and indexed so that a backend can copy them to a
// device as they are.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace cky {

// The most substates a symbol may have. Berkeley grammars have at most 64 (six split cycles); the
// limit keeps a malformed file ("NP_99999999") from asking for gigabytes.
inline constexpr int32_t kMaxSubstatesPerSymbol = 4096;

struct Grammar {
  // --- Symbols (base categories) ---
  std::vector<std::string> symbol_names;        // symbol id -> "NP", "@NP", "ROOT", ...
  std::vector<int32_t> symbol_num_substates;    // symbol id -> substate count (>= 1)
  std::vector<int32_t> symbol_first_state;      // symbol id -> state id of its substate 0
  std::vector<uint8_t> symbol_is_phrasal;       // parent of a binary or a non-identity unary rule
  std::vector<std::string> symbol_split_trees;  // from .splits/.hierarchy; "" when not given

  // --- States (symbol, substate) ---
  std::vector<int32_t> state_symbol;        // state id -> symbol id
  std::vector<int32_t> state_substate;      // state id -> substate index
  static constexpr int32_t kRootState = 0;  // ROOT_0, the start state

  // --- Binary rules parent -> left right, sorted by (parent, left, right) ---
  std::vector<int32_t> binary_parent;
  std::vector<int32_t> binary_left;
  std::vector<int32_t> binary_right;
  std::vector<double> binary_log_prob;
  // Rules of parent state p are [binary_parent_begin[p], binary_parent_begin[p + 1]).
  std::vector<int32_t> binary_parent_begin;  // num_states + 1 entries

  // --- Closed unary rules parent -> child, identities removed, sorted by (parent, child) ---
  std::vector<int32_t> unary_parent;
  std::vector<int32_t> unary_child;
  std::vector<double> unary_log_prob;
  std::vector<int32_t> unary_parent_begin;  // num_states + 1 entries

  // --- Closed sum-product unary rules, for inside-outside and max-rule decoding ---
  // Berkeley's closedSumRulesWithParent: parent -> child between different symbols, the
  // probability summed over the direct rule and every chain through one intermediate symbol
  // (Grammar.computePairsOfUnaries). Sorted by (parent, child). Read from .gr files; grammars that
  // do not carry them (text exports, random and trained PCFGs) get a copy of the closed Viterbi
  // unaries between different symbols, and `sum_unaries_exact` is false.
  std::vector<int32_t> sum_unary_parent;
  std::vector<int32_t> sum_unary_child;
  std::vector<double> sum_unary_log_prob;
  std::vector<int32_t> sum_unary_parent_begin;  // num_states + 1 entries
  bool sum_unaries_exact = false;
  // Berkeley's closedSumPaths: for a unary parent symbol P and child symbol C, the intermediate
  // symbol I of the chain P -> I -> C that carries most of the closed rule's mass, which max-rule
  // trees print between P and C; -1 when the direct rule does (or nothing is known).
  // num_symbols * num_symbols entries (P * num_symbols + C), or empty.
  std::vector<int32_t> unary_intermediate;
  int32_t UnaryIntermediate(int32_t parent_symbol, int32_t child_symbol) const {
    if (unary_intermediate.empty()) return -1;
    return unary_intermediate[size_t(parent_symbol) * num_symbols() + child_symbol];
  }

  // --- Base (unclosed) unary rules, for P(tree, words) (parser/tree_likelihood.h) ---
  // Berkeley's unaryRulesWithParent: the rules a tree's unary nodes use, sorted by (parent, child).
  // Read from .gr files (rules with p <= 1e-10 dropped, as its parser does) and made by the random
  // grammars; empty, with base_unaries_known false, for text exports and trained PCFGs.
  std::vector<int32_t> base_unary_parent;
  std::vector<int32_t> base_unary_child;
  std::vector<double> base_unary_log_prob;
  std::vector<int32_t> base_unary_parent_begin;  // num_states + 1 entries
  bool base_unaries_known = false;

  int32_t num_symbols() const { return static_cast<int32_t>(symbol_names.size()); }
  int32_t num_states() const { return static_cast<int32_t>(state_symbol.size()); }
  int64_t num_binary_rules() const { return static_cast<int64_t>(binary_parent.size()); }
  int64_t num_unary_rules() const { return static_cast<int64_t>(unary_parent.size()); }

  // Symbol id of `name`, or -1.
  int32_t FindSymbol(std::string_view name) const;
  // State id of `name` (e.g. "NP_3"), or -1.
  int32_t FindState(std::string_view name) const;
  // "NP_3" for a state id.
  std::string StateName(int32_t state) const;
  const std::string& SymbolOfState(int32_t state) const {
    return symbol_names[state_symbol[state]];
  }

  // Rebuilds the name index; call after filling symbol_names by hand (loaders do it for you).
  void IndexSymbols();

 private:
  std::unordered_map<std::string, int32_t> symbol_index_;
};

// Builder used by the loaders and by tests: add symbols and rules by name or id, then Finish().
class GrammarBuilder {
 public:
  // Declares (or finds) a base symbol; substate counts grow to cover every substate used.
  int32_t AddSymbol(std::string_view name);
  void SetNumSubstates(int32_t symbol, int32_t count);
  void SetSplitTree(int32_t symbol, std::string tree);
  // Rules over (symbol, substate) pairs with probabilities (not logs). Identity unaries (X_k ->
  // X_k) are dropped; duplicates keep the last probability.
  void AddBinary(int32_t parent_sym, int32_t parent_sub, int32_t left_sym, int32_t left_sub,
                 int32_t right_sym, int32_t right_sub, double prob);
  // Room for `count` binary rules in all (a hint for callers that know the count).
  void ReserveBinaries(size_t count) { binaries_.reserve(count); }
  void AddUnary(int32_t parent_sym, int32_t parent_sub, int32_t child_sym, int32_t child_sub,
                double prob);
  // A closed sum-product unary rule (Grammar::sum_unary_*); rules within one symbol are dropped,
  // as Berkeley's parser skips them. Once any is added, the grammar's sum unaries are these.
  void AddSumUnary(int32_t parent_sym, int32_t parent_sub, int32_t child_sym, int32_t child_sub,
                   double prob);
  // A base (unclosed) unary rule (Grammar::base_unary_*); once any is added the grammar's base
  // unaries are known.
  void AddBaseUnary(int32_t parent_sym, int32_t parent_sub, int32_t child_sym, int32_t child_sub,
                    double prob);
  // Grammar::unary_intermediate for a pair of symbols (builder ids).
  void SetUnaryIntermediate(int32_t parent_sym, int32_t child_sym, int32_t intermediate_sym);
  int32_t num_symbols() const { return static_cast<int32_t>(names_.size()); }
  // Lays out states and rules; ROOT (created if absent) becomes symbol 0. When `final_ids` is given
  // it receives, for each id AddSymbol returned, the symbol's id in the finished grammar.
  Grammar Finish(std::vector<int32_t>* final_ids = nullptr);

 private:
  struct RawRule {
    int32_t parent_sym, parent_sub, left_sym, left_sub, right_sym, right_sub;
    double prob;
  };
  void Cover(int32_t symbol, int32_t substate);
  std::vector<std::string> names_;
  std::unordered_map<std::string, int32_t> index_;
  std::vector<int32_t> substates_;
  std::vector<std::string> split_trees_;
  std::vector<RawRule> binaries_;
  std::vector<RawRule> unaries_;  // left_* is the child; right_* unused
  std::vector<RawRule> sum_unaries_;
  bool has_sum_unaries_ = false;
  std::vector<RawRule> base_unaries_;
  bool has_base_unaries_ = false;
  std::vector<std::tuple<int32_t, int32_t, int32_t>> intermediates_;  // parent, child, middle
};

// Splits "NP_3" into ("NP", 3). Returns false when there is no "_<digits>" suffix.
bool SplitStateName(std::string_view name, std::string_view* symbol, int32_t* substate);

}  // namespace cky
