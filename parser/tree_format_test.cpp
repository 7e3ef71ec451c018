#include "parser/tree_format.h"

#include <gtest/gtest.h>

namespace cky {
namespace {

Tree Node(std::string label, std::vector<Tree> children) {
  return Tree(label, std::move(children));
}
Tree Pre(std::string tag, std::string word) { return Tree(tag, {Tree(word)}); }

TEST(TreeFormatTest, DebinarizesLikeBerkeley) {
  Tree annotated =
      Node("ROOT-0", {Node("S-2", {Node("@S-3", {Node("NP-SBJ-1", {Pre("PRP-0", "We")}),
                                                 Node("VP-1", {Pre("VBP-2", "parse")})}),
                                   Pre(".-1", ".")})});
  EXPECT_EQ(FormatBerkeley(annotated), "( (S (NP (PRP We)) (VP (VBP parse)) (. .)) )");
}

TEST(TreeFormatTest, KeepsBracketTagsWhole) {
  Tree annotated = Node(
      "ROOT-0", {Node("NP-0", {Pre("-LRB--1", "["), Pre("NN-0", "x"), Pre("-RRB--0", "-RRB-")})});
  EXPECT_EQ(FormatBerkeley(annotated), "( (NP (-LRB- [) (NN x) (-RRB- -RRB-)) )");
}

TEST(TreeFormatTest, BinarizedScoredForm) {
  Tree leaf = Pre("NN-1", "dogs");
  leaf.score = -1.5;
  Tree np = Node("NP-0", {leaf});
  np.score = -2.25;
  Tree root = Node("ROOT-0", {np});
  EXPECT_EQ(FormatBerkeleyBinarized(root, true), "( (NP-0 -2.25 (NN-1 -1.5 dogs)) )");
  EXPECT_EQ(FormatBerkeleyBinarized(root, false), "( (NP-0 (NN-1 dogs)) )");
}

TEST(TreeFormatTest, FormatsTreesDeeperThanTheStack) {
  // A chain of 500,000 unary nodes (half of them binarization nodes, spliced out): the recursive
  // transform overflowed the stack.
  constexpr int kDepth = 500000;
  Tree tree = Pre("NN-0", "w");
  auto wrap = [&](const char* label) {  // not Node(): its initializer list would copy the tree
    Tree parent(label);
    parent.children.push_back(std::move(tree));
    tree = std::move(parent);
  };
  for (int i = 0; i < kDepth; ++i) wrap(i % 2 ? "@X-0" : "X-1");
  wrap("ROOT-0");
  std::string expected = "(";
  for (int i = 0; i < kDepth / 2; ++i) expected += " (X";
  expected += " (NN w)" + std::string(kDepth / 2, ')') + " )";
  EXPECT_TRUE(FormatBerkeley(tree) == expected);  // not printed when it fails
  EXPECT_EQ(Debinarize(tree).children.size(), 1u);
}

}  // namespace
}  // namespace cky
