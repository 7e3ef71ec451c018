#include "treebank/writer.h"

namespace cky {
namespace {

bool IsFlat(const Tree& tree) {
  for (const Tree& child : tree.children) {
    if (!child.is_leaf() && !child.is_preterminal()) return false;
  }
  return true;
}

void WriteIndented(const Tree& tree, int indent, std::string* out) {
  if (tree.is_leaf() || IsFlat(tree)) {
    out->append(ToBracketString(tree));
    return;
  }
  out->push_back('(');
  out->append(tree.label);
  for (const Tree& child : tree.children) {
    out->push_back('\n');
    out->append(static_cast<size_t>(indent + 2), ' ');
    WriteIndented(child, indent + 2, out);
  }
  out->push_back(')');
}

}  // namespace

std::string FormatPennTree(const Tree& tree, WriteLayout layout) {
  if (layout == WriteLayout::kOneLine) return ToBracketString(tree);
  std::string out;
  WriteIndented(tree, 0, &out);
  return out;
}

void WriteTree(std::ostream& out, const Tree& tree, WriteLayout layout) {
  out << FormatPennTree(tree, layout) << '\n';
  if (layout == WriteLayout::kIndented) out << '\n';
}

}  // namespace cky
