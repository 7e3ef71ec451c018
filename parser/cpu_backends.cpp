// The CPU backends: the sequential reference and the multi-threaded fast path.
#include <new>

#include "common/thread_pool.h"
#include "parser/backend.h"
#include "parser/tree_extraction.h"
#include "parser/viterbi_cpu.h"

namespace cky {

ParseOutcome ParseWithChart(const Grammar& grammar, const SentenceInput& sentence,
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

ParseOutcome EmptySentence() {
  ParseOutcome outcome;
  outcome.status = ParseStatus::kNoParse;
  outcome.message = "empty sentence";
  return outcome;
}

class ReferenceBackend : public ViterbiBackend {
 public:
  explicit ReferenceBackend(const Grammar& g) : grammar_(g) {}
  std::string name() const override { return "reference"; }
  std::vector<ParseOutcome> ParseBatch(std::span<const SentenceInput> sentences) override {
    std::vector<ParseOutcome> outcomes;
    Chart chart;
    for (const SentenceInput& s : sentences) {
      if (s.words.empty()) {
        outcomes.push_back(EmptySentence());
        continue;
      }
      const int32_t n = static_cast<int32_t>(s.words.size());
      if (std::string why = ChartsDoNotFit(n, ChartBytes(n, 8.0 * grammar_.num_states()));
          !why.empty()) {
        outcomes.push_back({.status = ParseStatus::kOutOfMemory, .message = why});
        continue;
      }
      ReferenceViterbiInside(grammar_, s.lexical, &chart);
      outcomes.push_back(ParseWithChart(grammar_, s, chart));
    }
    return outcomes;
  }

 private:
  const Grammar& grammar_;
};

class CpuBackend : public ViterbiBackend {
 public:
  CpuBackend(const Grammar& g, int threads)
      : grammar_(g), viterbi_(g), pool_(threads), charts_(pool_.threads()) {}
  std::string name() const override { return "cpu"; }
  std::vector<ParseOutcome> ParseBatch(std::span<const SentenceInput> sentences) override {
    std::vector<ParseOutcome> outcomes(sentences.size());
    // Sentences in parallel, each worker reusing its own chart.
    pool_.ParallelFor(static_cast<int>(sentences.size()), [&](int i, int worker) {
      const SentenceInput& s = sentences[i];
      if (s.words.empty()) {
        outcomes[i] = EmptySentence();
        return;
      }
      Chart& chart = charts_[worker];
      const int32_t n = static_cast<int32_t>(s.words.size());
      if (std::string why = ChartsDoNotFit(n, ChartBytes(n, 8.0 * grammar_.num_states()));
          !why.empty()) {
        outcomes[i] = {.status = ParseStatus::kOutOfMemory, .message = why};
        return;
      }
      try {
        viterbi_.Inside(s.lexical, &chart);
        outcomes[i] = ParseWithChart(grammar_, s, chart);
      } catch (const std::bad_alloc&) {
        outcomes[i].status = ParseStatus::kOutOfMemory;
        outcomes[i].message =
            "out of memory for a chart of " + std::to_string(s.words.size()) + " words";
        chart = Chart();
      }
    });
    return outcomes;
  }

 private:
  const Grammar& grammar_;
  CpuViterbi viterbi_;
  ThreadPool pool_;
  std::vector<Chart> charts_;  // one per pool worker
};

}  // namespace

std::unique_ptr<ViterbiBackend> MakeReferenceBackend(const Grammar& grammar) {
  return std::make_unique<ReferenceBackend>(grammar);
}

std::unique_ptr<ViterbiBackend> MakeCpuBackend(const Grammar& grammar, int threads) {
  return std::make_unique<CpuBackend>(grammar, threads);
}

}  // namespace cky
