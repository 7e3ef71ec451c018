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
  EXPECT_EQ(g.symbol_num_substates[0], 1);
  // A latent-annotation grammar of 4 split-merge cycles: up to 16 substates per symbol.
  ASSERT_GE(g.FindSymbol("NP"), 0);
  EXPECT_GT(g.symbol_num_substates[g.FindSymbol("NP")], 1);
  for (int32_t count : g.symbol_num_substates) EXPECT_LE(count, 16);
  EXPECT_GT(g.num_states(), 300);
  EXPECT_GT(g.num_binary_rules(), 10000);
  EXPECT_GT(g.num_unary_rules(), 1000);
  ASSERT_GE(g.FindSymbol("NN"), 0);
  const auto& words = model->known_words;
  EXPECT_NE(std::find(words.begin(), words.end(), "the"), words.end());
  // The lexicon's counts travel with it (Berkeley-exact scores for every word and signature).
  ASSERT_TRUE(model->lexicon_counts.has_value());
  EXPECT_GT(model->lexicon_counts->total_tokens, 50000);
  ASSERT_GT(model->lexicon.size(), 1000u);
  for (const LexiconRow& row : model->lexicon) {
    ASSERT_EQ(row.probs.size(), size_t(g.symbol_num_substates[row.symbol])) << row.word;
  }
}

// The built-in product: grammars trained as the built-in one with other seeds, the first the
// built-in grammar itself, byte for byte; all over the same symbols.
TEST(DefaultGrammarTest, EmbeddedProductLoads) {
  auto members = LoadDefaultProductGrammar();
  ASSERT_TRUE(members.ok()) << members.status().message();
  ASSERT_GE(members->size(), 2u);
  auto single = LoadDefaultGrammar();
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(ModelCacheBytes(members->front().model), ModelCacheBytes(*single));
  for (const ProductGrammarMember& member : *members) {
    EXPECT_EQ(member.label.rfind("seed ", 0), 0u) << member.label;
    EXPECT_EQ(member.model.grammar.symbol_names, single->grammar.symbol_names);
    EXPECT_TRUE(member.model.lexicon_counts.has_value());
  }
  EXPECT_NE(ModelCacheBytes((*members)[1].model), ModelCacheBytes(*single));
}

}  // namespace
}  // namespace cky
