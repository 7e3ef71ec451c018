// The Berkeley parser's output forms of a parse.
//
//   binarized, annotated (from tree extraction):
//     (ROOT-0 (S-2 (@S-3 (NP-1 (PRP-0 We)) (VP-1 (VBP-2 parse))) (.-1 .)))
//   FormatBerkeley:             ( (S (NP (PRP We)) (VP (VBP parse)) (. .)) )
//   FormatBerkeleyBinarized:    ( (S-2 -14.2 (@S-3 -11.9 (NP-1 -3.1 (PRP-0 -1.2 We)) ...) ...) )
//   a failed parse:             (())
#pragma once

#include <string>

#include "treebank/tree.h"

namespace cky {

inline constexpr const char* kNoParseOutput = "(())";

// Splices out "@" nodes, drops substates ("NP-3" -> "NP") and cuts labels at the first '-', '='
// or '^' after their first character ("NP-SBJ" -> "NP"); labels that start with '-' ("-LRB-") stay
// whole. The root's label becomes "".
Tree Debinarize(const Tree& annotated);

// "( (S ...) )": the debinarized tree as the Berkeley parser prints it.
std::string FormatBerkeley(const Tree& annotated);

// "( (S-2 -91.08 ...) )": Berkeley's `-binarize -substates [-scores]` output.
std::string FormatBerkeleyBinarized(const Tree& annotated, bool with_scores);

// Berkeley's three output switches, in any combination: keep the "@" nodes (binarize), keep the
// "-substate" suffixes (substates), print each node's chart score after its label (scores).
struct OutputForm {
  bool binarize = false;
  bool substates = false;
  bool scores = false;
};
std::string FormatTree(const Tree& annotated, const OutputForm& form);
// The tree FormatTree prints: an unlabelled root over the children in `form` (labels as printed,
// node scores kept for form.scores), for printers of other layouts (`cky parse --format pretty`).
Tree FormTree(const Tree& annotated, const OutputForm& form);

// A double as Java's Double.toString prints it, as the Berkeley parser's score columns do: the
// shortest digits that read back to the same double, "-87.86582921731302" between 1e-3 and 1e7,
// "1.0E-5" outside, "-Infinity", "NaN".
std::string FormatJavaDouble(double value);

}  // namespace cky
