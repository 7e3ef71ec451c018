#include "treebank/tree.h"

#include <gtest/gtest.h>

#include <string>

#include "treebank/reader.h"
#include "treebank/transforms.h"
#include "treebank/writer.h"

namespace cky {
namespace {

// Deeper than any stack holds frames of a recursive walk (8 MB / 500,000 = 16 bytes a level).
constexpr int kDeep = 500000;

// "(X (X ... (NN w) ...))" nested `depth` constituents deep above the preterminal.
std::string DeepBracketing(int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += "(X ";
  text += "(NN w)";
  text.append(depth, ')');
  return text;
}

Tree DeepTree(int depth) {
  Tree tree("NN", {Tree("w")});
  for (int i = 0; i < depth; ++i) {
    Tree parent("X");
    parent.children.push_back(std::move(tree));
    tree = std::move(parent);
  }
  return tree;
}

TEST(TreeTest, WalkTreeVisitsInPreorderAndLeavesAfterChildren) {
  auto trees = ReadTreesFromString("(S (NP (DT a) (NN b)) (VP (VB c)))");
  ASSERT_TRUE(trees.ok());
  std::string order;
  WalkTree(
      (*trees)[0],
      [&](const Tree& node, size_t depth) {
        order += "<" + node.label + std::to_string(depth);
        return node.label != "VP";  // VP's children are skipped, and VP gets no leave call
      },
      [&](const Tree& node, size_t depth) { order += ">" + node.label + std::to_string(depth); });
  EXPECT_EQ(order, "<S0<NP1<DT2<a3>a3>DT2<NN2<b3>b3>NN2>NP1<VP1>S0");
}

TEST(TreeTest, Depth) {
  EXPECT_EQ(TreeDepth(Tree("w")), 1u);
  EXPECT_EQ(TreeDepth(Tree("NN", {Tree("w")})), 2u);
  EXPECT_EQ(TreeDepth(DeepTree(kDeep)), size_t(kDeep) + 2);
}

TEST(TreeTest, CopyCompareAndDestroyTreesDeeperThanTheStack) {
  // Each of these recursed on the depth (and overflowed the stack) before.
  {
    Tree deep = DeepTree(kDeep);
    Tree copy = deep;
    EXPECT_TRUE(copy == deep);
    copy.children[0].children[0].label = "Y";
    EXPECT_FALSE(copy == deep);
    Tree assigned;
    assigned = deep;
    EXPECT_TRUE(assigned == deep);
    // Assigning a subtree of a tree to that tree.
    assigned = assigned.children[0];
    EXPECT_EQ(assigned.label, "X");
  }  // the destructors run here
  SUCCEED();
}

TEST(TreeTest, BracketStringAndLeavesOfATreeDeeperThanTheStack) {
  const Tree deep = DeepTree(kDeep);
  EXPECT_TRUE(ToBracketString(deep) == DeepBracketing(kDeep));  // not printed when it fails
  EXPECT_EQ(Leaves(deep), std::vector<std::string>{"w"});
}

TEST(TreeTest, ReaderTransformsAndWriterHandleTreesDeeperThanTheStack) {
  const std::string text = "( " + DeepBracketing(kDeep) + " )";
  auto trees = ReadTreesFromString(text);
  ASSERT_TRUE(trees.ok()) << trees.status().message();
  ASSERT_EQ(trees->size(), 1u);
  Tree& tree = (*trees)[0];
  EXPECT_EQ(Tags(tree), std::vector<std::string>{"NN"});
  const std::vector<LabeledSpan> spans = Spans(tree);
  ASSERT_EQ(spans.size(), size_t(kDeep) + 1);
  EXPECT_EQ(spans.back(), (LabeledSpan{"X", 0, 1}));
  StripFunctionTags(&tree, /*also_tags=*/true);
  EXPECT_TRUE(StripEmptyElements(&tree));
  EXPECT_TRUE(FormatPennTree(tree, WriteLayout::kOneLine) == "( " + DeepBracketing(kDeep) + ")");
  // The indented layout puts a deep tree's levels on lines of their own: 10,000 levels keep the
  // text small.
  const Tree indented = DeepTree(10000);
  auto back = ReadTreesFromString(FormatPennTree(indented, WriteLayout::kIndented));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE((*back)[0] == indented);
  // A tree of nothing but nested empty elements is all removed.
  std::string empty;
  for (int i = 0; i < kDeep; ++i) empty += "(X ";
  empty += "(-NONE- *)";
  empty.append(kDeep, ')');
  auto only_empty = ReadTreesFromString(empty);
  ASSERT_TRUE(only_empty.ok());
  EXPECT_FALSE(StripEmptyElements(&(*only_empty)[0]));
}

}  // namespace
}  // namespace cky
