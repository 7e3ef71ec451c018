#include "treebank/writer.h"

namespace cky {
namespace {

bool IsFlat(const Tree& tree) {
  for (const Tree& child : tree.children) {
    if (!child.is_leaf() && !child.is_preterminal()) return false;
  }
  return true;
}

// Every child of a node that is not flat starts a new line, two columns deeper than its parent.
void WriteIndented(const Tree& tree, std::string* out) {
  WalkTree(
      tree,
      [&](const Tree& node, size_t depth) {
        if (depth > 0) {
          out->push_back('\n');
          out->append(2 * depth, ' ');
        }
        if (node.is_leaf() || IsFlat(node)) {
          out->append(ToBracketString(node));
          return false;
        }
        out->push_back('(');
        out->append(node.label);
        return true;
      },
      [&](const Tree&, size_t) { out->push_back(')'); });
}

}  // namespace

std::string FormatPennTree(const Tree& tree, WriteLayout layout) {
  if (layout == WriteLayout::kOneLine) return ToBracketString(tree);
  std::string out;
  WriteIndented(tree, &out);
  return out;
}

void WriteTree(std::ostream& out, const Tree& tree, WriteLayout layout) {
  out << FormatPennTree(tree, layout) << '\n';
  if (layout == WriteLayout::kIndented) out << '\n';
}

}  // namespace cky
