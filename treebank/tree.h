// A labelled ordered tree: constituency parses, gold trees, binarized parser output.
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

  bool is_leaf() const { return children.empty(); }
  // A preterminal: one child, which is a leaf.
  bool is_preterminal() const { return children.size() == 1 && children[0].is_leaf(); }
  bool has_score() const { return !std::isnan(score); }
  bool operator==(const Tree& other) const {
    return label == other.label && children == other.children;
  }
};

// Penn Treebank bracketing on one line: "(NP (DT the) (NN dog))". Node scores, when present and
// `with_scores` is set, follow the label: "(NP -3.25 (DT -1.0 the) ...)" (Berkeley's -scores
// style).
std::string ToBracketString(const Tree& tree, bool with_scores = false);

// The words (leaves) of a tree, left to right.
std::vector<std::string> Leaves(const Tree& tree);

}  // namespace cky
