// Lexical scores log P(word | tag_k) for every tag substate, from a Berkeley .lexicon export.
//
// Known words (those with a .lexicon row) score under the tags of their rows; unknown words score
// through their signature's rows (lexicon/signature.h). The text exports hold no counts, so scores
// that the Berkeley parser smooths into other tags are missing (FORMATS.md §3). Our documented
// fallbacks:
//   - optionally (LexiconOptions::backoff_unknown_words, off by default), an unknown word whose
//     signature has no row for a tag backs off, tag by tag, to ever shorter signatures, dropping
//     the last "-part": UNK-CAPS-NUM-s, UNK-CAPS-NUM, UNK-CAPS, UNK. Off by default because it
//     hurts: fewer trees equal Berkeley's on the reference sentences of small_sm2 and gum_sm3;
//   - when asked to widen (Score's `widen_known_words`, which the Parser uses only to retry a
//     sentence that has no parse), a known word also gets, under each tag with no row for the
//     word, its signature's row for that tag (as the C++ parser Ckylark does). Always doing so
//     hurts: frequent words then take absurd tags, and fewer trees equal Berkeley's.
//
// A model read from a Berkeley .gr file carries the lexicon's counts (BerkeleyModel::
// lexicon_counts); Build then makes the exact scorer of lexicon/berkeley_lexicon.h instead, and
// every score equals the Berkeley parser's (no fallbacks needed; widening changes nothing).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "grammar_io/berkeley_model.h"
#include "lexicon/berkeley_lexicon.h"

namespace cky {

struct LexiconOptions {
  bool backoff_unknown_words = false;
};

class Lexicon {
 public:
  // Builds the scorer; the grammar must be the one the rows were read with.
  static StatusOr<Lexicon> Build(const BerkeleyModel& model, const LexiconOptions& options = {});

  // Fills `log_scores` (num_states entries) with log P(word | state) for the word at 0-based
  // `position` of its sentence; -infinity where the word cannot have that state. Returns the
  // number of states given a finite score (0 means the word has no tag at all). With
  // `widen_known_words`, known words also take their signature's scores for tags they lack.
  int Score(std::string_view word, int position, std::span<double> log_scores,
            bool widen_known_words = false) const;

  // The signature used for `word` at `position` (whether or not it is known).
  std::string Signature(std::string_view word, int position) const;
  bool IsKnown(std::string_view word) const;
  int32_t num_states() const { return num_states_; }
  // True when scores come from the lexicon's counts (a .gr model), exactly as Berkeley's.
  bool exact() const { return exact_ != nullptr; }

 private:
  struct Entry {
    int32_t first_state;
    int32_t num_substates;
    int32_t tag;
    uint32_t offset;  // into log_probs_
  };
  // Writes the entries of `word` into tags not yet covered; returns false when it has no row.
  bool Apply(const std::string& word, std::vector<uint8_t>& covered,
             std::span<double> log_scores) const;

  int32_t num_states_ = 0;
  int32_t num_symbols_ = 0;
  LexiconOptions options_;
  std::unordered_map<std::string, std::vector<Entry>> rows_;  // word or signature -> its rows
  std::unordered_set<std::string> known_words_;               // for -KNOWNLC
  std::vector<double> log_probs_;
  std::shared_ptr<const BerkeleyLexicon> exact_;
};

}  // namespace cky
