// The Berkeley parser's lexicon scores, computed from the counts a .gr file holds exactly as
// edu.berkeley.nlp.PCFGLA.SophisticatedLexicon.score does (same formulas, same order of floating
// point operations), so that P(word | tag_k) equals the Java parser's. For each tag substate k:
//
//   known word (c(w) > 0):       p(t_k | w) = (c(t_k, w) + 1e-4 p(t_k | unseen)) / (c(w) + 1e-4)
//                                                                                  if c(w) > 100
//                                           = (c(t_k, w) + s1 p(t_k | unseen)) / (c(w) + s1) else
//                                P(w | t_k) = p(t_k | w) (c(w) / N) / (c(t_k) / N)
//   unknown word, signature S:   p(t_k | S) = (c(t_k, S) + s0 p(t_k | unseen)) / (c(S) + s0)
//                                P(w | t_k) = p(t_k | S) (1 / N) / (c(t_k) / N)
//
// where p(t_k | unseen) = c_unseen(t_k) / N_unseen, s0, s1 = smooth[0], smooth[1]; a tag substate
// with c(t_k) = 0 scores 0, a zero score otherwise becomes 1e-87; then the scores of a tag are
// smoothed across substates (SmoothAcrossParentBits: scores <- W scores) and logged. Every non-
// grammar tag (a symbol never a rule's parent) is scored, as Berkeley's parser does; before
// parsing, Berkeley sets seen counts c(t_k, w) below 1e-10 to 0 (removeUnlikelyTags).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "grammar_io/berkeley_model.h"

namespace cky {

class BerkeleyLexicon {
 public:
  // `min_seen_count`: seen counts below it are zeroed (Berkeley's parser uses 1e-10; the text
  // export, written without a threshold, uses 0). Fails for unknownLevel other than 5 (the only
  // signature scheme implemented: lexicon/signature.h).
  static StatusOr<BerkeleyLexicon> Build(const Grammar& grammar,
                                         const BerkeleyLexiconCounts& counts,
                                         double min_seen_count = 1e-10);

  // SophisticatedLexicon.score(word, tag, position, noSmoothing=false, isSignature): the
  // probabilities (not logs) of `word` under each substate of `symbol`, into `out`.
  void ScoreTag(std::string_view word, int position, int32_t symbol, bool is_signature,
                std::span<double> out) const;

  // Fills `log_scores` (num_states entries) with log P(word | state) for every lexical tag
  // (-infinity elsewhere, and where the score is 0 or NaN). Returns the number of finite scores.
  int Score(std::string_view word, int position, std::span<double> log_scores) const;

  std::string Signature(std::string_view word, int position) const;
  // Berkeley's isKnown: the word (or signature) is a key of wordCounter.
  bool IsKnown(std::string_view word) const;

 private:
  struct Table {
    // word -> offset into counts_ for each symbol that has the word; symbol-major lookups.
    std::unordered_map<std::string, std::vector<std::pair<int32_t, uint32_t>>> index;
  };
  const double* Find(const Table& table, const std::string& word, int32_t symbol) const;

  int32_t num_states_ = 0;
  std::vector<int32_t> first_state_, num_substates_;
  std::vector<double> counts_;
  Table seen_, unseen_;
  std::unordered_map<std::string, double> word_counts_;
  std::vector<std::vector<double>> tag_counts_, unseen_tag_counts_, smoothing_;
  std::vector<int32_t> lexical_symbols_;
  double total_tokens_ = 0, total_unseen_tokens_ = 0;
  double smooth_unseen_ = 0, smooth_seen_ = 0, threshold_ = 100;
  int32_t unknown_level_ = 5;
};

// The rows WriteGrammarToTextFile would write to PREFIX.lexicon (SophisticatedLexicon.toString:
// for every tag, the scores of its seen words, then of its signatures), from unfiltered counts.
StatusOr<std::vector<LexiconRow>> BerkeleyExportRows(const BerkeleyModel& model);

}  // namespace cky
