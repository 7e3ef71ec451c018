#include "parser/cpu_backend.h"

#include <new>
#include <string>

#include "common/thread_pool.h"
#include "parser/max_rule.h"
#include "parser/tree_extraction.h"
#include "parser/viterbi_cpu.h"

namespace cky {

ParseOutcome ViterbiOutcome(const Grammar& grammar, const SentenceInput& sentence,
                            const Chart& chart) {
  ParseOutcome outcome;
  const int32_t n = static_cast<int32_t>(sentence.words.size());
  if (!(chart.score(0, n, Grammar::kRootState) > kNegInf)) {
    outcome.status = ParseStatus::kNoParse;
    outcome.message = "no parse";
    return outcome;
  }
  ExtractionOptions options;
  options.lexical = &sentence.lexical;
  auto tree = ExtractViterbiTree(grammar, chart, sentence.words, options);
  if (!tree.ok()) {
    outcome.status = ParseStatus::kFailed;
    outcome.message = tree.status().message();
    return outcome;
  }
  outcome.status = ParseStatus::kOk;
  outcome.log_score = chart.score(0, n, Grammar::kRootState);
  // The Berkeley parser's -viterbi -sentence_likelihood prints this score as the likelihood.
  outcome.log_likelihood = outcome.log_score;
  outcome.tree = std::move(*tree);
  return outcome;
}

namespace {

// One sentence's decoding, within a mask of allowed items or not. Decode may run on several
// threads at once, each with its own `worker` number (scratch memory).
class SentenceDecoder {
 public:
  virtual ~SentenceDecoder() = default;
  virtual ParseOutcome Decode(const SentenceInput& sentence, const ItemMask* mask, int worker) = 0;
};

class ReferenceViterbiDecoder : public SentenceDecoder {
 public:
  explicit ReferenceViterbiDecoder(const Grammar& grammar) : grammar_(grammar) {}
  ParseOutcome Decode(const SentenceInput& sentence, const ItemMask*, int) override {
    Chart chart;
    ReferenceViterbiInside(grammar_, sentence.lexical, &chart);
    return ViterbiOutcome(grammar_, sentence, chart);
  }

 private:
  const Grammar& grammar_;
};

// Unmasked charts add in the reference's order (bit-identical to it); masked ones in the pruner's
// (`pruned_order`), as the device's pruned fine pass does, so that both give the same charts.
class FastViterbiDecoder : public SentenceDecoder {
 public:
  FastViterbiDecoder(const Grammar& grammar, int workers, AdditionOrder pruned_order)
      : grammar_(grammar), viterbi_(grammar), pruned_order_(pruned_order), charts_(workers) {}
  ParseOutcome Decode(const SentenceInput& sentence, const ItemMask* mask, int worker) override {
    Chart& chart = charts_[worker];
    viterbi_.Inside(sentence.lexical, mask, &chart, nullptr,
                    mask ? pruned_order_ : AdditionOrder::kRuleFirst);
    return ViterbiOutcome(grammar_, sentence, chart);
  }

 private:
  const Grammar& grammar_;
  CpuViterbi viterbi_;
  AdditionOrder pruned_order_;
  std::vector<Chart> charts_;  // one per worker
};

class MaxRuleDecoder : public SentenceDecoder {
 public:
  MaxRuleDecoder(const Grammar& grammar, bool reference, const DecoderOptions& decoding)
      : grammar_(grammar), rules_(grammar), reference_(reference), decoding_(decoding) {}
  ParseOutcome Decode(const SentenceInput& sentence, const ItemMask* mask, int) override {
    if (reference_) return ParseMaxRuleReference(grammar_, rules_, sentence, decoding_);
    return ParseMaxRule(grammar_, rules_, sentence, mask ? &mask->allowed : nullptr, decoding_);
  }

 private:
  const Grammar& grammar_;
  SumProductRules rules_;
  bool reference_;
  DecoderOptions decoding_;
};

class CpuBackend : public Backend {
 public:
  CpuBackend(std::string name, std::unique_ptr<SentenceDecoder> decoder,
             std::shared_ptr<const CoarseToFinePruner> pruner, int threads, double bytes_per_cell)
      : name_(std::move(name)),
        decoder_(std::move(decoder)),
        pruner_(std::move(pruner)),
        pool_(threads),
        bytes_per_cell_(bytes_per_cell) {}
  std::string name() const override { return name_; }

 protected:
  std::vector<ParseOutcome> Parse(std::span<const SentenceInput> sentences,
                                  const OutcomeListener& listener, bool /*ahead*/) override {
    std::vector<ParseOutcome> outcomes(sentences.size());
    pool_.ParallelFor(static_cast<int>(sentences.size()), [&](int i, int worker) {
      outcomes[i] = ParseOne(sentences[i], worker);
      if (listener) listener(size_t(i), outcomes[i]);
    });
    return outcomes;
  }

 private:
  ParseOutcome ParseOne(const SentenceInput& sentence, int worker) const {
    // Refused before anything is allocated: the others are parsed.
    if (std::optional<ParseOutcome> refused = RefuseBeforeParsing(sentence, bytes_per_cell_)) {
      return *std::move(refused);
    }
    ParseOutcome outcome;
    try {
      if (pruner_) {
        ItemMask mask;
        if (pruner_->Prune(sentence.lexical, &mask)) {
          outcome = decoder_->Decode(sentence, &mask, worker);
          // Pruning can in rare cases cut every derivation of the fine grammar: parse such a
          // sentence unpruned rather than lose it.
          if (outcome.status != ParseStatus::kNoParse) return outcome;
        }
      }
      return decoder_->Decode(sentence, nullptr, worker);
    } catch (const std::bad_alloc&) {
      outcome = ParseOutcome{};
      outcome.status = ParseStatus::kOutOfMemory;
      outcome.message =
          "out of memory for a chart of " + std::to_string(sentence.words.size()) + " words";
      return outcome;
    }
  }

  std::string name_;
  std::unique_ptr<SentenceDecoder> decoder_;
  std::shared_ptr<const CoarseToFinePruner> pruner_;
  mutable ThreadPool pool_;
  double bytes_per_cell_;  // of the charts a sentence's decoding allocates
};

}  // namespace

StatusOr<std::unique_ptr<Backend>> MakeCpuBackend(const Grammar& grammar,
                                                  const CpuBackendOptions& options) {
  const bool max_rule = options.decoder == DecoderKind::kMaxRule;
  std::shared_ptr<const CoarseToFinePruner> pruner = options.pruner;
  if (options.pruning || pruner) {
    if (options.reference) {
      return Status::Error(
          "pruning runs on the cpu and cuda backends (asked for reference); use --prune off or "
          "--backend cpu");
    }
    if (!pruner) {
      auto made = CoarseToFinePruner::Create(grammar, *options.pruning);
      if (!made.ok()) return made.status();
      pruner = std::move(*made);
    }
  }
  const int threads = options.reference ? 1 : ThreadPool::ResolveThreads(options.threads);
  std::unique_ptr<SentenceDecoder> decoder;
  if (max_rule) {
    decoder = std::make_unique<MaxRuleDecoder>(grammar, options.reference, options.decoding);
  } else if (options.reference) {
    decoder = std::make_unique<ReferenceViterbiDecoder>(grammar);
  } else {
    decoder = std::make_unique<FastViterbiDecoder>(
        grammar, threads, pruner ? pruner->order() : AdditionOrder::kRuleFirst);
  }
  const std::string name = std::string(options.reference ? "reference" : "cpu") +
                           (pruner ? "/pruned" : "") +
                           (max_rule ? (pruner ? "-max-rule" : "/max-rule") : "");
  // The charts per cell: Viterbi's scores, or max-rule's inside and outside scores and its chart
  // over base symbols; with pruning also the fine mask, a byte an item.
  const double states = grammar.num_states();
  const double bytes_per_cell =
      (max_rule ? 16.0 * states + 24.0 * grammar.num_symbols() + 40 : 8.0 * states) +
      (pruner ? states : 0.0);
  return std::unique_ptr<Backend>(
      new CpuBackend(name, std::move(decoder), std::move(pruner), threads, bytes_per_cell));
}

namespace {

// The backends made without pruning, which cannot fail.
std::unique_ptr<Backend> MakeUnpruned(const Grammar& grammar, const CpuBackendOptions& options) {
  auto backend = MakeCpuBackend(grammar, options);
  return std::move(*backend);
}

}  // namespace

std::unique_ptr<Backend> MakeReferenceBackend(const Grammar& grammar) {
  return MakeUnpruned(grammar, {.decoder = DecoderKind::kViterbi, .reference = true});
}

std::unique_ptr<Backend> MakeCpuBackend(const Grammar& grammar, int threads) {
  return MakeUnpruned(grammar, {.decoder = DecoderKind::kViterbi, .threads = threads});
}

std::unique_ptr<Backend> MakeReferenceMaxRuleBackend(const Grammar& grammar,
                                                     const DecoderOptions& decoding) {
  return MakeUnpruned(
      grammar, {.decoder = DecoderKind::kMaxRule, .reference = true, .decoding = decoding});
}

std::unique_ptr<Backend> MakeCpuMaxRuleBackend(const Grammar& grammar, int threads,
                                               const DecoderOptions& decoding) {
  return MakeUnpruned(
      grammar, {.decoder = DecoderKind::kMaxRule, .threads = threads, .decoding = decoding});
}

StatusOr<std::unique_ptr<Backend>> MakePrunedCpuBackend(const Grammar& grammar,
                                                        DecoderKind decoder,
                                                        const PruningOptions& pruning,
                                                        int threads,
                                                        const DecoderOptions& decoding) {
  return MakeCpuBackend(grammar, {.decoder = decoder,
                                  .threads = threads,
                                  .decoding = decoding,
                                  .pruning = pruning});
}

}  // namespace cky
