// Johnson (2011) Table 1 on this machine: dense PCFG inside probabilities in sentences per second,
// for the baseline and factored CKY algorithms, each multi-core parallelisation, parsing whole
// sentences on different cores, and the GPU, with random dense grammars of 32, 64 and 128
// nonterminals (the paper used 32) on GUM test sentences.
//
//   dense_inside_bench --treebank ../shared/treebanks/gum      (reads splits.md and const/*.ptb)
//   dense_inside_bench --sentences sentences.txt               (one tokenized sentence per line)
//
// Timing: the GPU rows and the across-sentences row parse every sentence (the GPU after one
// untimed warm-up pass; the median of --gpu-repeats passes). The other CPU rows are too slow for
// that: each parses sentences in a seeded random order until --budget seconds have passed (skipping
// any that would overrun it by half), and its
// rate is extrapolated to the whole set by the work model of its algorithm (baseline: (d-1) m^3 per
// span of width d; factored: (d-1) m^2 + m^3), i.e. rate = N / (elapsed * total_work / timed_work).
// The "timed" column says how much of the set's work was actually timed.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/gum_corpus.h"
#include "common/input_file.h"
#include "cuda/common/device.h"
#include "dense/dense_inside.h"
#include "dense/dense_pcfg.h"

namespace {

using Clock = std::chrono::steady_clock;
using cky::DenseAlgorithm;
using cky::DenseParallelism;
using cky::DenseSemiring;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// GUM's test documents (splits.md, section "test"), reddit files excluded (their words are masked).
std::vector<std::vector<std::string>> GumTestSentences(const std::string& root) {
  const std::vector<std::string> documents = cky::bench::GumDocuments(root + "/splits.md", "test");
  if (documents.empty()) {
    std::fprintf(stderr, "no GUM test documents under %s\n", root.c_str());
    std::exit(1);
  }
  std::vector<std::vector<std::string>> sentences;
  for (const std::string& doc : documents) {
    for (auto& sentence : cky::bench::TreebankWords(root + "/const/" + doc + ".ptb")) {
      sentences.push_back(std::move(sentence));
    }
  }
  return sentences;
}

double Work(DenseAlgorithm algorithm, int n, int m) {
  double work = 0;
  const double mm = static_cast<double>(m) * m;
  for (int d = 2; d <= n; ++d) {
    const double spans = n - d + 1;
    work += algorithm == DenseAlgorithm::kBaseline ? spans * (d - 1) * mm * m
                                                   : spans * ((d - 1) * mm + mm * m);
  }
  return work + n * m;
}

struct Row {
  std::string name;
  double sentences_per_second = 0;
  double timed_share = 0;  // of the set's work
  int timed_sentences = 0;
  std::string note;
};

void PrintTable(int m, int sentence_count, const std::vector<Row>& rows) {
  std::printf("\n### %d nonterminals (%d binary rules), %d sentences\n\n", m, m * m * m,
              sentence_count);
  std::printf("| parser | sentences/s | speed-up | timed | note |\n");
  std::printf("| --- | ---: | ---: | --- | --- |\n");
  const double base = rows.empty() ? 0 : rows[0].sentences_per_second;
  for (const Row& row : rows) {
    char timed[64];
    std::snprintf(timed, sizeof(timed), "%d sent., %.1f%% of work", row.timed_sentences,
                  100 * row.timed_share);
    std::printf("| %s | %.1f | %.1f | %s | %s |\n", row.name.c_str(), row.sentences_per_second,
                base > 0 ? row.sentences_per_second / base : 0.0, timed, row.note.c_str());
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Johnson (2011) Table 1 on this machine: dense PCFG inside, CPU and GPU"};
  std::string treebank, sentences_path, write_sentences;
  std::vector<int> nonterminals = {32, 64, 128};
  double budget = 2.0;
  int threads = 0, gpu_repeats = 3, min_count = 2;
  uint64_t seed = 1;
  bool skip_slow = false;
  app.add_option("--treebank", treebank, "GUM root (splits.md, const/*.ptb): its test sentences");
  app.add_option("--sentences", sentences_path, "Tokenized sentences, one per line, instead");
  app.add_option("--write-sentences", write_sentences,
                 "Write the sentences used to this file (one per line) and continue");
  app.add_option("--nonterminals", nonterminals, "Grammar sizes to measure")->capture_default_str();
  app.add_option("--budget", budget, "Seconds per sampled CPU row")->capture_default_str();
  app.add_option("--threads", threads, "CPU threads (0: all cores)")->capture_default_str();
  app.add_option("--gpu-repeats", gpu_repeats, "Timed GPU passes (median)")->capture_default_str();
  app.add_option("--min-count", min_count, "Rarer words map to the unknown token")
      ->capture_default_str();
  app.add_option("--seed", seed, "Grammar and sampling seed")->capture_default_str();
  app.add_flag("--skip-slow", skip_slow, "Leave out the inner/both parallel rows");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::vector<std::string>> sentences;
  if (!sentences_path.empty()) {
    cky::StatusOr<std::string> text = cky::ReadWholeFile(sentences_path);
    if (!text.ok()) {
      std::fprintf(stderr, "%s\n", text.status().message().c_str());
      return 1;
    }
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::vector<std::string> words;
      for (std::string w; fields >> w;) words.push_back(w);
      if (!words.empty()) sentences.push_back(std::move(words));
    }
  } else if (!treebank.empty()) {
    sentences = GumTestSentences(treebank);
  } else {
    std::fprintf(stderr, "give --treebank DIR or --sentences FILE\n");
    return 2;
  }
  if (sentences.empty()) {
    std::fprintf(stderr, "no sentences\n");
    return 1;
  }
  if (!write_sentences.empty()) {
    std::ofstream out(write_sentences);
    for (const auto& s : sentences) {
      for (size_t w = 0; w < s.size(); ++w) out << (w ? " " : "") << s[w];
      out << "\n";
    }
  }
  size_t longest = 0, words = 0;
  for (const auto& s : sentences) {
    longest = std::max(longest, s.size());
    words += s.size();
  }
  std::printf("# Dense PCFG inside probabilities (Johnson 2011, Table 1)\n\n");
  std::printf("sentences: %zu, mean length %.1f, longest %zu; vocabulary: words seen >= %d times\n",
              sentences.size(), static_cast<double>(words) / sentences.size(), longest, min_count);
  std::printf("CPU threads: %d (hardware: %u); GPU: %s\n",
              threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()),
              std::thread::hardware_concurrency(), cky::cuda::DeviceDescription().c_str());
  std::printf("float32 everywhere but the log scales; sampled rows: budget %.1f s each\n", budget);

  const std::vector<std::string> vocabulary = cky::BuildDenseVocabulary(sentences, min_count);
  for (int m : nonterminals) {
    cky::DensePcfg grammar =
        cky::GenerateDensePcfg({.num_nonterminals = m, .seed = seed}, vocabulary);
    std::vector<std::vector<int>> ids;
    for (const auto& s : sentences) ids.push_back(grammar.WordIds(s));
    cky::DenseInsideCpu cpu(grammar, threads);
    std::vector<int> order(ids.size());
    for (size_t s = 0; s < order.size(); ++s) order[s] = static_cast<int>(s);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
    // A 10-word calibration sentence (untimed) warms caches and the thread pool.
    const std::vector<int> calibration(std::min<size_t>(10, longest),
                                       ids[0].empty() ? 0 : ids[0][0]);

    std::vector<Row> rows;
    for (DenseAlgorithm algorithm : {DenseAlgorithm::kBaseline, DenseAlgorithm::kFactored}) {
      double total_work = 0;
      for (const auto& s : ids) total_work += Work(algorithm, static_cast<int>(s.size()), m);
      for (DenseParallelism parallelism : {DenseParallelism::kSerial, DenseParallelism::kOuter,
                                           DenseParallelism::kInner, DenseParallelism::kBoth}) {
        if (skip_slow &&
            (parallelism == DenseParallelism::kInner || parallelism == DenseParallelism::kBoth)) {
          continue;
        }
        auto calibration_start = Clock::now();
        (void)cpu.Inside(calibration, DenseSemiring::kSum, algorithm, parallelism);
        const double seconds_per_work =
            Seconds(calibration_start) / Work(algorithm, static_cast<int>(calibration.size()), m);
        Row row;
        row.name = std::string(algorithm == DenseAlgorithm::kBaseline ? "Baseline" : "Factored") +
                   (parallelism == DenseParallelism::kSerial
                        ? ""
                        : std::string(" ") + cky::DenseParallelismName(parallelism));
        double timed_work = 0, elapsed = 0;
        double checksum = 0;
        for (int s : order) {
          const double work = Work(algorithm, static_cast<int>(ids[s].size()), m);
          // Skip a sentence that would overrun the budget by much (rate from what was timed so far,
          // or from the calibration sentence); the work model corrects for what was skipped.
          const double rate = timed_work > 0 ? elapsed / timed_work : seconds_per_work;
          if (elapsed + rate * work > 1.5 * budget) continue;
          const auto start = Clock::now();
          checksum +=
              cpu.Inside(ids[s], DenseSemiring::kSum, algorithm, parallelism).SentenceLogProb();
          elapsed += Seconds(start);
          timed_work += work;
          ++row.timed_sentences;
          if (elapsed >= budget) break;
        }
        row.timed_share = timed_work / total_work;
        if (timed_work > 0) {
          row.sentences_per_second = ids.size() / (elapsed * total_work / timed_work);
        } else {  // every sentence would overrun the budget: extrapolate the calibration sentence
          row.sentences_per_second = ids.size() / (seconds_per_work * total_work);
          row.note = "from the 10-word calibration sentence only";
        }
        if (!std::isfinite(checksum)) row.note = "non-finite log-likelihood!";
        rows.push_back(row);
        std::fprintf(stderr, "m=%d %s: %.1f sentences/s\n", m, row.name.c_str(),
                     row.sentences_per_second);
      }
    }
    // Whole sentences on separate cores: every sentence, timed.
    std::vector<double> cpu_log_probs;
    {
      auto start = Clock::now();
      cpu_log_probs = cpu.SentenceLogProbsAcrossSentences(ids, DenseSemiring::kSum);
      Row row{"Factored, sentences across cores", ids.size() / Seconds(start), 1.0,
              static_cast<int>(ids.size()), ""};
      rows.push_back(row);
    }
    std::vector<double> cpu_viterbi = cpu.SentenceLogProbsAcrossSentences(ids, DenseSemiring::kMax);
    if (cky::cuda::DeviceAvailable()) {
      auto gpu = cky::CreateDenseInsideGpu(grammar);
      if (!gpu.ok()) {
        std::fprintf(stderr, "%s\n", gpu.status().message().c_str());
        return 1;
      }
      for (bool viterbi : {false, true}) {
        std::vector<double> log_probs;
        cky::Status status = (*gpu)->Inside(ids, viterbi, &log_probs, nullptr);  // warm-up
        if (!status.ok()) {
          std::fprintf(stderr, "%s\n", status.message().c_str());
          return 1;
        }
        std::vector<double> times;
        for (int r = 0; r < std::max(1, gpu_repeats); ++r) {
          auto start = Clock::now();
          status = (*gpu)->Inside(ids, viterbi, &log_probs, nullptr);
          times.push_back(Seconds(start));
        }
        std::sort(times.begin(), times.end());
        const double median = times[times.size() / 2];
        const std::vector<double>& cpu_values = viterbi ? cpu_viterbi : cpu_log_probs;
        double largest_difference = 0;
        for (size_t s = 0; s < ids.size(); ++s) {
          largest_difference =
              std::max(largest_difference, std::abs(log_probs[s] - cpu_values[s]) /
                                               std::max(1.0, std::abs(cpu_values[s])));
        }
        const cky::cuda::DenseGpuStats stats = (*gpu)->last_stats();
        char note[200];
        std::snprintf(note, sizeof(note),
                      "max rel. diff. vs CPU factored %.1e; %ld launches, %ld batch(es); "
                      "median of %zu passes",
                      largest_difference, stats.kernel_launches, stats.batches, times.size());
        rows.push_back({viterbi ? "GPU factored, Viterbi (max) log-probs" : "GPU factored (CUDA)",
                        ids.size() / median, 1.0, static_cast<int>(ids.size()), note});
      }
      // Viterbi trees: charts copied back, trees extracted on one CPU thread.
      {
        auto start = Clock::now();
        std::vector<double> log_probs;
        std::vector<cky::cuda::DenseGpuChart> charts;
        cky::Status status = (*gpu)->Inside(ids, true, &log_probs, &charts);
        size_t trees = 0;
        for (size_t s = 0; s < ids.size() && status.ok(); ++s) {
          trees += cky::DenseViterbiTree(grammar, cky::ToDenseChart(std::move(charts[s])), ids[s],
                                         sentences[s])
                       .ok();
        }
        rows.push_back({"GPU Viterbi + trees (chart copy, CPU extraction)",
                        ids.size() / Seconds(start), 1.0, static_cast<int>(ids.size()),
                        std::to_string(trees) + " trees"});
      }
    } else {
      rows.push_back({"GPU factored (CUDA)", 0, 0, 0, "no device: not measured"});
    }
    PrintTable(m, static_cast<int>(ids.size()), rows);
  }
  std::printf(
      "\nPaper (Johnson 2011, 8 Harpertown cores + Fermi S2050, WSJ section 24, m = 32): "
      "baseline 11, factored 122, factored (i) outer parallel 649 (best), CUDA 206 "
      "sentences/s.\n");
  return 0;
}
