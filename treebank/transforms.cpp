#include "treebank/transforms.h"

#include <unordered_set>
#include <utility>

namespace cky {
namespace {

// Removes -NONE- preterminals, then every constituent left without children, bottom-up. Returns
// false when nothing is left.
bool StripEmpty(Tree* tree, const std::string& empty_label) {
  if (tree->is_preterminal()) return tree->label != empty_label;
  // Constituents left without children: their parent (whose `leave` comes later) drops them.
  std::unordered_set<const Tree*> emptied;
  WalkTree(
      *tree, [](const Tree& node, size_t) { return !node.is_leaf() && !node.is_preterminal(); },
      [&](Tree& node, size_t) {
        std::vector<Tree> kept;
        kept.reserve(node.children.size());
        for (Tree& child : node.children) {
          const bool empty_element = child.is_preterminal() && child.label == empty_label;
          if (!empty_element && emptied.erase(&child) == 0) kept.push_back(std::move(child));
        }
        node.children = std::move(kept);
        if (node.children.empty()) emptied.insert(&node);
      });
  return emptied.empty();  // only the root can be left in it
}

}  // namespace

bool StripEmptyElements(Tree* tree, const std::string& empty_label) {
  Tree copy = *tree;
  if (!StripEmpty(&copy, empty_label)) return false;
  *tree = std::move(copy);
  return true;
}

std::string StripFunctionTag(const std::string& label) {
  if (!label.empty() && label[0] == '-') return label;  // -NONE-, -LRB-, -RRB-
  for (size_t i = 1; i < label.size(); ++i) {
    if (label[i] == '-' || label[i] == '=') return label.substr(0, i);
  }
  return label;
}

void StripFunctionTags(Tree* tree, bool also_tags) {
  WalkTree(
      *tree,
      [&](Tree& node, size_t) {
        if (node.is_leaf()) return false;
        if (!node.is_preterminal() || also_tags) node.label = StripFunctionTag(node.label);
        return !node.is_preterminal();
      },
      [](Tree&, size_t) {});
}

bool IsRootWrapperLabel(const std::string& label) {
  return label.empty() || label == "TOP" || label == "ROOT";
}

void CollapseRoot(Tree* tree) {
  if (!tree->is_leaf() && IsRootWrapperLabel(tree->label) && tree->children.size() == 1 &&
      !tree->children[0].is_leaf()) {
    Tree child = std::move(tree->children[0]);
    *tree = std::move(child);
  }
}

void SetRootLabel(Tree* tree, const std::string& label) {
  if (!tree->is_preterminal() && IsRootWrapperLabel(tree->label)) {
    tree->label = label;
    return;
  }
  Tree wrapped(label);
  wrapped.children.push_back(std::move(*tree));
  *tree = std::move(wrapped);
}

std::vector<std::string> Tags(const Tree& tree) {
  std::vector<std::string> tags;
  WalkTree(
      tree,
      [&](const Tree& node, size_t) {
        if (node.is_preterminal()) tags.push_back(node.label);
        return !node.is_preterminal();
      },
      [](const Tree&, size_t) {});
  return tags;
}

std::vector<LabeledSpan> Spans(const Tree& tree, bool include_preterminals) {
  std::vector<LabeledSpan> spans;
  std::vector<size_t> open;  // per node entered and not yet left: its span's index, or npos
  int words = 0;
  WalkTree(
      tree,
      [&](const Tree& node, size_t) {
        if (node.is_leaf()) {
          ++words;
          return false;
        }
        const bool keep = include_preterminals || !node.is_preterminal();
        open.push_back(keep ? spans.size() : std::string::npos);
        if (keep) spans.push_back({node.label, words, words});
        return true;
      },
      [&](const Tree&, size_t) {
        if (open.back() != std::string::npos) spans[open.back()].end = words;
        open.pop_back();
      });
  return spans;
}

}  // namespace cky
