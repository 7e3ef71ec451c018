#include "treebank/transforms.h"

#include <gtest/gtest.h>

#include "treebank/reader.h"

namespace cky {
namespace {

Tree Parse(const std::string& text) {
  auto trees = ReadTreesFromString(text);
  EXPECT_TRUE(trees.ok()) << trees.status().message();
  EXPECT_EQ(trees->size(), 1u);
  return (*trees)[0];
}

TEST(TransformsTest, StripFunctionTagsKeepsSpecialLabels) {
  EXPECT_EQ(StripFunctionTag("NP-SBJ-1"), "NP");
  EXPECT_EQ(StripFunctionTag("NP=2"), "NP");
  EXPECT_EQ(StripFunctionTag("WHNP-3"), "WHNP");
  EXPECT_EQ(StripFunctionTag("-NONE-"), "-NONE-");
  EXPECT_EQ(StripFunctionTag("-LRB-"), "-LRB-");
  EXPECT_EQ(StripFunctionTag("PRP$"), "PRP$");
  Tree tree = Parse("(S-TPC-1 (NP-SBJ (NN-HL x)) (VP=2 (VB y)))");
  StripFunctionTags(&tree);
  EXPECT_EQ(ToBracketString(tree), "(S (NP (NN-HL x)) (VP (VB y)))");
  StripFunctionTags(&tree, /*also_tags=*/true);
  EXPECT_EQ(ToBracketString(tree), "(S (NP (NN x)) (VP (VB y)))");
}

TEST(TransformsTest, StripEmptyElementsRemovesEmptiedConstituents) {
  Tree tree = Parse("( (S (NP (-NONE- *)) (VP (VB go) (S (NP (-NONE- *T*-1))))))");
  ASSERT_TRUE(StripEmptyElements(&tree));
  EXPECT_EQ(ToBracketString(tree), "( (S (VP (VB go))))");
  Tree only_trace = Parse("(S (NP (-NONE- *)))");
  EXPECT_FALSE(StripEmptyElements(&only_trace));
  EXPECT_EQ(ToBracketString(only_trace), "(S (NP (-NONE- *)))");
}

TEST(TransformsTest, RootCollapseAndRelabel) {
  Tree tree = Parse("( (S (NN x)))");
  SetRootLabel(&tree, "TOP");
  EXPECT_EQ(ToBracketString(tree), "(TOP (S (NN x)))");
  CollapseRoot(&tree);
  EXPECT_EQ(ToBracketString(tree), "(S (NN x))");
  SetRootLabel(&tree, "ROOT");
  EXPECT_EQ(ToBracketString(tree), "(ROOT (S (NN x)))");
}

TEST(TransformsTest, WordsTagsSpans) {
  Tree tree = Parse("(ROOT (S (NP (DT the) (NN dog)) (VP (VBD barked))))");
  EXPECT_EQ(Leaves(tree), (std::vector<std::string>{"the", "dog", "barked"}));
  EXPECT_EQ(Tags(tree), (std::vector<std::string>{"DT", "NN", "VBD"}));
  std::vector<LabeledSpan> expected = {{"ROOT", 0, 3}, {"S", 0, 3}, {"NP", 0, 2}, {"VP", 2, 3}};
  EXPECT_EQ(Spans(tree), expected);
  EXPECT_EQ(Spans(tree, true).size(), 7u);
}

}  // namespace
}  // namespace cky
