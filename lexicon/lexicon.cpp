#include "lexicon/lexicon.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lexicon/signature.h"

namespace cky {

StatusOr<Lexicon> Lexicon::Build(const BerkeleyModel& model, const LexiconOptions& options) {
  Lexicon lexicon;
  const Grammar& g = model.grammar;
  lexicon.num_states_ = g.num_states();
  lexicon.num_symbols_ = g.num_symbols();
  lexicon.options_ = options;
  if (model.lexicon_counts) {
    auto exact = BerkeleyLexicon::Build(g, *model.lexicon_counts);
    if (!exact.ok()) return exact.status();
    lexicon.exact_ = std::make_shared<const BerkeleyLexicon>(std::move(*exact));
    return lexicon;
  }
  // Sized once: en_sm6s's text export has millions of probabilities, whose growing copies took
  // most of this function's time.
  size_t probabilities = 0;
  for (const LexiconRow& row : model.lexicon) probabilities += row.probs.size();
  lexicon.log_probs_.reserve(probabilities);
  lexicon.rows_.reserve(model.lexicon.size());
  for (const LexiconRow& row : model.lexicon) {
    if (row.symbol < 0 || row.symbol >= g.num_symbols() ||
        static_cast<int32_t>(row.probs.size()) != g.symbol_num_substates[row.symbol]) {
      return Status::Error("lexicon row for '" + row.word + "' does not match the grammar's tag " +
                           (row.symbol >= 0 && row.symbol < g.num_symbols()
                                ? g.symbol_names[row.symbol]
                                : std::to_string(row.symbol)));
    }
    Entry entry{g.symbol_first_state[row.symbol], g.symbol_num_substates[row.symbol], row.symbol,
                static_cast<uint32_t>(lexicon.log_probs_.size())};
    for (double p : row.probs) {
      lexicon.log_probs_.push_back(p > 0 ? std::log(p) : -std::numeric_limits<double>::infinity());
    }
    lexicon.rows_[row.word].push_back(entry);
  }
  for (const std::string& word : model.known_words) {
    if (word.rfind("UNK", 0) != 0) lexicon.known_words_.insert(word);
  }
  for (const auto& [word, entries] : lexicon.rows_) {
    if (word.rfind("UNK", 0) != 0) lexicon.known_words_.insert(word);
  }
  return lexicon;
}

bool Lexicon::IsKnown(std::string_view word) const {
  if (exact_) return exact_->IsKnown(word);
  return known_words_.count(std::string(word)) > 0;
}

std::string Lexicon::Signature(std::string_view word, int position) const {
  if (exact_) return exact_->Signature(word, position);
  return UnknownWordSignature(word, position,
                              [this](const std::string& w) { return known_words_.count(w) > 0; });
}

bool Lexicon::Apply(const std::string& word, std::vector<uint8_t>& covered,
                    std::span<double> log_scores) const {
  auto it = rows_.find(word);
  if (it == rows_.end()) return false;
  for (const Entry& e : it->second) {
    if (covered[e.tag]) continue;
    covered[e.tag] = 1;
    for (int32_t k = 0; k < e.num_substates; ++k) {
      log_scores[e.first_state + k] = log_probs_[e.offset + k];
    }
  }
  return true;
}

int Lexicon::Score(std::string_view word, int position, std::span<double> log_scores,
                   bool widen_known_words) const {
  if (exact_) return exact_->Score(word, position, log_scores);
  std::fill(log_scores.begin(), log_scores.end(), -std::numeric_limits<double>::infinity());
  std::vector<uint8_t> covered(num_symbols_, 0);
  const std::string text(word);
  // A word that is itself a signature-looking token ("UNK") is still looked up as a word first.
  const bool known = text.rfind("UNK", 0) != 0 && Apply(text, covered, log_scores);
  if (!known || widen_known_words) {
    std::string signature = Signature(word, position);
    Apply(signature, covered, log_scores);
    // Unknown words back off tag by tag through ever shorter signatures; known words stop at
    // theirs.
    while (!known && options_.backoff_unknown_words) {
      size_t dash = signature.rfind('-');
      if (dash == std::string::npos || dash < 3) break;
      signature.resize(dash);
      Apply(signature, covered, log_scores);
    }
  }
  int finite = 0;
  for (double s : log_scores) finite += std::isfinite(s) ? 1 : 0;
  return finite;
}

}  // namespace cky
