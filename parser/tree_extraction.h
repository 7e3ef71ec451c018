// Reading the best tree back out of a Viterbi chart.
//
// Without backpointers (Yi et al. 2011, §2.2; the Berkeley parser's extractBestViterbiParse): start
// at ROOT_0 over the whole sentence and, at each node, find a rule whose score plus its children's
// chart scores reproduces the node's chart score, within a relative tolerance. Berkeley's order,
// which decides exact ties: binary rules before unaries; binaries by split point, then rule order;
// on one-word spans a phrasal state goes by its best unary straight to a POS tag (the last of equal
// candidates wins; see ExtractionOptions::lexical for grammars where that finds none). Unaries are
// matched against the child's chart score (after its unary layer), so a closed unary can be
// followed by another, as in Berkeley's output; when none matches (a unary closure that is not
// transitive lifted the child's score by its own unary), against the child's best binary score,
// the one the inside pass used.
//
// Trees come out binarized and annotated: labels are Berkeley's "SYMBOL-substate" ("@NP-3"),
// every node carries its chart score, the root is "ROOT-0" and leaves are the words.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "grammar_io/grammar.h"
#include "parser/chart.h"
#include "parser/viterbi_reference.h"
#include "treebank/tree.h"

namespace cky {

// A node's label in extracted trees: Berkeley's "SYMBOL-substate" ("@NP-3").
std::string ViterbiNodeLabel(const Grammar& grammar, int32_t state);

// Berkeley's test: |x - y| / (|x| + |y| + 1e-10) < tolerance.
bool ScoresMatch(double x, double y, double tolerance);

struct ExtractionOptions {
  double tolerance = 1e-5;  // Berkeley's
  // The sentence's lexical scores. Needed only for grammars whose phrasal symbols also rewrite to
  // words (a dense PCFG written as a Berkeley grammar): where Berkeley's one-word rule finds no
  // unary down to a POS tag, a phrasal state whose lexical score is its chart score becomes a
  // preterminal, else a unary to a phrasal child is matched as on longer spans.
  const LexicalScores* lexical = nullptr;
};

// The best tree rooted in ROOT_0 over the whole sentence. Fails when the root score is -infinity
// (no parse) or when no rule reproduces a node's score (a chart inconsistent with the grammar).
StatusOr<Tree> ExtractViterbiTree(const Grammar& grammar, const Chart& chart,
                                  const std::vector<std::string>& words,
                                  const ExtractionOptions& options = {});

// The same tree read from backpointers recorded by ReferenceViterbiInside (exact argmax; used to
// test the extraction above).
StatusOr<Tree> ExtractFromBackpointers(const Grammar& grammar, const Chart& chart,
                                       const Backpointers& backpointers,
                                       const std::vector<std::string>& words);

}  // namespace cky
