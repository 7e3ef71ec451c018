// One split grammar as every parser kernel family takes it (the Viterbi passes, the sum-product
// passes, the pruner's levels): views into cky::Grammar's arrays (grammar_io/grammar.h), plain C++
// so that cuda/ needs no parser type. Each device object reads the fields it needs and uploads its
// own layout of them; parser/cuda_backend.h's CudaGrammarView fills one from a Grammar.
#pragma once

#include <cstdint>

namespace cky::cuda {

struct GrammarView {
  int32_t num_states = 0;
  int32_t num_symbols = 0;
  const int32_t* state_symbol = nullptr;          // num_states
  const int32_t* symbol_first_state = nullptr;    // num_symbols
  const int32_t* symbol_num_substates = nullptr;  // num_symbols
  const uint8_t* symbol_is_phrasal = nullptr;     // num_symbols; 1 when phrasal
  // Binary rules, sorted by (parent, left, right).
  int64_t num_binary = 0;
  const int32_t* binary_parent = nullptr;
  const int32_t* binary_left = nullptr;
  const int32_t* binary_right = nullptr;
  const double* binary_log_prob = nullptr;
  const int32_t* binary_parent_begin = nullptr;  // num_states + 1
  // Closed Viterbi unaries, identities removed, sorted by parent.
  int64_t num_unary = 0;
  const int32_t* unary_child = nullptr;
  const double* unary_log_prob = nullptr;
  const int32_t* unary_parent_begin = nullptr;  // num_states + 1
  // Closed sum-product unaries (Grammar::sum_unary_*), sorted by (parent, child).
  int64_t num_sum_unary = 0;
  const int32_t* sum_unary_parent = nullptr;
  const int32_t* sum_unary_child = nullptr;
  const double* sum_unary_log_prob = nullptr;
};

}  // namespace cky::cuda
