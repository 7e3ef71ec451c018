#include "grammar_io/default_grammar.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace cky {
namespace {

TEST(DefaultGrammarTest, EmbeddedGrammarLoads) {
  auto model = LoadDefaultGrammar();
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Grammar& g = model->grammar;
  EXPECT_EQ(g.symbol_names[0], "ROOT");
  // An unsplit grammar: one substate per symbol.
  for (int32_t count : g.symbol_num_substates) EXPECT_EQ(count, 1);
  EXPECT_GT(g.num_binary_rules(), 1000);
  EXPECT_GT(g.num_unary_rules(), 100);
  ASSERT_GE(g.FindSymbol("NN"), 0);
  const auto& words = model->known_words;
  EXPECT_NE(std::find(words.begin(), words.end(), "the"), words.end());
  EXPECT_NE(std::find(words.begin(), words.end(), "UNK-LC"), words.end());
  // Lexicon rows, each one probability (one substate).
  ASSERT_GT(model->lexicon.size(), 1000u);
  for (const LexiconRow& row : model->lexicon) {
    ASSERT_EQ(row.probs.size(), 1u) << row.word;
    EXPECT_GT(row.probs[0], 0.0) << row.word;
  }
}

}  // namespace
}  // namespace cky
