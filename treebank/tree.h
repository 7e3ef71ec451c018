// A labelled ordered tree: constituency parses, gold trees, binarized parser output.
//
// Trees come from files a user gives (a treebank line may nest a million brackets deep), so no
// code here recurses on a tree's depth: copying, comparing and destroying a Tree walk it with a
// stack of their own, and so should any code that visits trees read from input (WalkTree below).
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace cky {

struct Tree {
  std::string label;            // "NP", a POS tag, or the word itself at a leaf
  std::vector<Tree> children;   // empty for a leaf (a word)
  double score = std::nan("");  // optional node score (log-probability); NaN when absent

  Tree() = default;
  explicit Tree(std::string l) : label(std::move(l)) {}
  Tree(std::string l, std::vector<Tree> c) : label(std::move(l)), children(std::move(c)) {}
  Tree(const Tree& other);
  Tree(Tree&& other) noexcept = default;
  Tree& operator=(const Tree& other);
  Tree& operator=(Tree&& other) noexcept = default;
  ~Tree();

  bool is_leaf() const { return children.empty(); }
  // A preterminal: one child, which is a leaf.
  bool is_preterminal() const { return children.size() == 1 && children[0].is_leaf(); }
  bool has_score() const { return !std::isnan(score); }
  // Labels and shape (scores are not compared).
  bool operator==(const Tree& other) const;
};

// Visits the nodes of `root` (a Tree or a const Tree) in preorder without recursion:
// enter(node, depth) before a node's children, which are skipped when it returns false, and
// leave(node, depth) after them (not for a node whose children were skipped). The root has depth
// 0. `leave` may change the node's own children (they have all been visited by then), nothing
// above it.
template <typename TreeType, typename Enter, typename Leave>
void WalkTree(TreeType& root, Enter&& enter, Leave&& leave) {
  struct Frame {
    TreeType* node;
    size_t next_child;
  };
  if (!enter(root, size_t{0})) return;
  std::vector<Frame> stack{{&root, 0}};
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next_child == top.node->children.size()) {
      TreeType* node = top.node;
      stack.pop_back();
      leave(*node, stack.size());
      continue;
    }
    TreeType& child = top.node->children[top.next_child++];
    if (enter(child, stack.size())) stack.push_back({&child, 0});
  }
}

// Penn Treebank bracketing on one line: "(NP (DT the) (NN dog))". Node scores, when present and
// `with_scores` is set, follow the label: "(NP -3.25 (DT -1.0 the) ...)" (Berkeley's -scores
// style).
std::string ToBracketString(const Tree& tree, bool with_scores = false);

// The words (leaves) of a tree, left to right.
std::vector<std::string> Leaves(const Tree& tree);

// The number of nodes on the longest path from the root to a leaf: 1 for a word alone, 2 for
// "(NN dog)".
size_t TreeDepth(const Tree& tree);

}  // namespace cky
