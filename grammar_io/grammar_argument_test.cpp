#include "grammar_io/grammar_argument.h"

#include <gtest/gtest.h>

namespace cky {
namespace {

TEST(GrammarArgumentTest, EmptyMeansTheBuiltInGrammar) {
  auto model = LoadGrammarArgument("");
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->grammar.symbol_names[0], "ROOT");
  EXPECT_EQ(GrammarArgumentName(""), "(built-in)");
}

TEST(GrammarArgumentTest, TextExportPrefixLoadsAndKeepsEveryRuleByDefault) {
  // tests/data/toy.* is a WriteGrammarToTextFile export (tests run from the source root).
  EXPECT_EQ(GrammarArgumentLoadOptions("tests/data/toy", {}).min_binary_prob, 0.0);
  auto model = LoadGrammarArgument("tests/data/toy", {.use_cache = false});
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_GT(model->grammar.num_binary_rules(), 0);
  EXPECT_EQ(GrammarArgumentName("tests/data/toy"), "tests/data/toy");
}

TEST(GrammarArgumentTest, ExplicitThresholdAndCacheSwitchPassThrough) {
  const LoadOptions load =
      GrammarArgumentLoadOptions("tests/data/toy", {.min_rule_prob = 0.25, .use_cache = false});
  EXPECT_EQ(load.min_binary_prob, 0.25);
  EXPECT_FALSE(load.use_cache);
}

TEST(GrammarArgumentTest, MissingGrammarIsAnError) {
  EXPECT_FALSE(LoadGrammarArgument("tests/data/no_such_grammar", {.use_cache = false}).ok());
}

}  // namespace
}  // namespace cky
