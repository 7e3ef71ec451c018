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

}  // namespace
}  // namespace cky
