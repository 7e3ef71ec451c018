// THE CPU REFERENCE for exhaustive Viterbi CKY: plain loops, double precision, never tuned. Every
// other backend (multi-threaded CPU, each CUDA kernel variant) is tested against it.
//
// Per span, shortest first: the binary maximum over every rule and split point,
//     pre[A] = max_{A->B C, split} rule(A->B C) + chart[start,split][B] + chart[split,end][C]
// (for one-word spans, pre is the lexical score), then one layer of the closed unaries,
//     chart[A] = max(pre[A], max_{A->B} unary(A->B) + pre[B])
// exactly as the Berkeley parser decodes (identities are implicit in the max with pre[A]).
#pragma once

#include <vector>

#include "grammar_io/grammar.h"
#include "parser/chart.h"

namespace cky {

// Lexical log-scores of one sentence: length x num_states, row-major (word i's state s at
// [i * num_states + s]), -infinity where the word cannot take the state.
struct LexicalScores {
  int32_t length = 0;
  int32_t num_states = 0;
  std::vector<double> scores;
  // Non-zero: these scores were handed to the backend while it was made
  // (BackendOptions::first_lexical), under this number, which no other scores carry; work it did
  // on them then is found again by it. Scores made anew (a rescoring) have 0.
  uint64_t ahead_id = 0;
  const double* word(int32_t i) const { return scores.data() + int64_t(i) * num_states; }
};

// Backpointers recorded during the inside pass, for the backpointer extraction variant.
struct Backpointers {
  // Per cell and state: best binary rule index and split point (-1 if none) ...
  std::vector<int32_t> binary_rule;
  std::vector<int32_t> split;
  // ... and the unary rule index that gave the post-unary score (-1: pre[A] itself was best).
  std::vector<int32_t> unary_rule;
};

// Fills `chart` (resized to the sentence) with Viterbi inside scores; records backpointers when
// `backpointers` is non-null.
void ReferenceViterbiInside(const Grammar& grammar, const LexicalScores& lexical, Chart* chart,
                            Backpointers* backpointers = nullptr);

}  // namespace cky
