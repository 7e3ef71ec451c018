#include "parser/cuda_grammar_view.h"

namespace cky {

cuda::GrammarView CudaGrammarView(const Grammar& g) {
  cuda::GrammarView a;
  a.num_states = g.num_states();
  a.num_symbols = g.num_symbols();
  a.state_symbol = g.state_symbol.data();
  a.symbol_first_state = g.symbol_first_state.data();
  a.symbol_num_substates = g.symbol_num_substates.data();
  a.num_binary = g.num_binary_rules();
  a.binary_parent = g.binary_parent.data();
  a.binary_left = g.binary_left.data();
  a.binary_right = g.binary_right.data();
  a.binary_log_prob = g.binary_log_prob.data();
  a.binary_parent_begin = g.binary_parent_begin.data();
  a.num_unary = g.num_unary_rules();
  a.unary_child = g.unary_child.data();
  a.unary_log_prob = g.unary_log_prob.data();
  a.unary_parent_begin = g.unary_parent_begin.data();
  a.symbol_is_phrasal = g.symbol_is_phrasal.data();
  a.num_sum_unary = static_cast<int64_t>(g.sum_unary_parent.size());
  a.sum_unary_parent = g.sum_unary_parent.data();
  a.sum_unary_child = g.sum_unary_child.data();
  a.sum_unary_log_prob = g.sum_unary_log_prob.data();
  return a;
}

}  // namespace cky
