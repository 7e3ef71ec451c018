// Normalizing treebank trees for training and scoring, and reading off their words, tags and spans.
//
//   ( (S (NP-SBJ-1 (NNP Mary)) (VP (VBD was) (VP (VBN seen) (NP (-NONE- *-1)))) (. .)))
//     StripEmptyElements  ->  ( (S (NP-SBJ-1 (NNP Mary)) (VP (VBD was) (VP (VBN seen))) (. .)))
//     StripFunctionTags   ->  ( (S (NP (NNP Mary)) (VP (VBD was) (VP (VBN seen))) (. .)))
//     SetRootLabel "ROOT" ->  (ROOT (S (NP (NNP Mary)) ...))
//     CollapseRoot        ->  (S (NP (NNP Mary)) ...)
#pragma once

#include <string>
#include <vector>

#include "treebank/tree.h"

namespace cky {

// Removes preterminals whose label is "-NONE-" (traces, null elements) and every constituent left
// without children. Returns false when nothing is left (the tree held only empty elements); the
// tree is then unchanged.
bool StripEmptyElements(Tree* tree, const std::string& empty_label = "-NONE-");

// "NP-SBJ-1" -> "NP", "NP=2" -> "NP", "PP-LOC-CLR" -> "PP", "WHNP-3" -> "WHNP": a label is cut at
// its first '-' or '='; labels that begin with '-' ("-NONE-", "-LRB-", "-RRB-") stay whole.
// Applies to constituents above the preterminals, and to preterminals too when `also_tags` is set;
// words are never changed.
void StripFunctionTags(Tree* tree, bool also_tags = false);
std::string StripFunctionTag(const std::string& label);

// True for the labels treebanks give their wrapper root: "", "TOP", "ROOT".
bool IsRootWrapperLabel(const std::string& label);

// Replaces a wrapper root ("( (S ...))", "(TOP (S ...))", "(ROOT (S ...))") that has exactly one
// child by that child. A tree without such a wrapper is unchanged.
void CollapseRoot(Tree* tree);

// Gives the tree a wrapper root labelled `label`: a wrapper root is relabelled, any other root is
// wrapped in a new node.
void SetRootLabel(Tree* tree, const std::string& label);

// The preterminal labels (POS tags), left to right, one per word under a preterminal.
std::vector<std::string> Tags(const Tree& tree);

// A constituent's label and word span [start, end).
struct LabeledSpan {
  std::string label;
  int start = 0;
  int end = 0;
  bool operator==(const LabeledSpan& other) const = default;
};

// The spans of the constituents above the preterminals, in preorder (a parent before its
// children); preterminals too when `include_preterminals` is set. Word positions count leaves.
std::vector<LabeledSpan> Spans(const Tree& tree, bool include_preterminals = false);

}  // namespace cky
