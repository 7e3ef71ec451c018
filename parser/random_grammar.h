// Seeded random split grammars and sentences, for testing every backend against the reference and
// for benchmarks. The grammars have Berkeley's shape: ROOT_0 rewrites by unaries only, phrasal
// symbols with substates, binary rules over every substate triple of the chosen base rules, closed
// unaries (the closure is computed, so Berkeley's extraction order is consistent), and POS tags
// that only rewrite to words.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grammar_io/berkeley_model.h"

namespace cky {

struct RandomGrammarOptions {
  int phrasal_symbols = 4;
  int tags = 3;
  int substates = 2;               // per symbol (ROOT has 1)
  double base_rule_density = 0.3;  // share of (A, B, C) base triples that are rules
  double unary_density = 0.2;      // share of (A, B) base pairs with a unary rule before closure
  int vocabulary = 8;              // words "w0", "w1", ...
  int tags_per_word = 2;
  // When > 0, symbol "BIG" (phrasal) gets at least this many binary rules, for kernels that must
  // split a parent's rules over several blocks (virtual symbols).
  int big_parent_rules = 0;
  uint64_t seed = 1;
};

BerkeleyModel MakeRandomModel(const RandomGrammarOptions& options);

// `count` sentences of the model's words with lengths uniform in [min_length, max_length].
std::vector<std::vector<std::string>> MakeRandomSentences(const BerkeleyModel& model, int count,
                                                          int min_length, int max_length,
                                                          uint64_t seed);

// Appends the lengths every backend is tested at besides the random ones: one word ("w1"), two
// ("w2 w3") and `longest` words ("w0" repeated), the longest sentence the test parses.
void AddLengthEdgeCases(int longest, std::vector<std::vector<std::string>>* sentences);

}  // namespace cky
