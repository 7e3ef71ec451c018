#include "parser/parser.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>

#include "common/thread_pool.h"
#include "common/timeline.h"
#include "parser/tree_likelihood.h"

namespace cky {

Parser::Parser(const Grammar& grammar, const Lexicon& lexicon, std::unique_ptr<Backend> backend,
               const ParserOptions& options)
    : grammar_(grammar), lexicon_(lexicon), backend_(std::move(backend)), options_(options) {}

LexicalScores ScoreWords(const Grammar& grammar, const Lexicon& lexicon,
                         const std::vector<std::string>& words, bool widen) {
  LexicalScores lexical;
  lexical.length = static_cast<int32_t>(words.size());
  lexical.num_states = grammar.num_states();
  lexical.scores.resize(words.size() * static_cast<size_t>(grammar.num_states()));
  for (size_t i = 0; i < words.size(); ++i) {
    lexicon.Score(
        words[i], static_cast<int>(i),
        std::span<double>(lexical.scores.data() + i * grammar.num_states(), grammar.num_states()),
        widen);
  }
  return lexical;
}

LexicalScores Parser::ScoreWords(const std::vector<std::string>& words, bool widen) const {
  return cky::ScoreWords(grammar_, lexicon_, words, widen);
}

void Parser::ScoreSentences(std::vector<SentenceInput>* inputs, bool widen) {
  // The serial front end of every backend: on all cores, so that it does not cap several GPUs
  // (bench/lexical_scoring_bench). Each sentence's scores are the same whichever thread computes
  // them.
  std::lock_guard lock(scoring_mutex_);
  timeline::Scope scope("lexical scoring");
  if (!scoring_pool_) scoring_pool_ = std::make_unique<ThreadPool>(options_.scoring_threads);
  scoring_pool_->ParallelFor(static_cast<int>(inputs->size()), [&](int i, int) {
    (*inputs)[i].lexical = ScoreWords((*inputs)[i].words, widen);
  });
}

std::vector<ParseOutcome> Parser::Parse(std::span<const std::vector<std::string>> sentences,
                                        const OutcomeListener& listener) {
  return ParseScored(sentences, nullptr, listener);
}

std::vector<ParseOutcome> Parser::Parse(std::span<const std::vector<std::string>> sentences,
                                        std::vector<LexicalScores> lexical,
                                        const OutcomeListener& listener) {
  if (lexical.size() != sentences.size()) {  // a caller's fault: score them here instead
    return ParseScored(sentences, nullptr, listener);
  }
  return ParseScored(sentences, &lexical, listener);
}

std::vector<ParseOutcome> Parser::ParseScored(std::span<const std::vector<std::string>> sentences,
                                              std::vector<LexicalScores>* lexical,
                                              const OutcomeListener& listener) {
  std::vector<ParseOutcome> outcomes(sentences.size());
  // The backend gets the sentences longest first (equal lengths in input order): the CUDA backends
  // cut device batches of similar lengths from this order anyway, the CPU threads take the long
  // ones first, and the multi-device layer's chunks are then runs of the batch, which it hands
  // on without copying their lexical scores (hundreds of KB a sentence with a large grammar).
  std::vector<size_t> order(sentences.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sentences[a].size() > sentences[b].size(); });
  std::vector<SentenceInput> inputs;
  std::vector<size_t> positions;
  for (size_t i : order) {
    const auto& words = sentences[i];
    if (options_.max_length > 0 && static_cast<int>(words.size()) > options_.max_length) {
      outcomes[i].status = ParseStatus::kTooLong;
      outcomes[i].message = std::to_string(words.size()) + " words, over the limit of " +
                            std::to_string(options_.max_length);
      if (listener) listener(i, outcomes[i]);
      continue;
    }
    inputs.push_back({words, lexical ? std::move((*lexical)[i]) : LexicalScores{}});
    positions.push_back(i);
  }
  // Given scores are used when they fit the sentences and the grammar (else all are scored here).
  const bool given =
      lexical && std::all_of(inputs.begin(), inputs.end(), [&](const auto& input) {
        return input.lexical.length == static_cast<int32_t>(input.words.size()) &&
               input.lexical.num_states == grammar_.num_states() &&
               input.lexical.scores.size() == input.words.size() * size_t(grammar_.num_states());
      });
  if (!given) ScoreSentences(&inputs);
  // A sentence with no parse is parsed once more with a wider lexicon, unless the lexicon is exact
  // (a .gr lexicon already gives every score Berkeley's does: widening changes nothing).
  auto retried = [&](const ParseOutcome& outcome, size_t k) {
    return options_.retry_with_wider_lexicon && !lexicon_.exact() &&
           outcome.status == ParseStatus::kNoParse && !inputs[k].words.empty();
  };
  // Input k's outcome is final: its tree scores, its place, the listener. Backends call it from
  // their threads; `done` keeps an outcome the backend did not report from being missed.
  std::unique_ptr<std::atomic<bool>[]> done(new std::atomic<bool>[inputs.size()]());
  auto finish = [&](size_t k, ParseOutcome outcome, const LexicalScores& lexical) {
    if (outcome.status == ParseStatus::kOk && (options_.tree_likelihood || options_.confidence)) {
      AddTreeScores(lexical, &outcome);
    }
    ParseOutcome& slot = outcomes[positions[k]];
    slot = std::move(outcome);
    done[k] = true;
    if (listener) listener(positions[k], slot);
  };
  // A backend that takes one batch at a time gets the callers' batches in turn (with their
  // retries: ParseBatchAhead's sentences are not to wait behind another batch).
  std::unique_lock<std::mutex> one_batch(backend_mutex_, std::defer_lock);
  if (!backend_->ParsesConcurrentBatches()) one_batch.lock();
  std::vector<ParseOutcome> parsed =
      backend_->ParseBatch(inputs, [&](size_t k, const ParseOutcome& outcome) {
        if (!retried(outcome, k)) finish(k, outcome, inputs[k].lexical);
      });
  std::vector<SentenceInput> retries;
  std::vector<size_t> retry_of;  // input index of each retry
  for (size_t k = 0; k < parsed.size(); ++k) {
    if (retried(parsed[k], k)) {
      retries.push_back({inputs[k].words, {}});
      retry_of.push_back(k);
    } else if (!done[k]) {
      finish(k, std::move(parsed[k]), inputs[k].lexical);
    }
  }
  if (!retries.empty()) {
    timeline::Scope scope("retry with a wider lexicon");
    ScoreSentences(&retries, /*widen=*/true);
    // A retry's tree replaces the first outcome; without one, the first outcome stands.
    auto settle = [&](size_t r, const ParseOutcome& second) {
      const size_t k = retry_of[r];
      if (second.status == ParseStatus::kOk) {
        finish(k, second, retries[r].lexical);
      } else {
        finish(k, std::move(parsed[k]), inputs[k].lexical);
      }
    };
    std::unique_ptr<std::atomic<bool>[]> settled(new std::atomic<bool>[retries.size()]());
    std::vector<ParseOutcome> second =
        backend_->ParseBatchAhead(retries, [&](size_t r, const ParseOutcome& outcome) {
          settle(r, outcome);
          settled[r] = true;
        });
    for (size_t r = 0; r < second.size(); ++r) {
      if (!settled[r]) settle(r, second[r]);
    }
  }
  // The next caller's batch need not wait while this call's copies are freed.
  if (one_batch.owns_lock()) one_batch.unlock();
  return outcomes;
}

void Parser::AddTreeScores(const LexicalScores& lexical, ParseOutcome* outcome) const {
  auto score = [&](const Tree& tree, double* tree_likelihood, double* confidence) {
    if (options_.decoder == DecoderKind::kViterbi) {  // the Berkeley parser's -viterbi values
      *tree_likelihood = outcome->log_likelihood;
      *confidence = 0.0;
      return;
    }
    if (options_.tree_likelihood) {
      auto joint = TreeLogLikelihood(grammar_, lexical, tree);
      *tree_likelihood = joint.ok() ? *joint : kNegInf;
      if (!joint.ok() && outcome->message.empty()) outcome->message = joint.status().message();
    }
    if (options_.confidence) {
      auto rebinarized = RebinarizeTree(tree, options_.binarization);
      auto joint = rebinarized.ok() ? TreeLogLikelihood(grammar_, lexical, *rebinarized)
                                    : StatusOr<double>(rebinarized.status());
      *confidence = joint.ok() ? *joint - outcome->log_likelihood : kNegInf;
      if (!joint.ok() && outcome->message.empty()) outcome->message = joint.status().message();
    }
  };
  score(outcome->tree, &outcome->tree_log_likelihood, &outcome->confidence);
  for (ScoredTree& t : outcome->kbest) score(t.tree, &t.tree_log_likelihood, &t.confidence);
}

namespace {

// "NP-3" -> state id of NP_3; -1 when the grammar has no such state.
int32_t StateOfLabel(const Grammar& g, const std::string& label) {
  size_t dash = label.rfind('-');
  if (dash == std::string::npos || dash == 0) return -1;
  return g.FindState(label.substr(0, dash) + "_" + label.substr(dash + 1));
}

struct Scorer {
  const Grammar& g;
  const Lexicon& lexicon;
  std::vector<std::string> words;
  std::vector<double> lexical;
  int position = 0;

  StatusOr<double> Score(const Tree& node) {
    const int32_t state = StateOfLabel(g, node.label);
    if (state < 0) return Status::Error("unknown state '" + node.label + "'");
    if (node.is_preterminal()) {
      lexical.assign(g.num_states(), kNegInf);
      lexicon.Score(node.children[0].label, position++, lexical);
      if (!(lexical[state] > kNegInf)) {
        return Status::Error("no lexical score for '" + node.children[0].label + "' as " +
                             node.label);
      }
      return lexical[state];
    }
    if (node.children.size() == 1) {
      const int32_t child = StateOfLabel(g, node.children[0].label);
      double rule = kNegInf;
      for (int32_t u = g.unary_parent_begin[state]; u < g.unary_parent_begin[state + 1]; ++u) {
        if (g.unary_child[u] == child) rule = g.unary_log_prob[u];
      }
      if (child == state) rule = 0.0;
      if (!(rule > kNegInf)) {
        return Status::Error("no unary rule " + node.label + " -> " + node.children[0].label);
      }
      auto below = Score(node.children[0]);
      if (!below.ok()) return below;
      return rule + *below;
    }
    if (node.children.size() != 2) return Status::Error("node " + node.label + " is not binary");
    const int32_t left = StateOfLabel(g, node.children[0].label);
    const int32_t right = StateOfLabel(g, node.children[1].label);
    double rule = kNegInf;
    for (int32_t r = g.binary_parent_begin[state]; r < g.binary_parent_begin[state + 1]; ++r) {
      if (g.binary_left[r] == left && g.binary_right[r] == right) rule = g.binary_log_prob[r];
    }
    if (!(rule > kNegInf)) {
      return Status::Error("no binary rule " + node.label + " -> " + node.children[0].label + " " +
                           node.children[1].label);
    }
    auto l = Score(node.children[0]);
    if (!l.ok()) return l;
    auto r = Score(node.children[1]);
    if (!r.ok()) return r;
    return rule + *l + *r;
  }
};

}  // namespace

StatusOr<double> ScoreAnnotatedTree(const Grammar& grammar, const Lexicon& lexicon,
                                    const Tree& tree) {
  Scorer scorer{grammar, lexicon, Leaves(tree), {}, 0};
  return scorer.Score(tree);
}

}  // namespace cky
