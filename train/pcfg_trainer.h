// Training a plain (unsplit) markovized PCFG from treebank trees by relative frequency, written in
// the Berkeley parser's WriteGrammarToTextFile format (grammar_io/berkeley_model.h) so that our
// loader and the Berkeley tools read it. Every symbol has one substate, so every state is `X_0`.
//
// From the two training trees
//   (ROOT (S (NP (DT the) (NN dog)) (VP (VBZ barks))))
//   (ROOT (S (NP (NNP Rex) (VBZ barks) (NN dog)) ...)          (illustration only)
// with horizontal markovization 1 and vertical 2 (parent annotation), NP -> NNP VBZ NN under S
// becomes
//   NP^S_0 -> @NP^S->_NN_0 NN_0          (@X covers all children but the last; it remembers the
//   @NP^S->_NN_0 -> NNP_0 VBZ_0           next sibling to its right, here NN)
// i.e. Berkeley's left-leaning binarization: X -> @X last, @X -> @X next, leftmost children
// deepest, the lowest @X binary over the first two children. Unary rules are written closed: for
// every pair (A, B) the best-scoring unary chain A ->...-> B (max product), plus an identity
// `X_0 -> X_0 1.0` for every symbol. ROOT_0 rewrites only through unaries.
//
// The lexicon (`TAG word [p]`, p = P(word | TAG)) reserves, for each tag T, the share of T's
// tokens that are rare words (seen at most `rare_word_max_count` times in all the training data):
//   lambda_T       = rare tokens of T / tokens of T
//   P(w | T)       = (1 - lambda_T) * count(T, w) / count(T)     (seen pairs only; 0 is not
//   written) P(UNK-sig | T) = lambda_T * (rare(T, sig) + a * rare(sig) / rare) / (rare(T) + a)
// where sig is Berkeley's signature of the rare token (lexicon/signature.h, at its position in the
// sentence), a = `signature_smoothing`, and UNK rows are written for every tag with rare tokens and
// every signature seen on a rare token. Each tag's probabilities sum to 1, unless known words seen
// at most `smoothed_word_max_count` times are smoothed (as the Berkeley lexicon smooths rare
// words):
//   P(T | w) = (count(T, w) + s * rare(T) / rare) / (count(w) + s)
//   P(w | T) = (1 - lambda_T) * P(T | w) * count(w) / count(T)                 (for every such T)
// which moves a little mass between the tags.
// Output is deterministic: rules, rows and words are sorted by name (byte order).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "treebank/tree.h"

namespace cky {

// The defaults are the settings that scored best on the GUM test documents (data/README.md).
struct PcfgTrainerOptions {
  // How many siblings an @X intermediate remembers: the children of the original rule right of
  // the ones it covers, nearest first, listed left to right ("@NP->_JJ_NN" for h = 2). 0 gives
  // plain "@NP" (as Berkeley's trainer writes); negative remembers all of them.
  int horizontal_markovization = 1;
  // 1: labels as they are; 2: phrasal labels carry their parent's label ("NP^S"); 3: and the
  // grandparent's ("NP^VP^S"). POS tags are annotated only with tag_parent_annotation.
  int vertical_markovization = 3;
  // POS tags carry their parent's label ("IN^PP"; bracket tags such as -LRB- excepted); the
  // lexicon is then estimated per annotated tag.
  bool tag_parent_annotation = false;
  // Words seen at most this often in all the training trees estimate the unknown-word rows.
  int rare_word_max_count = 1;
  // The `a` above: how much the signature's share among all rare tokens smooths the tag's own.
  double signature_smoothing = 1.0;
  // Known words seen at most this often may take any tag that rare words take: their P(T | w) is
  // smoothed with the tag distribution of rare tokens (see above). 0 turns this off.
  int smoothed_word_max_count = 20;
  // The `s` above.
  double word_smoothing = 1.0;
};

// The four text files of a WriteGrammarToTextFile export, each a sequence of '\n'-ended lines.
struct BerkeleyTextExport {
  std::string grammar;  // PREFIX.grammar
  std::string lexicon;  // PREFIX.lexicon
  std::string splits;   // PREFIX.splits
  std::string words;    // PREFIX.words
};

// Normalises a treebank tree for training: removes -NONE- elements and function tags, labels the
// root ROOT (a wrapper root "", TOP or ROOT is relabelled; several top constituents stay under
// it), and collapses unary X -> X self-chains. Returns false when no words are left.
bool NormalizeTrainingTree(Tree* tree);

// Estimates the grammar from `trees` (normalised with NormalizeTrainingTree first; trees left
// empty are skipped). Fails when no tree has words or the options are out of range.
StatusOr<BerkeleyTextExport> TrainPcfg(const std::vector<Tree>& trees,
                                       const PcfgTrainerOptions& options = {});

// Writes PREFIX.grammar, PREFIX.lexicon, PREFIX.splits and PREFIX.words (plain text).
Status WriteBerkeleyTextExport(const BerkeleyTextExport& text, const std::string& prefix);

}  // namespace cky
