// What a Berkeley grammar holds once read (BerkeleyModel), and how it is read (LoadOptions): the
// types every reader fills (grammar_io/berkeley_model.h: the text exports and the cache;
// grammar_io/berkeley_gr.h: the .gr files), in a header of their own so that the readers depend on
// them and not on each other.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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
  // Use (and refresh) the binary cache for text grammars: $XDG_CACHE_HOME/cky, else ~/.cache/cky
  // (from $HOME or the user's passwd entry; no cache without either). A cache is found by the
  // content of the grammar files (their sizes and 128-bit hashes), the format and
  // min_binary_prob, never by modification times. The directory is made 0700 and used only when
  // it is this user's and no one else may write to it; a cache file is read only when it is this
  // user's, and only when its checksum holds (else it is written again, with a warning).
  bool use_cache = true;
  // Called with the cache file's path after a cache was written (so that the caller can say so).
  std::function<void(const std::string& cache_path)> on_cache_written;
  // Called with what went wrong with the cache (a damaged or foreign file ignored, a directory
  // others may write to, a cache that could not be written); the grammar still loads.
  std::function<void(const std::string& message)> on_cache_warning;
  // Read a .ckybin of format version 5, which has no checksum (cky convert, to rewrite it).
  bool unchecked_version_5 = false;
};

}  // namespace cky
