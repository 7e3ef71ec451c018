#include "treebank/transforms.h"

#include <utility>

namespace cky {
namespace {

// Returns false when `tree` should be removed from its parent.
bool StripEmpty(Tree* tree, const std::string& empty_label) {
  if (tree->is_leaf()) return true;
  if (tree->is_preterminal()) return tree->label != empty_label;
  std::vector<Tree> kept;
  kept.reserve(tree->children.size());
  for (Tree& child : tree->children) {
    if (StripEmpty(&child, empty_label)) kept.push_back(std::move(child));
  }
  tree->children = std::move(kept);
  return !tree->children.empty();
}

void CollectTags(const Tree& tree, std::vector<std::string>* tags) {
  if (tree.is_preterminal()) {
    tags->push_back(tree.label);
    return;
  }
  for (const Tree& child : tree.children) CollectTags(child, tags);
}

int CollectSpans(const Tree& tree, int start, bool include_preterminals,
                 std::vector<LabeledSpan>* spans) {
  if (tree.is_leaf()) return start + 1;
  const bool keep = include_preterminals || !tree.is_preterminal();
  size_t index = spans->size();
  if (keep) spans->push_back({tree.label, start, start});
  int end = start;
  for (const Tree& child : tree.children)
    end = CollectSpans(child, end, include_preterminals, spans);
  if (keep) (*spans)[index].end = end;
  return end;
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
  if (tree->is_leaf()) return;
  if (!tree->is_preterminal() || also_tags) tree->label = StripFunctionTag(tree->label);
  for (Tree& child : tree->children) StripFunctionTags(&child, also_tags);
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
  CollectTags(tree, &tags);
  return tags;
}

std::vector<LabeledSpan> Spans(const Tree& tree, bool include_preterminals) {
  std::vector<LabeledSpan> spans;
  CollectSpans(tree, 0, include_preterminals, &spans);
  return spans;
}

}  // namespace cky
