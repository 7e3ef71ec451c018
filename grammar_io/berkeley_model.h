// Loading Berkeley parser grammars from their text exports, and our binary cache of them.
//
// WriteGrammarToTextFile writes PREFIX.grammar, PREFIX.lexicon, PREFIX.splits, PREFIX.words:
//
//   PREFIX.grammar   S_0 -> @S_1 S_0 0.020400813611217757      binary: parent left right prob
//                    ROOT_0 -> S_1 9.266649582567496E-7         closed unary (identities included)
//   PREFIX.lexicon   IN through [0.0015646, 0.0041012, 0.0020382, 0.0117154]
//                                                  P(word | tag_k), one value per substate of the
//                                                  tag
//   PREFIX.splits    NP<TAB>(0 (0 0 1) (1 2 3))     split tree; its leaves are the final substates
//   PREFIX.words     through                        one known word or UNK signature per line
//
// DumpGrammar writes PREFIX.binary (`P_i L_j R_k p`), PREFIX.unary (`P_i C_j p`), PREFIX.lexicon
// (as above), PREFIX.numstates (`TAG<TAB>n`), PREFIX.hierarchy (as .splits) and PREFIX.words. Every
// file may also be gzipped (PREFIX.grammar.gz); probabilities are plain, never logs.
#pragma once

#include <functional>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "grammar_io/grammar.h"

namespace cky {

// One row of a .lexicon file: P(word | symbol_k) for every substate k of the tag symbol.
struct LexiconRow {
  int32_t symbol;
  std::string word;  // a word, or an UNK signature such as "UNK-CAPS-s"
  std::vector<double> probs;
};

// The counts of Berkeley's SophisticatedLexicon, as a .gr file holds them (the text exports hold
// only scores derived from them). lexicon/berkeley_lexicon.h scores words from these exactly as
// SophisticatedLexicon.score does. Symbol ids are the Grammar's.
struct BerkeleyLexiconCounts {
  struct Entry {
    int32_t symbol;
    std::string word;            // a word (seen) or an UNK signature (unseen)
    std::vector<double> counts;  // one per substate of the symbol
  };
  std::vector<Entry> seen;    // wordToTagCounters: c(tag_k, word)
  std::vector<Entry> unseen;  // unseenWordToTagCounters: c(tag_k, signature) among rare words
  std::vector<std::pair<std::string, double>> word_counts;  // wordCounter: c(word), c(signature)
  std::vector<std::vector<double>> tag_counts;              // tagCounter, per symbol and substate
  std::vector<std::vector<double>> unseen_tag_counts;       // unseenTagCounter
  // The lexicon's smoother (SmoothAcrossParentBits): per symbol an n*n row-major matrix W, scores
  // become W * scores. Empty for a symbol (or all) means no smoothing (NoSmoothing).
  std::vector<std::vector<double>> smoothing_weights;
  std::vector<uint8_t> lexical_symbols;  // symbols the parser asks the lexicon about (POS tags)
  double total_tokens = 0;
  double total_unseen_tokens = 0;
  double smooth_unseen = 0;  // smooth[0]
  double smooth_seen = 0;    // smooth[1]
  double smooth_in_unknowns_threshold = 100;
  int32_t unknown_level = 5;
};

// Everything a Berkeley grammar holds.
struct BerkeleyModel {
  Grammar grammar;
  std::vector<LexiconRow> lexicon;
  std::vector<std::string> known_words;  // the .words file: known words and UNK signatures
  // Present when the model was read from a .gr file (or a cache of one): the lexicon's counts,
  // from which Lexicon::Build makes an exact scorer instead of using `lexicon`'s rows.
  std::optional<BerkeleyLexiconCounts> lexicon_counts;
  // Settings recorded in the .gr (ParserData); -1 when unknown.
  int32_t h_markov = -1;
  int32_t v_markov = -1;
  std::string binarization;  // "LEFT", "RIGHT", ...; empty when unknown
};

struct LoadOptions {
  // Binary rules with a smaller probability are dropped. The Berkeley parser drops p < 1e-10 before
  // parsing; 0 keeps every rule.
  double min_binary_prob = 0.0;
  // Use (and refresh) the binary cache for text grammars: $XDG_CACHE_HOME/cky or ~/.cache/cky.
  // A cache is found by the content of the grammar files (their sizes and SHA-1 hashes), the
  // format and min_binary_prob, never by modification times.
  bool use_cache = true;
  // Called with the cache file's path after a cache was written (so that the caller can say so).
  std::function<void(const std::string& cache_path)> on_cache_written;
};

// Reads PREFIX.{grammar,lexicon,splits,words}[.gz].
StatusOr<BerkeleyModel> ReadWriteGrammarTextFiles(const std::string& prefix,
                                                  const LoadOptions& options = {});
// Reads a WriteGrammarToTextFile export from plain-text streams (e.g. a grammar embedded in the
// program and decompressed in memory), exactly as ReadWriteGrammarTextFiles reads files. `splits`
// and `words` may be null (as when those files are absent); `name` stands for PREFIX in error
// messages ("NAME.grammar:12: ...").
StatusOr<BerkeleyModel> ReadWriteGrammarTextFromStreams(std::istream& grammar,
                                                        std::istream& lexicon, std::istream* splits,
                                                        std::istream* words,
                                                        const std::string& name,
                                                        const LoadOptions& options = {});
// Reads PREFIX.{binary,unary,lexicon,numstates,hierarchy,words}[.gz].
StatusOr<BerkeleyModel> ReadDumpGrammarFiles(const std::string& prefix,
                                             const LoadOptions& options = {});

// Writes and reads the binary cache (magic "CKYMODEL", format version checked on load).
Status WriteModelCache(const BerkeleyModel& model, const std::string& path);
// The bytes WriteModelCache writes (a product grammar holds them: grammar_io/product_grammar.h).
std::string ModelCacheBytes(const BerkeleyModel& model);
StatusOr<BerkeleyModel> ReadModelCache(const std::string& path);
// The same from the cache file's bytes in memory (the built-in grammar); `name` stands for the
// path in error messages.
StatusOr<BerkeleyModel> ReadModelCacheFromMemory(std::string_view data, const std::string& name);

// Writes the WriteGrammarToTextFile form: PREFIX.grammar (binary rules, then the closed unary
// rules with an identity per state), PREFIX.lexicon, PREFIX.splits and PREFIX.words.
Status WriteGrammarTextFiles(const BerkeleyModel& model, const std::string& prefix);

// Which on-disk form `spec` names.
enum class GrammarFormat { kWriteGrammarText, kDumpGrammar, kCache, kJavaSerialized, kUnknown };
GrammarFormat DetectGrammarFormat(const std::string& spec);

// Loads whatever `spec` names: a .ckybin cache file, a Berkeley .gr file (gzipped Java
// serialization: grammar_io/berkeley_gr.h), or a text export PREFIX. For text exports the
// binary cache of the same content is used (see LoadOptions::use_cache).
StatusOr<BerkeleyModel> LoadBerkeleyModel(const std::string& spec, const LoadOptions& options = {});

}  // namespace cky
