#include "lexicon/berkeley_lexicon.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lexicon/signature.h"

// The scores must round exactly as Java's do: no fused multiply-adds (CMake also compiles this
// file with -ffp-contract=off).
#pragma STDC FP_CONTRACT OFF

namespace cky {

StatusOr<BerkeleyLexicon> BerkeleyLexicon::Build(const Grammar& grammar,
                                                 const BerkeleyLexiconCounts& counts,
                                                 double min_seen_count) {
  if (counts.unknown_level != 5) {
    return Status::Error("the lexicon uses unknown-word signatures of level " +
                         std::to_string(counts.unknown_level) +
                         "; only level 5 (English) is implemented");
  }
  const int32_t symbols = grammar.num_symbols();
  for (int32_t s = 0; s < symbols; ++s) {
    if (grammar.symbol_num_substates[s] > 4096) {
      return Status::Error(grammar.symbol_names[s] + " has more than 4096 substates");
    }
    if (grammar.symbol_num_substates[s] < 1 || grammar.symbol_first_state[s] < 0 ||
        int64_t(grammar.symbol_first_state[s]) + grammar.symbol_num_substates[s] >
            grammar.num_states()) {
      return Status::Error("the grammar's states of " + grammar.symbol_names[s] +
                           " are out of range");
    }
  }
  auto check_rows = [&](const std::vector<std::vector<double>>& rows, const char* what) -> Status {
    if (rows.size() != size_t(symbols)) return Status::Error(std::string(what) + ": wrong size");
    for (int32_t s = 0; s < symbols; ++s) {
      if (rows[s].size() != size_t(grammar.symbol_num_substates[s])) {
        return Status::Error(std::string(what) + " of " + grammar.symbol_names[s] +
                             " does not match its substate count");
      }
    }
    return Status();
  };
  CKY_RETURN_IF_ERROR(check_rows(counts.tag_counts, "tag counts"));
  CKY_RETURN_IF_ERROR(check_rows(counts.unseen_tag_counts, "unseen tag counts"));
  if (counts.lexical_symbols.size() != size_t(symbols)) {
    return Status::Error("lexical symbol flags do not match the grammar");
  }
  BerkeleyLexicon lexicon;
  lexicon.num_states_ = grammar.num_states();
  lexicon.first_state_ = grammar.symbol_first_state;
  lexicon.num_substates_ = grammar.symbol_num_substates;
  lexicon.tag_counts_ = counts.tag_counts;
  lexicon.unseen_tag_counts_ = counts.unseen_tag_counts;
  lexicon.smoothing_.assign(symbols, {});
  for (int32_t s = 0; s < symbols && s < int32_t(counts.smoothing_weights.size()); ++s) {
    const size_t n = grammar.symbol_num_substates[s];
    const auto& w = counts.smoothing_weights[s];
    if (!w.empty() && w.size() != n * n) {
      return Status::Error("smoothing weights of " + grammar.symbol_names[s] +
                           " do not match its substate count");
    }
    lexicon.smoothing_[s] = w;
  }
  for (int32_t s = 0; s < symbols; ++s) {
    if (counts.lexical_symbols[s]) lexicon.lexical_symbols_.push_back(s);
  }
  auto add = [&](const std::vector<BerkeleyLexiconCounts::Entry>& entries, Table& table,
                 double min_count) -> Status {
    for (const auto& e : entries) {
      if (e.symbol < 0 || e.symbol >= symbols ||
          e.counts.size() != size_t(grammar.symbol_num_substates[e.symbol])) {
        return Status::Error("lexicon counts for '" + e.word + "' do not match the grammar");
      }
      const uint32_t offset = static_cast<uint32_t>(lexicon.counts_.size());
      for (double c : e.counts) lexicon.counts_.push_back(c < min_count ? 0.0 : c);
      table.index[e.word].emplace_back(e.symbol, offset);
    }
    return Status();
  };
  CKY_RETURN_IF_ERROR(add(counts.seen, lexicon.seen_, min_seen_count));
  CKY_RETURN_IF_ERROR(add(counts.unseen, lexicon.unseen_, 0.0));  // Berkeley never filters these
  for (const auto& [word, count] : counts.word_counts) lexicon.word_counts_[word] = count;
  lexicon.total_tokens_ = counts.total_tokens;
  lexicon.total_unseen_tokens_ = counts.total_unseen_tokens;
  lexicon.smooth_unseen_ = counts.smooth_unseen;
  lexicon.smooth_seen_ = counts.smooth_seen;
  lexicon.threshold_ = counts.smooth_in_unknowns_threshold;
  lexicon.unknown_level_ = counts.unknown_level;
  return lexicon;
}

bool BerkeleyLexicon::IsKnown(std::string_view word) const {
  return word_counts_.count(std::string(word)) > 0;
}

std::string BerkeleyLexicon::Signature(std::string_view word, int position) const {
  return UnknownWordSignature(word, position,
                              [this](const std::string& w) { return word_counts_.count(w) > 0; });
}

const double* BerkeleyLexicon::Find(const Table& table, const std::string& word,
                                    int32_t symbol) const {
  auto it = table.index.find(word);
  if (it == table.index.end()) return nullptr;
  for (const auto& [s, offset] : it->second) {
    if (s == symbol) return &counts_[offset];
  }
  return nullptr;
}

void BerkeleyLexicon::ScoreTag(std::string_view word_view, int position, int32_t tag,
                               bool is_signature, std::span<double> result) const {
  const std::string word(word_view);
  auto count_of = [this](const std::string& w) {
    auto it = word_counts_.find(w);
    return it == word_counts_.end() ? 0.0 : it->second;
  };
  const double c_W = count_of(word);
  const int32_t n = num_substates_[tag];
  const double* c_TW_row = nullptr;
  const double* c_TS_row = nullptr;
  double c_S = 0;
  const bool known_model = !is_signature && c_W > 0.0;
  if (known_model) {
    c_TW_row = Find(seen_, word, tag);
  } else {
    const std::string sig = is_signature ? word : Signature(word_view, position);
    c_TS_row = Find(unseen_, sig, tag);
    c_S = count_of(sig);
  }
  for (int32_t k = 0; k < n; ++k) {
    result[k] = 0.0;
    double pb_W_T;
    if (known_model) {
      const double c_T = tag_counts_[tag][k];
      if (c_T == 0) continue;
      const double c_TW = c_TW_row ? c_TW_row[k] : 0.0;
      const double c_Tunseen = unseen_tag_counts_[tag][k];
      const double total = total_tokens_;
      const double total_unseen = total_unseen_tokens_;
      const double p_T_U = (total_unseen == 0) ? 1 : c_Tunseen / total_unseen;
      double pb_T_W;
      if (c_W > threshold_) {
        // The released parser (1.7) still smooths frequent words, by a fixed 0.0001; some copies of
        // the source on GitHub have the plain c_TW / c_W. Checked against the text exports.
        pb_T_W = (c_TW + 0.0001 * p_T_U) / (c_W + 0.0001);
      } else {
        pb_T_W = (c_TW + smooth_seen_ * p_T_U) / (c_W + smooth_seen_);
      }
      if (pb_T_W == 0) continue;
      const double p_T = c_T / total;
      const double p_W = c_W / total;
      pb_W_T = pb_T_W * p_W / p_T;
    } else {
      double c_TS = c_TS_row ? c_TS_row[k] : 0.0;
      double c_S_here = c_S;
      const double c_U = total_unseen_tokens_;
      const double total = total_tokens_;
      const double c_T = unseen_tag_counts_[tag][k];
      const double c_Tseen = tag_counts_[tag][k];
      const double p_T_U = c_T / c_U;
      if (unknown_level_ == 0) {
        c_TS = 0;
        c_S_here = 0;
      }
      const double pb_T_S = (c_TS + smooth_unseen_ * p_T_U) / (c_S_here + smooth_unseen_);
      const double p_T = c_Tseen / total;
      const double p_W = 1.0 / total;
      pb_W_T = pb_T_S * p_W / p_T;
    }
    result[k] = pb_W_T == 0 ? 1e-87 : pb_W_T;
  }
  const std::vector<double>& weights = smoothing_[tag];
  if (!weights.empty()) {
    double smoothed[4096];
    for (int32_t i = 0; i < n; ++i) {
      double sum = 0.0;
      for (int32_t k = 0; k < n; ++k) sum += weights[size_t(i) * n + k] * result[k];
      smoothed[i] = sum;
    }
    for (int32_t i = 0; i < n; ++i) result[i] = smoothed[i];
  }
}

int BerkeleyLexicon::Score(std::string_view word, int position,
                           std::span<double> log_scores) const {
  constexpr double kMinusInfinity = -std::numeric_limits<double>::infinity();
  std::fill(log_scores.begin(), log_scores.end(), kMinusInfinity);
  double probs[4096];
  int finite = 0;
  for (int32_t tag : lexical_symbols_) {
    const int32_t n = num_substates_[tag];
    ScoreTag(word, position, tag, /*is_signature=*/false, std::span<double>(probs, n));
    for (int32_t k = 0; k < n; ++k) {
      const double value = std::log(probs[k]);
      if (std::isnan(value) || value == kMinusInfinity) continue;
      log_scores[first_state_[tag] + k] = value;
      ++finite;
    }
  }
  return finite;
}

StatusOr<std::vector<LexiconRow>> BerkeleyExportRows(const BerkeleyModel& model) {
  if (!model.lexicon_counts) return model.lexicon;
  const BerkeleyLexiconCounts& counts = *model.lexicon_counts;
  auto lexicon = BerkeleyLexicon::Build(model.grammar, counts, /*min_seen_count=*/0.0);
  if (!lexicon.ok()) return lexicon.status();
  std::vector<LexiconRow> rows;
  rows.reserve(counts.seen.size() + counts.unseen.size());
  // Grouped by tag as toString writes them: a tag's words, then its signatures.
  std::vector<std::vector<const BerkeleyLexiconCounts::Entry*>> seen(model.grammar.num_symbols());
  std::vector<std::vector<const BerkeleyLexiconCounts::Entry*>> unseen(model.grammar.num_symbols());
  for (const auto& e : counts.seen) seen[e.symbol].push_back(&e);
  for (const auto& e : counts.unseen) unseen[e.symbol].push_back(&e);
  for (int32_t s = 0; s < model.grammar.num_symbols(); ++s) {
    const int32_t n = model.grammar.symbol_num_substates[s];
    for (int pass = 0; pass < 2; ++pass) {
      for (const auto* e : pass == 0 ? seen[s] : unseen[s]) {
        LexiconRow row{s, e->word, std::vector<double>(n)};
        lexicon->ScoreTag(e->word, 0, s, /*is_signature=*/pass == 1, row.probs);
        rows.push_back(std::move(row));
      }
    }
  }
  return rows;
}

}  // namespace cky
