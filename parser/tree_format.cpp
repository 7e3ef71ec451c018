#include "parser/tree_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace cky {
namespace {

// "NP-3" -> "NP": the annotated label without its substate.
std::string WithoutSubstate(const std::string& label) {
  size_t dash = label.rfind('-');
  if (dash != std::string::npos && dash > 0 && dash + 1 < label.size() &&
      label.find_first_not_of("0123456789", dash + 1) == std::string::npos) {
    return label.substr(0, dash);
  }
  return label;
}

// "NP-SBJ-3" -> "NP": drop the "-substate" suffix, then cut at the first '-', '=' or '^' after the
// first character. Labels that start with '-' ("-LRB-", "-NONE-") are bracket tokens: kept whole.
std::string BaseLabel(const std::string& label) {
  std::string base = WithoutSubstate(label);
  if (!base.empty() && base[0] == '-') return base;
  size_t cut = base.find_first_of("-=^", 1);
  return cut == std::string::npos ? base : base.substr(0, cut);
}

// The children of `annotated` in the output form, under `root`: "@" nodes spliced out unless
// binarized, labels shortened as the form asks. Not recursive (a long sentence's tree is deep).
void TransformChildren(const Tree& annotated, const OutputForm& form, Tree* root) {
  auto spliced = [&](const Tree& node) {
    return !form.binarize && !node.label.empty() && node.label[0] == '@';
  };
  // The output node under construction for each node entered and not spliced out.
  std::vector<Tree*> built{root};
  WalkTree(
      annotated,
      [&](const Tree& node, size_t depth) {
        if (depth == 0) return true;
        if (node.is_leaf()) {
          built.back()->children.push_back(node);
          return false;
        }
        if (spliced(node)) return true;
        Tree& copy = built.back()->children.emplace_back(
            form.substates ? node.label
                           : (form.binarize ? WithoutSubstate(node.label) : BaseLabel(node.label)));
        copy.score = node.score;
        built.push_back(&copy);
        return true;
      },
      [&](const Tree& node, size_t depth) {
        if (depth > 0 && !spliced(node)) built.pop_back();
      });
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
  TransformChildren(annotated, OutputForm{}, &root);
  return root;
}

Tree FormTree(const Tree& annotated, const OutputForm& form) {
  Tree root("");
  TransformChildren(annotated, form, &root);
  return root;
}

std::string FormatTree(const Tree& annotated, const OutputForm& form) {
  return RootForm(FormTree(annotated, form), form.scores);
}

std::string FormatBerkeley(const Tree& annotated) { return FormatTree(annotated, {}); }

std::string FormatBerkeleyBinarized(const Tree& annotated, bool with_scores) {
  return FormatTree(annotated, {.binarize = true, .substates = true, .scores = with_scores});
}

std::string FormatJavaDouble(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value < 0 ? "-Infinity" : "Infinity";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  std::string text(buffer, result.ptr);  // "-1.615746276552045e+00"
  std::string sign;
  if (text[0] == '-') {
    sign = "-";
    text.erase(0, 1);
  }
  const size_t e = text.find('e');
  const int exponent = std::stoi(text.substr(e + 1));
  std::string digits = text.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const double magnitude = std::fabs(value);
  if (magnitude >= 1e-3 && magnitude < 1e7) {
    std::string whole, fraction;
    if (exponent >= 0) {
      while (int(digits.size()) < exponent + 1) digits += '0';
      whole = digits.substr(0, exponent + 1);
      fraction = digits.substr(exponent + 1);
    } else {
      whole = "0";
      fraction = std::string(-exponent - 1, '0') + digits;
    }
    if (fraction.empty()) fraction = "0";
    return sign + whole + "." + fraction;
  }
  std::string fraction = digits.size() > 1 ? digits.substr(1) : "0";
  return sign + digits.substr(0, 1) + "." + fraction + "E" + std::to_string(exponent);
}

}  // namespace cky
