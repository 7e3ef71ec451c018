// The CPU backends: the sequential reference and the multi-threaded fast path.
#include <atomic>
#include <thread>

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
      : grammar_(g),
        viterbi_(g),
        threads_(threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency())) {}
  std::string name() const override { return "cpu"; }
  std::vector<ParseOutcome> ParseBatch(std::span<const SentenceInput> sentences) override {
    std::vector<ParseOutcome> outcomes(sentences.size());
    std::atomic<size_t> next{0};
    auto work = [&] {
      Chart chart;
      for (size_t i = next++; i < sentences.size(); i = next++) {
        const SentenceInput& s = sentences[i];
        if (s.words.empty()) {
          outcomes[i] = EmptySentence();
          continue;
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
      }
    };
    const int workers = static_cast<int>(std::min<size_t>(threads_, sentences.size()));
    std::vector<std::thread> pool;
    for (int t = 1; t < workers; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
    return outcomes;
  }

 private:
  const Grammar& grammar_;
  CpuViterbi viterbi_;
  int threads_;
};

}  // namespace

std::unique_ptr<ViterbiBackend> MakeReferenceBackend(const Grammar& grammar) {
  return std::make_unique<ReferenceBackend>(grammar);
}

std::unique_ptr<ViterbiBackend> MakeCpuBackend(const Grammar& grammar, int threads) {
  return std::make_unique<CpuBackend>(grammar, threads);
}

}  // namespace cky
