#include "parser/tree_format.h"

namespace cky {
namespace {

// "NP-SBJ-3" -> "NP": drop the "-substate" suffix, then cut at the first '-', '=' or '^' after the
// first character. Labels that start with '-' ("-LRB-", "-NONE-") are bracket tokens: kept whole.
std::string BaseLabel(const std::string& label) {
  std::string base = label;
  size_t dash = base.rfind('-');
  if (dash != std::string::npos && dash > 0 && dash + 1 < base.size() &&
      base.find_first_not_of("0123456789", dash + 1) == std::string::npos) {
    base.resize(dash);
  }
  if (!base.empty() && base[0] == '-') return base;
  size_t cut = base.find_first_of("-=^", 1);
  return cut == std::string::npos ? base : base.substr(0, cut);
}

void SpliceInto(const Tree& node, std::vector<Tree>* out) {
  if (node.is_leaf()) {
    out->push_back(node);
    return;
  }
  if (!node.label.empty() && node.label[0] == '@') {
    for (const Tree& child : node.children) SpliceInto(child, out);
    return;
  }
  Tree copy(BaseLabel(node.label));
  copy.score = node.score;
  for (const Tree& child : node.children) SpliceInto(child, &copy.children);
  out->push_back(std::move(copy));
}

// Berkeley prints the unlabelled root as "( child child )".
std::string RootForm(const Tree& root, bool with_scores) {
  std::string out = "(";
  for (const Tree& child : root.children) {
    out += ' ';
    out += ToBracketString(child, with_scores);
  }
  out += " )";
  return out;
}

}  // namespace

Tree Debinarize(const Tree& annotated) {
  Tree root("");
  root.score = annotated.score;
  for (const Tree& child : annotated.children) SpliceInto(child, &root.children);
  return root;
}

std::string FormatBerkeley(const Tree& annotated) {
  return RootForm(Debinarize(annotated), /*with_scores=*/false);
}

std::string FormatBerkeleyBinarized(const Tree& annotated, bool with_scores) {
  return RootForm(annotated, with_scores);
}

}  // namespace cky
