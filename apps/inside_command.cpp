// `cky inside`: sentence log-likelihoods (and Viterbi trees) under a dense PCFG.
//
//   cky inside --grammar g.txt < sentences.txt          one log-likelihood per line
//   cky inside --grammar g.txt --viterbi < sentences    "LOGPROB<TAB>(A0 (A3 the) ...)" per line
//   cky inside --generate 32 --seed 1 --save-grammar g.txt < sentences.txt
//
// Input: one tokenized sentence per line (words separated by whitespace). Output: one line per
// input line, in order. Words outside the vocabulary are read as the unknown token. An empty line
// prints "-inf" (and "(())" as its tree): a CNF grammar gives the empty string probability 0.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "apps/command_util.h"
#include "apps/commands.h"
#include "common/input_file.h"
#include "cuda/common/device.h"
#include "dense/dense_inside.h"
#include "dense/dense_pcfg.h"

namespace cky::apps {
namespace {

struct InsideOptions {
  std::string grammar_path;
  int generate = 0;
  uint64_t seed = 1;
  int min_count = 1;
  std::string vocabulary_path;
  std::string save_grammar;
  std::string save_berkeley;
  std::string input = "-";
  bool viterbi = false;
  std::string device = "auto";
  int threads = 0;
  int batch = 4096;
};

std::vector<std::string> Tokenize(const std::string& line) {
  std::istringstream fields(line);
  std::vector<std::string> words;
  for (std::string word; fields >> word;) words.push_back(word);
  return words;
}

std::vector<std::vector<std::string>> ReadSentences(const std::string& path) {
  StatusOr<std::unique_ptr<InputFile>> file = InputFile::Open(path);
  if (!file.ok()) Fail(file.status().message());
  std::vector<std::vector<std::string>> sentences;
  for (std::string line; std::getline((*file)->stream(), line);)
    sentences.push_back(Tokenize(line));
  if (Status read = (*file)->ReadStatus(); !read.ok()) Fail(read.message());
  return sentences;
}

std::string FormatLogProb(double value) {
  if (value == -std::numeric_limits<double>::infinity()) return "-inf";
  char text[40];
  std::snprintf(text, sizeof(text), "%.10g", value);
  return text;
}

// Parses one batch of sentences and prints a line for each.
class InsideRunner {
 public:
  InsideRunner(const DensePcfg& grammar, const InsideOptions& options)
      : grammar_(grammar), options_(options) {
    const bool want_gpu = options.device == "gpu" || options.device == "cuda" ||
                          (options.device == "auto" && cuda::DeviceAvailable());
    if (want_gpu) {
      StatusOr<std::unique_ptr<cuda::DenseInsideGpu>> gpu = CreateDenseInsideGpu(grammar);
      if (!gpu.ok()) Fail(gpu.status().message());
      gpu_ = std::move(gpu.value());
      spdlog::debug("dense inside on the GPU: {}", cuda::DeviceDescription());
    } else {
      cpu_ = std::make_unique<DenseInsideCpu>(grammar, options.threads);
      spdlog::debug("dense inside on the CPU with {} threads", cpu_->num_threads());
    }
  }

  void Run(const std::vector<std::vector<std::string>>& sentences) {
    std::vector<std::vector<int>> ids;
    for (const auto& sentence : sentences) ids.push_back(grammar_.WordIds(sentence));
    std::vector<double> log_probs;
    std::vector<std::optional<Tree>> trees(sentences.size());
    if (gpu_) {
      std::vector<cuda::DenseGpuChart> charts;
      Status status =
          gpu_->Inside(ids, options_.viterbi, &log_probs, options_.viterbi ? &charts : nullptr);
      if (!status.ok()) Fail(status.message());
      if (options_.viterbi) {
        for (size_t s = 0; s < sentences.size(); ++s) {
          trees[s] = Extract(ToDenseChart(std::move(charts[s])), ids[s], sentences[s]);
        }
      }
    } else if (!options_.viterbi) {
      log_probs = cpu_->SentenceLogProbsAcrossSentences(ids, DenseSemiring::kSum);
    } else {
      for (size_t s = 0; s < sentences.size(); ++s) {
        DenseChart<float> chart = cpu_->Inside(ids[s], DenseSemiring::kMax,
                                               DenseAlgorithm::kFactored, DenseParallelism::kOuter);
        log_probs.push_back(chart.SentenceLogProb());
        trees[s] = Extract(chart, ids[s], sentences[s]);
      }
    }
    std::string out;
    for (size_t s = 0; s < sentences.size(); ++s) {
      out += FormatLogProb(log_probs[s]);
      if (options_.viterbi) out += "\t" + (trees[s] ? ToBracketString(*trees[s]) : "(())");
      out += "\n";
    }
    errno = 0;
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
      Fail("standard output: cannot write: " + std::string(std::strerror(errno)));
    }
  }

 private:
  std::optional<Tree> Extract(const DenseChart<float>& chart, const std::vector<int>& ids,
                              const std::vector<std::string>& words) {
    if (words.empty()) return std::nullopt;
    StatusOr<Tree> tree = DenseViterbiTree(grammar_, chart, ids, words);
    if (!tree.ok()) return std::nullopt;
    return std::move(tree.value());
  }

  const DensePcfg& grammar_;
  const InsideOptions& options_;
  std::unique_ptr<cuda::DenseInsideGpu> gpu_;
  std::unique_ptr<DenseInsideCpu> cpu_;
};

void RunInside(const InsideOptions& options) {
  DensePcfg grammar;
  std::vector<std::vector<std::string>> input;
  bool input_read = false;
  if (options.generate > 0) {
    std::vector<std::vector<std::string>> vocabulary_source;
    if (!options.vocabulary_path.empty()) {
      vocabulary_source = ReadSentences(options.vocabulary_path);
    } else {
      input = ReadSentences(options.input);
      input_read = true;
      vocabulary_source = input;
    }
    grammar = GenerateDensePcfg({.num_nonterminals = options.generate, .seed = options.seed},
                                BuildDenseVocabulary(vocabulary_source, options.min_count));
    spdlog::debug("generated a dense grammar: {} nonterminals, {} words", options.generate,
                  grammar.vocabulary_size());
  } else {
    StatusOr<DensePcfg> loaded = LoadDensePcfg(options.grammar_path);
    if (!loaded.ok()) Fail(loaded.status().message());
    grammar = std::move(loaded.value());
  }
  if (!options.save_grammar.empty()) {
    const std::string& path = options.save_grammar;
    const bool binary = path.size() > 4 && path.substr(path.size() - 4) == ".bin";
    Status status =
        binary ? WriteDensePcfgBinary(grammar, path) : WriteDensePcfgText(grammar, path);
    if (!status.ok()) Fail(status.message());
  }
  if (!options.save_berkeley.empty()) {
    Status status = WriteDensePcfgAsBerkeley(grammar, options.save_berkeley);
    if (!status.ok()) Fail(status.message());
  }
  InsideRunner runner(grammar, options);
  if (input_read) {
    for (size_t first = 0; first < input.size(); first += options.batch) {
      const size_t last = std::min(input.size(), first + options.batch);
      runner.Run({input.begin() + first, input.begin() + last});
    }
    return;
  }
  StatusOr<std::unique_ptr<InputFile>> file = InputFile::Open(options.input);
  if (!file.ok()) Fail(file.status().message());
  std::vector<std::vector<std::string>> batch;
  for (std::string line; std::getline((*file)->stream(), line);) {
    batch.push_back(Tokenize(line));
    // What has arrived, up to --batch-size: a co-process gets each answer without waiting.
    if (static_cast<int>(batch.size()) == options.batch || !(*file)->LineReady()) {
      runner.Run(batch);
      batch.clear();
    }
  }
  if (!batch.empty()) runner.Run(batch);
  if (Status read = (*file)->ReadStatus(); !read.ok()) Fail(read.message());
}

}  // namespace

void AddInsideCommand(CLI::App& app) {
  auto options = std::make_shared<InsideOptions>();
  CLI::App* inside = app.add_subcommand(
      "inside",
      "Sentence log-likelihoods (inside probabilities) under a dense PCFG, one line per input "
      "line; with --viterbi, the best tree's log-probability and the tree. An empty line prints "
      "-inf (and the tree \"(())\").");
  auto* grammar = Shown(inside->add_option("-g,--grammar", options->grammar_path,
                                           "Dense grammar file: cky's dense text format or its "
                                           "binary form (gzip accepted). A Berkeley grammar is "
                                           "refused with an explanation: it is not a dense CNF "
                                           "PCFG"),
                        "FILE");
  auto* generate = inside->add_option(
      "--generate", options->generate,
      "Instead of --grammar, generate a random dense grammar with this many nonterminals "
      "(Johnson 2011 style); its vocabulary comes from --vocabulary or else from the input");
  grammar->excludes(generate);
  Shown(generate->check(Between(1, 4096)), "M");
  Shown(inside->add_option("--seed", options->seed, "Random seed of --generate")
            ->capture_default_str(),
        "N");
  Shown(inside
            ->add_option("--min-count", options->min_count,
                         "With --generate: words seen fewer times than this map to the unknown "
                         "token")
            ->capture_default_str()
            ->check(AtLeast(1)),
        "N");
  Shown(inside->add_option("--vocabulary", options->vocabulary_path,
                           "With --generate: tokenized sentences to build the vocabulary from"),
        "FILE");
  Shown(inside->add_option("--save-grammar", options->save_grammar,
                           "Write the grammar used to this file (binary form if it ends in .bin, "
                           "else text)"),
        "FILE");
  Shown(inside->add_option("--save-berkeley", options->save_berkeley,
                           "Write the grammar used as a Berkeley text grammar: PREFIX.grammar, "
                           ".lexicon, .splits, .words"),
        "PREFIX");
  Shown(inside
            ->add_option("-i,--input,INPUT", options->input,
                         "Tokenized sentences, one per line; - is standard input (plain, gzip, "
                         "bzip2, xz or zstd)")
            ->capture_default_str(),
        "FILE");
  inside->add_flag("--viterbi", options->viterbi,
                   "Print the best tree's log-probability and the tree (labels A0..A<m-1>) "
                   "instead of the log-likelihood");
  Shown(inside
            ->add_option("-b,--backend", options->device,
                         "Where to compute: cuda (the GPU), cpu, or auto (the GPU when there is "
                         "one)")
            ->capture_default_str()
            ->check(OneOf({"auto", "cuda", "gpu", "cpu"})),
        "{auto,cpu,cuda}");
  // The old name, hidden.
  inside->add_option("--device", options->device)
      ->check(OneOf({"auto", "cuda", "gpu", "cpu"}))
      ->group("");
  Shown(inside->add_option("-t,--threads", options->threads, "CPU threads; 0 = all cores")
            ->capture_default_str()
            ->check(Between(0, kMaxThreads)),
        "N");
  Shown(inside
            ->add_option("--batch-size", options->batch,
                         "Most sentences parsed together; a batch holds what has arrived")
            ->capture_default_str()
            ->check(AtLeast(1)),
        "N");
  inside->add_option("--batch", options->batch)->check(AtLeast(1))->group("");  // the old name
  inside->callback([options, grammar, generate] {
    if (grammar->count() == 0 && generate->count() == 0) {
      spdlog::error("cky inside: give --grammar FILE or --generate M");
      throw CLI::RuntimeError(2);
    }
    RunInside(*options);
  });
}

}  // namespace cky::apps
