#include "parser/tree_likelihood.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace cky {
namespace {

// Inside values of one node over its symbol's substates, scaled: value * exp(scale).
struct Inside {
  int32_t symbol = -1;
  std::vector<double> values;
  double scale = 0;
};

// Divides by the largest value, moving it into the scale; false when every value is 0.
bool Normalize(Inside* in) {
  const double top = *std::max_element(in->values.begin(), in->values.end());
  if (!(top > 0)) return false;
  for (double& v : in->values) v /= top;
  in->scale += std::log(top);
  return true;
}

class TreeScorer {
 public:
  TreeScorer(const Grammar& g, const LexicalScores& lexical) : g_(g), lexical_(lexical) {}

  // Fills `in`; false when the node's inside is 0 (the tree has probability 0). Errors go to
  // status_.
  bool Score(const Tree& node, Inside* in) {
    in->symbol = g_.FindSymbol(node.label);
    if (in->symbol < 0) return Fail("the grammar has no symbol '" + node.label + "'");
    const int32_t first = g_.symbol_first_state[in->symbol];
    const int32_t substates = g_.symbol_num_substates[in->symbol];
    in->values.assign(substates, 0.0);
    if (node.is_preterminal()) {
      if (word_ >= lexical_.length) return Fail("the tree has more words than the sentence");
      const double* scores = lexical_.word(word_++);
      double top = kNegInf;
      for (int32_t k = 0; k < substates; ++k) top = std::max(top, scores[first + k]);
      if (!(top > kNegInf)) return false;
      for (int32_t k = 0; k < substates; ++k) in->values[k] = std::exp(scores[first + k] - top);
      in->scale = top;
      return true;
    }
    if (node.children.size() == 1) {
      Inside child;
      if (!Score(node.children[0], &child)) return false;
      const int32_t child_first = g_.symbol_first_state[child.symbol];
      for (int32_t k = 0; k < substates; ++k) {
        const int32_t p = first + k;
        for (int32_t u = g_.base_unary_parent_begin[p]; u < g_.base_unary_parent_begin[p + 1];
             ++u) {
          const int32_t c = g_.base_unary_child[u];
          if (g_.state_symbol[c] != child.symbol) continue;
          in->values[k] += std::exp(g_.base_unary_log_prob[u]) * child.values[c - child_first];
        }
      }
      in->scale = child.scale;
      return Normalize(in);
    }
    if (node.children.size() != 2) {
      return Fail("node " + node.label + " has " + std::to_string(node.children.size()) +
                  " children (the tree must be binarized)");
    }
    Inside left, right;
    if (!Score(node.children[0], &left)) return false;
    if (!Score(node.children[1], &right)) return false;
    const int32_t left_first = g_.symbol_first_state[left.symbol];
    const int32_t right_first = g_.symbol_first_state[right.symbol];
    for (int32_t k = 0; k < substates; ++k) {
      const int32_t p = first + k;
      for (int32_t r = g_.binary_parent_begin[p]; r < g_.binary_parent_begin[p + 1]; ++r) {
        const int32_t l = g_.binary_left[r], rr = g_.binary_right[r];
        if (g_.state_symbol[l] != left.symbol || g_.state_symbol[rr] != right.symbol) continue;
        in->values[k] += std::exp(g_.binary_log_prob[r]) * left.values[l - left_first] *
                         right.values[rr - right_first];
      }
    }
    in->scale = left.scale + right.scale;
    return Normalize(in);
  }

  bool Fail(const std::string& message) {
    if (status_.ok()) status_ = Status::Error(message);
    return false;
  }

  const Status& status() const { return status_; }
  int32_t words() const { return word_; }

 private:
  const Grammar& g_;
  const LexicalScores& lexical_;
  int32_t word_ = 0;
  Status status_;
};

bool IsIntermediate(const std::string& label) { return label.size() > 1 && label[0] == '@'; }

// The node's children with @ nodes spliced out, recursively (Trees.spliceNodes).
std::vector<Tree> Spliced(const Tree& node) {
  std::vector<Tree> children;
  for (const Tree& child : node.children) {
    if (!child.is_leaf() && IsIntermediate(child.label)) {
      for (Tree& grandchild : Spliced(child)) children.push_back(std::move(grandchild));
    } else if (child.is_leaf()) {
      children.push_back(Tree(child.label));
    } else {
      children.push_back(Tree(child.label, Spliced(child)));
    }
  }
  return children;
}

// TreeAnnotations' right binarization: the last child on the right, the rest nested on the left.
Tree BinarizeRight(const std::string& label, std::vector<Tree> children, bool top) {
  if (children.size() <= 2) return Tree(top ? label : "@" + label, std::move(children));
  Tree last = std::move(children.back());
  children.pop_back();
  Tree rest = BinarizeRight(label, std::move(children), false);
  return Tree(top ? label : "@" + label, {std::move(rest), std::move(last)});
}

// Left binarization: the first child on the left, the rest nested on the right.
Tree BinarizeLeft(const std::string& label, std::vector<Tree> children, bool top) {
  if (children.size() <= 2) return Tree(top ? label : "@" + label, std::move(children));
  Tree first = std::move(children.front());
  children.erase(children.begin());
  Tree rest = BinarizeLeft(label, std::move(children), false);
  return Tree(top ? label : "@" + label, {std::move(first), std::move(rest)});
}

Tree Binarize(const Tree& node, bool right) {
  if (node.is_leaf()) return node;
  std::vector<Tree> children;
  for (const Tree& child : node.children) children.push_back(Binarize(child, right));
  return right ? BinarizeRight(node.label, std::move(children), true)
               : BinarizeLeft(node.label, std::move(children), true);
}

}  // namespace

StatusOr<double> TreeLogLikelihood(const Grammar& grammar, const LexicalScores& lexical,
                                   const Tree& tree) {
  if (!grammar.base_unaries_known) {
    return Status::Error(
        "the grammar holds no base unary rules (a Berkeley .gr file does; text exports do not)");
  }
  TreeScorer scorer(grammar, lexical);
  Inside root;
  const bool positive = scorer.Score(tree, &root);
  if (!scorer.status().ok()) return scorer.status();
  if (!positive) return kNegInf;
  if (scorer.words() != lexical.length) return Status::Error("the tree has fewer words than the sentence");
  const int32_t state = Grammar::kRootState - grammar.symbol_first_state[root.symbol];
  if (root.symbol != 0 || state != 0) return Status::Error("the tree's root is not ROOT");
  return root.values[0] > 0 ? std::log(root.values[0]) + root.scale : kNegInf;
}

StatusOr<Tree> RebinarizeTree(const Tree& tree, const std::string& binarization) {
  if (binarization != "RIGHT" && binarization != "LEFT") {
    return Status::Error("re-binarizing for --confidence: binarization '" + binarization +
                         "' is not supported (RIGHT and LEFT are)");
  }
  Tree spliced(tree.label, Spliced(tree));
  return Binarize(spliced, binarization == "RIGHT");
}

}  // namespace cky
