// Reading the Berkeley parser's own grammar files (*.gr): a gzipped Java serialization
// (grammar_io/java_serialization.h) of edu.berkeley.nlp.PCFGLA.ParserData. What we take from it:
//
//   ParserData { gr: Grammar, lex: SophisticatedLexicon, numbs: HashMap<String, Numberer>,
//                h_markov, v_markov: int, bin: Binarization (enum) }
//   numbs["tags"].intToObject: HashMap<Integer, String>      state number -> "NP", "@S", "ROOT"
//   Grammar { numSubStates: short[], isGrammarTag: boolean[], splitTrees: Tree<Short>[],
//             binaryRulesWithParent: List<BinaryRule>[], BinaryRule.scores[left][right][parent]
//             closedViterbiRulesWithParent: List<UnaryRule>[] } UnaryRule.scores[child][parent]
//   SophisticatedLexicon { wordToTagCounters, unseenWordToTagCounters: HashMap<String, double[]>[],
//             tagCounter, unseenTagCounter: double[][], wordCounter: Counter<String>,
//             totalTokens, totalUnseenTokens, smooth: double[2], smoothInUnknownsThreshold,
//             unknownLevel, smoother: SmoothAcrossParentBits { diffWeights: double[][][] } }
//
// The closed Viterbi unary rules are stored in the file (Grammar computed them when training
// ended: chains of up to two unaries, identities included), so they are read, not recomputed.
// The binary rules are those WriteGrammarToTextFile prints (every substate triple with p > 0), the
// unaries those it prints after them, so a .gr and its text export give the same Grammar.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "grammar_io/berkeley_model_types.h"
#include "grammar_io/java_serialization.h"

namespace cky {

// True when the file starts with the gzip magic or the Java serialization magic (AC ED).
bool LooksLikeJavaSerializedGrammar(const std::string& path);

// Reads a .gr file (gzipped or not). The model carries the lexicon's counts
// (BerkeleyModel::lexicon_counts) and, in `lexicon`, the rows the text export would hold (scores
// of every (tag, word) and (tag, signature) pair seen in training, as
// SophisticatedLexicon.toString prints them). Decompressed input is capped at `max_bytes`.
StatusOr<BerkeleyModel> ReadBerkeleyGrFile(const std::string& path, const LoadOptions& options = {},
                                           uint64_t max_bytes = 1ull << 30);

// The same from a decompressed serialization stream held in memory (`source` names it in errors).
StatusOr<BerkeleyModel> BerkeleyModelFromSerialization(std::string_view stream,
                                                       const std::string& source,
                                                       const LoadOptions& options = {});

}  // namespace cky
