#include "treebank/tree.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace cky {

Tree::Tree(const Tree& other) : label(other.label), score(other.score) {
  // Node by node: each copied node's children are made (labels and scores), then queued.
  std::vector<std::pair<const Tree*, Tree*>> pending{{&other, this}};
  while (!pending.empty()) {
    auto [from, to] = pending.back();
    pending.pop_back();
    to->children.reserve(from->children.size());
    for (const Tree& child : from->children) {
      Tree& copy = to->children.emplace_back(child.label);
      copy.score = child.score;
    }
    // `to->children` is never resized again, so the pointers stay valid.
    for (size_t i = 0; i < from->children.size(); ++i) {
      if (!from->children[i].children.empty()) {
        pending.emplace_back(&from->children[i], &to->children[i]);
      }
    }
  }
}

Tree& Tree::operator=(const Tree& other) {
  if (this != &other) *this = Tree(other);  // copied first: `other` may lie below this node
  return *this;
}

Tree::~Tree() {
  // The descendants are moved into one list and destroyed there, each with no children left, so
  // no destructor call nests inside another.
  if (children.empty()) return;
  std::vector<Tree> pending = std::move(children);
  while (!pending.empty()) {
    Tree node = std::move(pending.back());
    pending.pop_back();
    for (Tree& child : node.children) {
      if (!child.children.empty()) pending.push_back(std::move(child));
    }
    node.children.clear();  // leaves and moved-from nodes only
  }
}

bool Tree::operator==(const Tree& other) const {
  std::vector<std::pair<const Tree*, const Tree*>> pending{{this, &other}};
  while (!pending.empty()) {
    auto [a, b] = pending.back();
    pending.pop_back();
    if (a->label != b->label || a->children.size() != b->children.size()) return false;
    for (size_t i = 0; i < a->children.size(); ++i) {
      pending.emplace_back(&a->children[i], &b->children[i]);
    }
  }
  return true;
}

namespace {

void AppendScore(double score, std::string* out) {
  // Java's Double.toString gives up to 17 significant digits; %.17g keeps every bit.
  char buffer[40];
  std::snprintf(buffer, sizeof(buffer), "%.17g", score);
  out->append(buffer);
}

}  // namespace

std::string ToBracketString(const Tree& tree, bool with_scores) {
  std::string out;
  WalkTree(
      tree,
      [&](const Tree& node, size_t depth) {
        if (depth > 0) out.push_back(' ');
        if (node.is_leaf()) {
          out.append(node.label);
          return false;
        }
        out.push_back('(');
        out.append(node.label);
        if (with_scores && node.has_score()) {
          out.push_back(' ');
          AppendScore(node.score, &out);
        }
        return true;
      },
      [&](const Tree&, size_t) { out.push_back(')'); });
  return out;
}

std::vector<std::string> Leaves(const Tree& tree) {
  std::vector<std::string> words;
  WalkTree(
      tree,
      [&](const Tree& node, size_t) {
        if (node.is_leaf()) words.push_back(node.label);
        return !node.is_leaf();
      },
      [](const Tree&, size_t) {});
  return words;
}

size_t TreeDepth(const Tree& tree) {
  size_t deepest = 0;
  WalkTree(
      tree,
      [&](const Tree&, size_t depth) {
        deepest = std::max(deepest, depth + 1);
        return true;
      },
      [](const Tree&, size_t) {});
  return deepest;
}

}  // namespace cky
