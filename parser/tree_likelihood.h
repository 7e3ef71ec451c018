// P(tree, words): the probability of one tree over base symbols, summed over every assignment of
// latent substates to its nodes, as the Berkeley parser computes it for -tree_likelihood and
// -confidence (CoarseToFineMaxRuleParser.getLogLikelihood(tree): the tree re-binarized by
// TreeAnnotations.processTree, then ArrayParser.doInsideScores over it):
//
//   a tag over word i:      in(t) = P(word_i | t)                      (the sentence's lexical scores)
//   a unary node A over C:  in(a) = sum_c p(a -> c) in(c)              (base unary rules, not closed)
//   a binary node A -> B C: in(a) = sum_{b,c} p(a -> b c) in(b) in(c)
//   P(T, w) = in(ROOT_0) at the top.
//
// Unary nodes multiply the grammar's base unary rules (Grammar::base_unary_*, which .gr files
// hold), so a closed unary that a max-rule tree prints as A -> I -> C costs p(A -> I) p(I -> C).
// -tree_likelihood scores the binarized tree the decoder produced; -confidence scores the printed
// tree (@ nodes spliced out) binarized again the grammar's way (RebinarizeTree), and subtracts
// log P(w): the two differ where the decoder's @ structure is not the canonical one.
#pragma once

#include <string>

#include "common/status.h"
#include "grammar_io/grammar.h"
#include "parser/viterbi_reference.h"
#include "treebank/tree.h"

namespace cky {

// log P(tree, words) of a binarized tree ("ROOT" at the top, base-symbol labels, "@X" nodes as the
// grammar has them, leaves the words) under the grammar and the sentence's lexical scores;
// -infinity when the grammar gives it probability 0. Fails when the grammar has no base unaries
// (text exports) or the tree has a label the grammar lacks, a node with more than two children,
// or a different number of words than `lexical`.
StatusOr<double> TreeLogLikelihood(const Grammar& grammar, const LexicalScores& lexical,
                                   const Tree& tree);

// The Berkeley parser's re-binarization of an output tree before -confidence: nodes labelled
// "@..." are spliced out (their children take their place), then every node with more than two
// children is binarized as TreeAnnotations does for `binarization` (the .gr file's, e.g. "RIGHT":
// X -> A B C D becomes X -> @X D, @X -> @X C, @X -> A B; "LEFT": X -> A @X, @X -> B @X,
// @X -> C D). Fails for another binarization (HEAD and PARENT need a head finder).
StatusOr<Tree> RebinarizeTree(const Tree& tree, const std::string& binarization);

}  // namespace cky
