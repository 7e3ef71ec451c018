#include "treebank/tree.h"

#include <cstdio>

namespace cky {
namespace {

void AppendScore(double score, std::string* out) {
  // Java's Double.toString gives up to 17 significant digits; %.17g keeps every bit.
  char buffer[40];
  std::snprintf(buffer, sizeof(buffer), "%.17g", score);
  out->append(buffer);
}

void Write(const Tree& tree, bool with_scores, std::string* out) {
  if (tree.is_leaf()) {
    out->append(tree.label);
    return;
  }
  out->push_back('(');
  out->append(tree.label);
  if (with_scores && tree.has_score()) {
    out->push_back(' ');
    AppendScore(tree.score, out);
  }
  for (const Tree& child : tree.children) {
    out->push_back(' ');
    Write(child, with_scores, out);
  }
  out->push_back(')');
}

void CollectLeaves(const Tree& tree, std::vector<std::string>* words) {
  if (tree.is_leaf()) {
    words->push_back(tree.label);
    return;
  }
  for (const Tree& child : tree.children) CollectLeaves(child, words);
}

}  // namespace

std::string ToBracketString(const Tree& tree, bool with_scores) {
  std::string out;
  Write(tree, with_scores, &out);
  return out;
}

std::vector<std::string> Leaves(const Tree& tree) {
  std::vector<std::string> words;
  CollectLeaves(tree, &words);
  return words;
}

}  // namespace cky
