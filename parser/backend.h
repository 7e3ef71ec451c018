// The backend interface: sentences with lexical scores in, best trees out (binarized, annotated
// for Viterbi; base symbols for max-rule). The Parser front end (parser/parser.h) does the words,
// lexicon and output forms; parser/backend_factory.h makes backends.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "grammar_io/grammar.h"
#include "parser/chart.h"
#include "parser/viterbi_reference.h"
#include "treebank/tree.h"

namespace cky {

enum class ParseStatus {
  kOk,
  kNoParse,      // the grammar derives no tree for the sentence
  kTooLong,      // over the backend's or the user's length limit
  kOutOfMemory,  // the sentence's chart cannot be allocated
  kFailed,       // anything else (message says what)
};

// One tree of a k-best list with its scores.
struct ScoredTree {
  Tree tree;
  double log_score = kNegInf;            // the max-rule score (Berkeley's -modelScore)
  double tree_log_likelihood = kNegInf;  // log P(T, w), when asked for (parser/tree_likelihood.h)
  double confidence = kNegInf;           // log P(T | w), when asked for
};

struct ParseOutcome {
  ParseStatus status = ParseStatus::kFailed;
  std::string message;         // why, when status != kOk
  Tree tree;                   // binarized annotated tree ("NP-3" labels, chart scores), when kOk
  double log_score = kNegInf;  // the root's Viterbi log-score (max-rule: the max-rule score)
  // log P(w), the sum over all trees (max-rule backends); the Viterbi backends put the best
  // derivation's log-score here, as the Berkeley parser's -viterbi -sentence_likelihood prints it.
  double log_likelihood = kNegInf;
  // Only when ParserOptions ask for them (parser/tree_likelihood.h): log P(tree, w) and
  // log P(tree | w) of `tree`, as the Berkeley parser's -tree_likelihood and -confidence.
  double tree_log_likelihood = kNegInf;
  double confidence = kNegInf;
  // Max-rule with DecoderOptions::kbest > 1: the k best trees, best first (kbest[0] is `tree`);
  // fewer when the grammar derives fewer.
  std::vector<ScoredTree> kbest;
};

// The decoders: the best derivation (the Berkeley parser's -viterbi), or the max-rule-product tree
// from inside-outside posteriors (its default; parser/max_rule.h).
enum class DecoderKind { kMaxRule, kViterbi };

// Which k-best list a max-rule decoder gives (parser/kbest.h).
enum class KBestStyle {
  kExact,     // the K highest-scoring trees
  kBerkeley,  // the Berkeley parser 1.7's list, shortcuts included (for comparison with it)
};

// What a max-rule backend decodes besides the best tree.
struct DecoderOptions {
  int kbest = 1;  // > 1: fill ParseOutcome::kbest with this many trees (parser/kbest.h)
  KBestStyle kbest_style = KBestStyle::kExact;
};

struct SentenceInput {
  std::vector<std::string> words;
  LexicalScores lexical;  // lexical.length == words.size()
};

// The outcome of a sentence that a CPU decoder refuses before it allocates anything: kNoParse
// ("empty sentence") without words, kOutOfMemory when its charts, bytes_per_cell bytes a cell,
// would not fit in the memory available (parser/chart.h); nullopt for a sentence to parse.
inline std::optional<ParseOutcome> RefuseBeforeParsing(const SentenceInput& sentence,
                                                       double bytes_per_cell) {
  if (sentence.words.empty()) {
    return ParseOutcome{.status = ParseStatus::kNoParse, .message = "empty sentence"};
  }
  const auto n = static_cast<int32_t>(sentence.words.size());
  if (std::string why = ChartsDoNotFit(n, ChartBytes(n, bytes_per_cell)); !why.empty()) {
    return ParseOutcome{.status = ParseStatus::kOutOfMemory, .message = std::move(why)};
  }
  return std::nullopt;
}

// Told each sentence's outcome as soon as it is known: `index` into the span ParseBatch was given.
// Called from any of the backend's threads, possibly several at once, once per sentence, before
// ParseBatch returns (which still returns every outcome). Lets a caller write each result, and
// count progress, without waiting for the whole batch.
using OutcomeListener = std::function<void(size_t index, const ParseOutcome& outcome)>;

// The interface every backend implements: one device (the CPU reference, CPU threads, a CUDA
// device, several), one decoder (Viterbi, max-rule with k-best), optionally coarse-to-fine
// pruning; parser/backend_factory.h builds one from those three choices.
class Backend {
 public:
  virtual ~Backend() = default;
  // "reference", "cpu/max-rule", "cuda/pruned-max-rule", "cuda/<kernel>", ...
  virtual std::string name() const = 0;
  // Parses every sentence; outcomes[i] belongs to sentences[i]. Never throws for a bad sentence:
  // its outcome says what went wrong and the others are still parsed.
  std::vector<ParseOutcome> ParseBatch(std::span<const SentenceInput> sentences,
                                       const OutcomeListener& listener = {}) {
    return Parse(sentences, listener, /*ahead=*/false);
  }
  // ParseBatch for sentences that an earlier batch waits for (Parser's retries with a wider
  // lexicon): a backend that queues concurrent batches parses them before the batches queued
  // behind that one, so that the earlier batch is not held up by the later ones (with every
  // sentence retried at the back, four GPUs idled a quarter of the time). The others parse them
  // as ParseBatch does.
  std::vector<ParseOutcome> ParseBatchAhead(std::span<const SentenceInput> sentences,
                                            const OutcomeListener& listener = {}) {
    return Parse(sentences, listener, /*ahead=*/true);
  }
  // Warnings about the backend itself since the last call (a device retired, its sentences handed
  // to the others: parser/multi_device_backend.h), for the caller to print; a sentence's own
  // trouble is in its outcome's message instead.
  virtual std::vector<std::string> TakeWarnings() { return {}; }
  // True when ParseBatch may be called from several threads at once, and gains from it: the
  // multi-device layer queues a second batch's work behind the first's, so that no device waits
  // for the slowest one at the end of each batch (parser/multi_device_backend.h). The others
  // (false) take one call at a time.
  virtual bool ParsesConcurrentBatches() const { return false; }

 protected:
  // ParseBatch and ParseBatchAhead (`ahead`); the listener may be empty.
  virtual std::vector<ParseOutcome> Parse(std::span<const SentenceInput> sentences,
                                          const OutcomeListener& listener, bool ahead) = 0;
};

}  // namespace cky
