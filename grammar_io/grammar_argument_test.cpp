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

TEST(GrammarArgumentTest, BuiltinProductNamesTheBuiltInProduct) {
  const std::vector<std::string> builtin = {"builtin-product"};
  EXPECT_TRUE(GrammarArgumentsAreProduct(builtin));
  EXPECT_EQ(GrammarArgumentName("builtin-product"), "(built-in product)");
  auto members = LoadProductGrammarArguments(builtin);
  ASSERT_TRUE(members.ok()) << members.status().message();
  ASSERT_GE(members->size(), 2u);
  EXPECT_EQ(members->front().label, "(built-in product): seed 6");
  // A reader of one grammar says that it was given a product.
  auto single = LoadGrammarArgument("builtin-product");
  ASSERT_FALSE(single.ok());
  EXPECT_NE(single.status().message().find("is a product of grammars"), std::string::npos);
}

TEST(GrammarArgumentTest, SeveralArgumentsAreAProductOfTheirGrammars) {
  const std::vector<std::string> one = {"tests/data/toy"};
  EXPECT_FALSE(GrammarArgumentsAreProduct(one));
  const std::vector<std::string> two = {"tests/data/toy", ""};
  EXPECT_TRUE(GrammarArgumentsAreProduct(two));
  auto members = LoadProductGrammarArguments(two, {.use_cache = false});
  ASSERT_TRUE(members.ok()) << members.status().message();
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[0].label, "tests/data/toy");
  EXPECT_EQ((*members)[1].label, "(built-in)");
  const std::vector<std::string> missing = {"tests/data/toy", "tests/data/no_such_grammar"};
  EXPECT_FALSE(LoadProductGrammarArguments(missing, {.use_cache = false}).ok());
}

TEST(GrammarArgumentTest, MissingGrammarIsAnError) {
  EXPECT_FALSE(LoadGrammarArgument("tests/data/no_such_grammar", {.use_cache = false}).ok());
}

}  // namespace
}  // namespace cky
