// The interface every Viterbi parsing backend implements: the CPU reference, the multi-threaded
// CPU path, and the CUDA kernels (parser/cuda_backend.cpp adapts cuda/'s plain-C++ interface).
// A backend turns sentences with lexical scores into binarized best trees; the Parser front end
// (parser/parser.h) does the words, lexicon and output forms.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "grammar_io/grammar.h"
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

// What a max-rule backend decodes besides the best tree.
struct DecoderOptions {
  int kbest = 1;  // > 1: fill ParseOutcome::kbest with this many trees (parser/kbest.h)
  // The exact K best (default), or the Berkeley parser 1.7's list (KBestStyle::kBerkeley).
  bool kbest_berkeley = false;
};

struct SentenceInput {
  std::vector<std::string> words;
  LexicalScores lexical;  // lexical.length == words.size()
};

class ViterbiBackend {
 public:
  virtual ~ViterbiBackend() = default;
  // "reference", "cpu", "cuda/<kernel>", ...
  virtual std::string name() const = 0;
  // Parses every sentence; outcomes[i] belongs to sentences[i]. Never throws for a bad sentence:
  // its outcome says what went wrong and the others are still parsed.
  virtual std::vector<ParseOutcome> ParseBatch(std::span<const SentenceInput> sentences) = 0;
  // Warnings about the backend itself since the last call (a device retired, its sentences handed
  // to the others: parser/multi_device_backend.h), for the caller to print; a sentence's own
  // trouble is in its outcome's message instead.
  virtual std::vector<std::string> TakeWarnings() { return {}; }
  // True when ParseBatch may be called from several threads at once, and gains from it: the
  // multi-device layer queues a second batch's work behind the first's, so that no device waits
  // for the slowest one at the end of each batch (parser/multi_device_backend.h). The others
  // (false) take one call at a time.
  virtual bool ParsesConcurrentBatches() const { return false; }
  // ParseBatch for sentences that an earlier batch waits for (Parser's retries with a wider
  // lexicon): a backend that queues concurrent batches parses them before the batches queued
  // behind that one, so that the earlier batch is not held up by the later ones (with every
  // sentence retried at the back, four GPUs idled a quarter of the time). The others parse them
  // as ParseBatch does.
  virtual std::vector<ParseOutcome> ParseBatchAhead(std::span<const SentenceInput> sentences) {
    return ParseBatch(sentences);
  }
};

// The plain reference: one sentence after another, ReferenceViterbiInside then ExtractViterbiTree.
std::unique_ptr<ViterbiBackend> MakeReferenceBackend(const Grammar& grammar);

// Sentences in parallel on `threads` CPU threads (0: all hardware threads), each with the
// sparse-aware inside pass of parser/viterbi_cpu.h.
std::unique_ptr<ViterbiBackend> MakeCpuBackend(const Grammar& grammar, int threads);

// Parses one sentence with the reference inside pass and extraction (shared by CPU backends).
ParseOutcome ParseWithChart(const Grammar& grammar, const SentenceInput& sentence,
                            const Chart& chart);

}  // namespace cky
