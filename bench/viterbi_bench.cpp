// Viterbi CKY throughput: every CUDA kernel variant and the CPU backends, same host, same run, on
// sentences whose lengths follow a length list (WSJ section 23 by default) and whose words are
// consecutive tokens of GUM sentences, or on a tokenized corpus (--corpus). With --cky, the
// whole-process `cky parse` of the same sentences is timed beside the kernels (the job users run:
// loading, reading, lexical scoring, device, output). Prints one table per grammar:
//
//   backend                 sentences  seconds  sent/s   rule-apps/s  agree
//
// "Rule applications" are binary rules x split points of the direct formulation,
// |R| * sum over sentences of (n^3 - n) / 6, whatever a kernel actually evaluates (pair-fused
// evaluates fewer), so that figures compare across formulations. Times are end to end through the
// Backend interface (lexical scores precomputed): upload, inside pass, copy back, tree
// extraction (on the device by default; "host extraction" rows copy the charts back and extract on
// the CPU). "agree" counts sentences whose tree equals the fast CPU backend's (on the sentences
// the CPU parsed), or "-". --presence prints, per span length, the symbols present per cell and
// the share of (tile, cell group) iterations the default kernel's presence masks skip.
//
//   viterbi_bench --grammar ../shared/grammars/en_sm6s/en_sm6s --count 2416 --paper-count 48
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "common/sentence_file.h"
#include "cuda/common/device.h"
#include "cuda/viterbi/viterbi.h"
#include "lexicon/lexicon.h"
#include "parser/cpu_backend.h"
#include "parser/cuda_backend.h"
#include "parser/parser.h"

namespace {

using namespace cky;

std::vector<std::string> ReadTokens(const std::vector<std::string>& files) {
  std::vector<std::string> tokens;
  for (const std::string& file : files) {
    std::ifstream in(file);
    for (std::string w; in >> w;) tokens.push_back(w);
  }
  return tokens;
}

std::vector<int> ReadLengths(const std::string& file) {
  std::vector<int> lengths;
  std::ifstream in(file);
  for (int n; in >> n;) lengths.push_back(n);
  return lengths;
}

struct Row {
  std::string name;
  size_t sentences = 0;
  double seconds = 0;
  double rule_apps = 0;
  std::string agree = "-";
  std::string note;  // printed under the row
};

double RuleApplications(const Grammar& g, std::span<const SentenceInput> inputs) {
  double splits = 0;
  for (const SentenceInput& s : inputs) {
    const double n = static_cast<double>(s.words.size());
    splits += (n * n * n - n) / 6;
  }
  return splits * static_cast<double>(g.num_binary_rules());
}

Row Time(const std::string& name, Backend& backend, std::span<const SentenceInput> inputs,
         const Grammar& g, const std::vector<size_t>* cpu_indices,
         const std::vector<ParseOutcome>* cpu, std::vector<ParseOutcome>* out) {
  const auto begin = std::chrono::steady_clock::now();
  std::vector<ParseOutcome> outcomes = backend.ParseBatch(inputs);
  const auto end = std::chrono::steady_clock::now();
  Row row{name, inputs.size(), std::chrono::duration<double>(end - begin).count(),
          RuleApplications(g, inputs)};
  if (cpu && cpu_indices) {
    size_t same = 0, compared = 0;
    for (size_t k = 0; k < cpu->size(); ++k) {
      const size_t i = (*cpu_indices)[k];
      if (i >= outcomes.size()) continue;
      ++compared;
      same += (*cpu)[k].status == outcomes[i].status && (*cpu)[k].tree == outcomes[i].tree;
    }
    row.agree = std::to_string(same) + "/" + std::to_string(compared);
  }
  if (out) *out = std::move(outcomes);
  return row;
}

// The device inside pass alone (upload, kernels, chart copy back; no tree extraction), in batches
// of up to 2048 sentences sorted by length, as the backend forms them.
Row TimeInsideOnly(const std::string& kernel, const Grammar& g,
                   std::span<const SentenceInput> inputs, bool steady) {
  Row row{"  " + kernel + " inside only", inputs.size(), 0, RuleApplications(g, inputs)};
  std::string error;
  auto device = cuda::DeviceViterbi::Create(CudaGrammarView(g), {.kernel = kernel}, &error);
  if (!device) {
    row.agree = error;
    return row;
  }
  std::vector<size_t> order(inputs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return inputs[a].words.size() > inputs[b].words.size();
  });
  std::vector<const float*> charts;
  auto run = [&](size_t limit) {
    for (size_t first = 0; first < limit; first += 2048) {
      std::vector<cuda::SentenceRef> batch;
      for (size_t k = first; k < std::min(limit, first + 2048); ++k)
        batch.push_back({static_cast<int32_t>(inputs[order[k]].words.size()),
                         inputs[order[k]].lexical.scores.data()});
      if (device->InsideBatch(batch, &charts, &error) != cuda::BatchResult::kOk) return false;
    }
    return true;
  };
  run(steady ? order.size() : 1);  // warm-up
  device->SetProfiling(true);
  const auto begin = std::chrono::steady_clock::now();
  if (!run(order.size())) {
    row.agree = "failed";
    return row;
  }
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  row.note = device->ProfileReport();
  return row;
}

// The whole `cky parse` process on `corpus` (one tokenized sentence a line), output discarded.
Row TimeCkyParse(const std::string& cky, const std::string& grammar, const std::string& corpus,
                 size_t sentences, const std::string& kernel, const std::string& extra) {
  Row row{"cky parse (whole process)", sentences, 0, 0};
  const std::string command = "'" + cky + "' parse --tokenized --decoder viterbi -b cuda -g '" +
                              grammar + "'" + (kernel.empty() ? "" : " --kernel " + kernel) + " " +
                              extra + " --no-progress -i '" + corpus + "' > /dev/null";
  const auto begin = std::chrono::steady_clock::now();
  const int status = std::system(command.c_str());
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  row.note = command + (status == 0 ? "" : " (exit status " + std::to_string(status) + ")");
  return row;
}

// Symbols present per cell and the share of (tile, group) iterations the masks skip, per span
// length, over the whole sentence set (kernel `kernel`, batches of 256).
void PrintPresence(const std::string& kernel, const Grammar& g,
                   std::span<const SentenceInput> inputs) {
  std::string error;
  auto device = cuda::DeviceViterbi::Create(CudaGrammarView(g), {.kernel = kernel}, &error);
  if (!device) return;
  device->SetPresenceStats(true);
  std::vector<const float*> charts;
  for (size_t first = 0; first < inputs.size(); first += 256) {
    std::vector<cuda::SentenceRef> batch;
    for (size_t k = first; k < std::min(inputs.size(), first + 256); ++k)
      batch.push_back(
          {static_cast<int32_t>(inputs[k].words.size()), inputs[k].lexical.scores.data()});
    if (device->InsideBatch(batch, &charts, &error) != cuda::BatchResult::kOk) return;
  }
  const std::vector<double> present = device->PresentSymbolsBySpan();
  const std::vector<double> skipped = device->SkippedGroupsBySpan();
  std::printf(
      "\nPresence (%s, %d symbols): per span length, symbols present per cell (mean) and "
      "(tile, 8-cell group) iterations skipped by the masks\n\n",
      kernel.c_str(), g.num_symbols());
  std::printf(
      "| span | symbols present | share of symbols | skipped |\n| ---: | ---: | ---: | ---: |\n");
  for (size_t w = 1; w < present.size(); ++w) {
    const double skip = w < skipped.size() ? skipped[w] : 0.0;
    std::printf("| %zu | %.1f | %.1f%% | %s |\n", w, present[w],
                100.0 * present[w] / g.num_symbols(),
                w >= 2 ? (std::to_string(int(100.0 * skip + 0.5)) + "%").c_str() : "-");
  }
  std::fflush(stdout);
}

// Yi et al.'s kernels (one rule per thread) are timed on --paper-count sentences only.
bool IsPaperKernel(const std::string& name) {
  for (const cuda::ViterbiKernelInfo& k : CudaKernels())
    if (k.name == name) return k.family == cuda::ViterbiKernelFamily::kPaper;
  return false;
}

void Print(const Row& r) {
  std::printf("| %-24s | %9zu | %9.3f | %10.2f | %12.3e | %9s |\n", r.name.c_str(), r.sentences,
              r.seconds, r.sentences / r.seconds, r.rule_apps / r.seconds, r.agree.c_str());
  if (!r.note.empty()) std::printf("|   (%s)\n", r.note.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Viterbi CKY throughput of every CUDA kernel variant and the CPU backends"};
  std::vector<std::string> grammars;
  std::string lengths_file = "../shared/bench/wsj23-sentence-lengths.txt";
  std::vector<std::string> sentence_files = {"../shared/grammars/reference/small_sm2/sentences.txt",
                                             "../shared/grammars/reference/gum_sm3/sentences.txt"};
  int count = 0, paper_count = 32, cpu_count = 16, cpu_max_length = 15, reference_count = 1,
      threads = 0;
  std::vector<std::string> kernels;
  bool steady = false, presence = false;
  std::string corpus_file, cky_path, cky_args;
  app.add_option("--grammar", grammars, "grammar prefixes (LoadBerkeleyModel specs)")->required();
  app.add_option("--lengths", lengths_file, "sentence lengths, one a line (WSJ23 by default)");
  app.add_option("--sentences", sentence_files, "tokenized sentences whose tokens fill the bench");
  app.add_option("--count", count, "sentences for the default (fast) kernels; 0 = one per length");
  app.add_option("--paper-count", paper_count, "sentences for the paper's (slow) kernel variants");
  app.add_option("--cpu-count", cpu_count, "sentences for the multi-threaded CPU backend");
  app.add_option("--cpu-max-length", cpu_max_length,
                 "the CPU backends parse the first sentences up to this length (slow otherwise)");
  app.add_option("--reference-count", reference_count, "sentences for the CPU reference");
  app.add_option("--threads", threads, "CPU threads (0 = all)");
  app.add_option("--kernels", kernels,
                 "CUDA kernels to time (default: every registered variant, `cky parse --kernel "
                 "list`)");
  app.add_option("--corpus", corpus_file,
                 "a tokenized corpus (one sentence a line) to parse instead of --lengths and "
                 "--sentences");
  app.add_option("--cky", cky_path,
                 "the cky binary: also time the whole `cky parse --tokenized --decoder viterbi "
                 "-b cuda` process on the same sentences, once per grammar (first kernel)");
  app.add_option("--cky-args", cky_args, "more options for that `cky parse` (e.g. --timeline)");
  app.add_flag("--presence", presence,
               "print symbols present per span length and the mask skip share (first kernel)");
  app.add_flag("--steady", steady,
               "warm each CUDA backend up on the whole sentence set first, so that its device and "
               "pinned host buffers already have their full size (a long parse's steady state); "
               "by default only 8 sentences warm it up and buffer growth is timed");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::vector<std::string>> corpus;
  if (!corpus_file.empty()) {
    auto read = ReadTokenizedSentences(corpus_file);
    if (!read.ok()) {
      std::fprintf(stderr, "viterbi_bench: %s\n", read.status().message().c_str());
      return 1;
    }
    for (auto& sentence : *read)
      if (!sentence.empty()) corpus.push_back(std::move(sentence));
  }
  const std::vector<int> lengths = corpus.empty() ? ReadLengths(lengths_file) : std::vector<int>{};
  const std::vector<std::string> tokens =
      corpus.empty() ? ReadTokens(sentence_files) : std::vector<std::string>{};
  if (corpus.empty() && (lengths.empty() || tokens.empty())) {
    std::fprintf(stderr, "viterbi_bench: no lengths or no tokens\n");
    return 1;
  }
  if (kernels.empty()) kernels = CudaKernelNames();
  std::printf("device: %s\n", cuda::DeviceDescription().c_str());
  std::printf("host threads: %u\n", std::thread::hardware_concurrency());

  for (const std::string& spec : grammars) {
    const auto load_begin = std::chrono::steady_clock::now();
    auto model = LoadBerkeleyModel(spec);
    if (!model.ok()) {
      std::fprintf(stderr, "viterbi_bench: %s\n", model.status().message().c_str());
      return 1;
    }
    auto lexicon = Lexicon::Build(*model);
    if (!lexicon.ok()) {
      std::fprintf(stderr, "viterbi_bench: %s\n", lexicon.status().message().c_str());
      return 1;
    }
    const Grammar& g = model->grammar;
    Parser scorer(g, *lexicon, MakeReferenceBackend(g));
    // Sentences: the corpus's (cycled), or lengths in file order (cycled) with words from
    // consecutive tokens.
    const int total =
        count > 0 ? count : static_cast<int>(corpus.empty() ? lengths.size() : corpus.size());
    std::vector<SentenceInput> inputs;
    size_t position = 0;
    double words = 0;
    for (int i = 0; i < total; ++i) {
      std::vector<std::string> sentence;
      if (!corpus.empty()) {
        sentence = corpus[i % corpus.size()];
      } else {
        const int n = lengths[i % lengths.size()];
        for (int k = 0; k < n; ++k) sentence.push_back(tokens[position++ % tokens.size()]);
      }
      words += static_cast<double>(sentence.size());
      inputs.push_back({sentence, scorer.ScoreWords(sentence)});
    }
    const double load_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - load_begin).count();
    std::printf(
        "\n## %s: %d states, %ld binary rules, %ld unary rules; %d sentences, mean length "
        "%.2f (setup %.1f s)\n\n",
        spec.c_str(), g.num_states(), static_cast<long>(g.num_binary_rules()),
        static_cast<long>(g.num_unary_rules()), total, words / total, load_seconds);
    std::printf("| %-24s | %9s | %9s | %10s | %12s | %9s |\n", "backend", "sentences", "seconds",
                "sent/s", "rule-apps/s", "agree");
    std::printf("|%s|%s|%s|%s|%s|%s|\n", std::string(26, '-').c_str(), std::string(11, '-').c_str(),
                std::string(11, '-').c_str(), std::string(12, '-').c_str(),
                std::string(14, '-').c_str(), std::string(11, '-').c_str());
    std::span<const SentenceInput> all(inputs);
    auto first = [&](int k) { return all.first(std::min<size_t>(k, all.size())); };

    // The CPU's sentences: the first ones up to cpu_max_length words.
    std::vector<size_t> cpu_indices;
    std::vector<SentenceInput> cpu_inputs;
    for (size_t i = 0; i < inputs.size() && cpu_inputs.size() < size_t(cpu_count); ++i) {
      if (static_cast<int>(inputs[i].words.size()) > cpu_max_length) continue;
      cpu_indices.push_back(i);
      cpu_inputs.push_back(inputs[i]);
    }
    std::span<const SentenceInput> cpu_span(cpu_inputs);
    std::vector<ParseOutcome> cpu_outcomes;
    if (reference_count > 0) {
      auto reference = MakeReferenceBackend(g);
      Print(Time("cpu reference (1 thread)", *reference,
                 cpu_span.first(std::min<size_t>(reference_count, cpu_span.size())), g, nullptr,
                 nullptr, nullptr));
    }
    if (!cpu_inputs.empty()) {
      auto cpu = MakeCpuBackend(g, threads);
      Print(Time("cpu (" +
                     std::to_string(threads > 0 ? threads : std::thread::hardware_concurrency()) +
                     " threads)",
                 *cpu, cpu_span, g, nullptr, nullptr, &cpu_outcomes));
    }
    if (!CudaBackendAvailable()) {
      std::printf("(no CUDA device: GPU rows skipped)\n");
      continue;
    }
    for (const std::string& kernel : kernels) {
      auto backend = MakeCudaBackend(
          g, CudaBackendOptions{.kernel = kernel, .device = {.extraction_threads = threads}});
      if (!backend.ok()) {
        std::printf("| %-24s | %s |\n", kernel.c_str(), backend.status().message().c_str());
        continue;
      }
      const bool fast = !IsPaperKernel(kernel);
      const auto sentences = fast ? all : first(paper_count);
      (*backend)->ParseBatch(steady ? sentences : first(8));  // warm-up: module load, buffers
      Print(Time("cuda/" + kernel, **backend, sentences, g, &cpu_indices, &cpu_outcomes, nullptr));
      if (fast) Print(TimeInsideOnly(kernel, g, all, steady));
      if (kernel == kernels.front()) {
        // Trees extracted on the host from copied-back charts (as before device extraction).
        auto host = MakeCudaBackend(g, CudaBackendOptions{.kernel = kernel,
                                                          .device = {.extraction_threads = threads},
                                                          .device_trees = false});
        if (host.ok()) {
          (*host)->ParseBatch(steady ? all : first(8));
          Print(Time("  host extraction", **host, all, g, &cpu_indices, &cpu_outcomes, nullptr));
        }
        if (presence) PrintPresence(kernel, g, all);
        if (!cky_path.empty()) {
          // The same sentences as a file, unless they are the corpus itself.
          std::string file = corpus_file;
          if (file.empty() || count > 0) {
            file = (std::filesystem::temp_directory_path() / "viterbi_bench_corpus.txt").string();
            std::ofstream out(file);
            for (const SentenceInput& s : inputs) {
              for (size_t k = 0; k < s.words.size(); ++k) out << (k ? " " : "") << s.words[k];
              out << "\n";
            }
          }
          Row whole = TimeCkyParse(cky_path, spec, file, inputs.size(), kernel, cky_args);
          whole.rule_apps = RuleApplications(g, inputs);  // the same sentences' work
          Print(whole);
        }
        // Batch size: the same kernel with batches of up to 256 and 4096 sentences.
        for (int max_batch : {256, 4096}) {
          auto sized = MakeCudaBackend(
              g, CudaBackendOptions{
                     .kernel = kernel,
                     .device = {.max_batch_sentences = max_batch, .extraction_threads = threads}});
          if (!sized.ok()) continue;
          (*sized)->ParseBatch(steady ? all : first(8));
          Print(Time("  batches of " + std::to_string(max_batch), **sized, all, g, &cpu_indices,
                     &cpu_outcomes, nullptr));
        }
      }
    }
  }
  return 0;
}
