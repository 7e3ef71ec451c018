// Max-rule against Viterbi, same grammar, same sentences, same run: sentences/s end to end through
// the Backend interface (lexical scores precomputed; upload, device passes, copy back, tree
// extraction), on sentences whose lengths follow a length list (WSJ section 23 by default) and
// whose words are consecutive tokens of GUM sentences. Rows: CUDA Viterbi (default kernel), CUDA
// max-rule, the max-rule device passes alone (with the phase profile), and the multi-threaded CPU
// max-rule and Viterbi backends on the first short sentences. "agree" compares each GPU max-rule
// tree with the CPU max-rule tree where the CPU parsed the sentence.
//
//   max_rule_bench --grammar en_sm6s.ckybin --lengths ../shared/bench/wsj23-sentence-lengths.txt
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "cuda/common/device.h"
#include "cuda/inside_outside/inside_outside.h"
#include "lexicon/lexicon.h"
#include "parser/cpu_backend.h"
#include "parser/cuda_backend.h"
#include "parser/cuda_max_rule_backend.h"
#include "parser/max_rule.h"
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
  std::string note;
};

void Print(const Row& r) {
  std::printf("| %-30s | %9zu | %9.3f | %10.2f | %s\n", r.name.c_str(), r.sentences, r.seconds,
              r.sentences / r.seconds, r.note.c_str());
  std::fflush(stdout);
}

Row Time(const std::string& name, Backend& backend, std::span<const SentenceInput> inputs,
         std::vector<ParseOutcome>* out) {
  const auto begin = std::chrono::steady_clock::now();
  std::vector<ParseOutcome> outcomes = backend.ParseBatch(inputs);
  Row row{name, inputs.size(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count()};
  size_t ok = 0;
  for (const ParseOutcome& o : outcomes) ok += o.status == ParseStatus::kOk;
  row.note = std::to_string(ok) + " parsed";
  if (out) *out = std::move(outcomes);
  return row;
}

// "gG-pP-mM": cells per pair-sum group, pair-sum kernel, max-rule binary kernel.
cuda::DeviceInsideOutsideOptions ParseVariant(const std::string& variant) {
  cuda::DeviceInsideOutsideOptions options;
  for (size_t at = 0; at < variant.size();) {
    const size_t dash = std::min(variant.find('-', at), variant.size());
    const std::string part = variant.substr(at, dash - at);
    const int value = part.size() > 1 ? std::atoi(part.c_str() + 1) : 0;
    if (part[0] == 'g') options.cells_per_group = value;
    if (part[0] == 'p') options.pair_sum_kernel = value;
    if (part[0] == 'm') options.max_rule_kernel = value;
    at = dash + 1;
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Max-rule and Viterbi parsing throughput side by side (CUDA and CPU)"};
  std::vector<std::string> grammars;
  std::string lengths_file = "../shared/bench/wsj23-sentence-lengths.txt";
  std::vector<std::string> sentence_files = {"../shared/grammars/reference/small_sm2/sentences.txt",
                                             "../shared/grammars/reference/gum_sm3/sentences.txt"};
  int count = 0, cpu_count = 8, cpu_max_length = 12, max_batch = 256, threads = 0;
  bool steady = false;
  std::vector<std::string> variants = {"g8-p5-m13", "g8-p5-m2", "g8-p5-m14"};
  app.add_option("--grammar", grammars, "grammar specs (LoadBerkeleyModel)")->required();
  app.add_option("--lengths", lengths_file, "sentence lengths, one a line (WSJ23 by default)");
  app.add_option("--sentences", sentence_files, "tokenized sentences whose tokens fill the bench");
  app.add_option("--count", count, "sentences for the GPU rows; 0 = one per length");
  app.add_option("--cpu-count", cpu_count, "sentences for the CPU rows (0: none)");
  bool no_end_to_end = false;
  app.add_flag("--device-only", no_end_to_end, "skip the end-to-end GPU rows (profiling runs)");
  app.add_option("--cpu-max-length", cpu_max_length, "longest sentence of the CPU rows");
  app.add_option("--max-batch", max_batch, "max-rule: sentences per device batch at most");
  app.add_option("--threads", threads, "CPU threads (0 = all)");
  app.add_flag("--steady", steady, "warm the GPU backends up on the whole set first");
  std::vector<std::string> end_to_end = {"default"};
  app.add_option("--end-to-end", end_to_end,
                 "end-to-end max-rule rows: 'default' or kernel variants gG-pP-mM (as --variants)");
  app.add_option("--variants", variants,
                 "device-only rows: kernel variants gG-pP-mM (cells per pair-sum group, pair-sum "
                 "rule phase, max-rule binary kernel; cuda/inside_outside/inside_outside.h)");
  CLI11_PARSE(app, argc, argv);

  const std::vector<int> lengths = ReadLengths(lengths_file);
  const std::vector<std::string> tokens = ReadTokens(sentence_files);
  if (lengths.empty() || tokens.empty()) {
    std::fprintf(stderr, "max_rule_bench: no lengths or no tokens\n");
    return 1;
  }
  std::printf("device: %s\n", cuda::DeviceDescription().c_str());
  std::printf("host threads: %u\n", std::thread::hardware_concurrency());
  for (const std::string& spec : grammars) {
    auto model = LoadBerkeleyModel(spec);
    if (!model.ok()) {
      std::fprintf(stderr, "max_rule_bench: %s\n", model.status().message().c_str());
      return 1;
    }
    auto lexicon = Lexicon::Build(*model);
    if (!lexicon.ok()) {
      std::fprintf(stderr, "max_rule_bench: %s\n", lexicon.status().message().c_str());
      return 1;
    }
    const Grammar& g = model->grammar;
    Parser scorer(g, *lexicon, MakeReferenceBackend(g));
    const int total = count > 0 ? count : static_cast<int>(lengths.size());
    std::vector<SentenceInput> inputs;
    size_t position = 0;
    double words = 0;
    for (int i = 0; i < total; ++i) {
      const int n = lengths[i % lengths.size()];
      std::vector<std::string> sentence;
      for (int k = 0; k < n; ++k) sentence.push_back(tokens[position++ % tokens.size()]);
      words += n;
      inputs.push_back({sentence, scorer.ScoreWords(sentence)});
    }
    std::printf(
        "\n## %s: %d states, %d symbols, %ld binary rules, %zu sum unaries (exact: %s); %d "
        "sentences, mean length %.2f\n\n",
        spec.c_str(), g.num_states(), g.num_symbols(), static_cast<long>(g.num_binary_rules()),
        g.sum_unary_parent.size(), g.sum_unaries_exact ? "yes" : "no", total, words / total);
    std::printf("| %-30s | %9s | %9s | %10s | note\n", "backend", "sentences", "seconds", "sent/s");
    std::printf("|%s|%s|%s|%s|---\n", std::string(32, '-').c_str(), std::string(11, '-').c_str(),
                std::string(11, '-').c_str(), std::string(12, '-').c_str());
    std::span<const SentenceInput> all(inputs);

    // CPU rows first: their max-rule trees are the agreement check for the GPU.
    std::vector<size_t> cpu_indices;
    std::vector<SentenceInput> cpu_inputs;
    for (size_t i = 0; i < inputs.size() && cpu_inputs.size() < size_t(cpu_count); ++i) {
      if (static_cast<int>(inputs[i].words.size()) > cpu_max_length) continue;
      cpu_indices.push_back(i);
      cpu_inputs.push_back(inputs[i]);
    }
    std::vector<ParseOutcome> cpu_max_rule;
    if (!cpu_inputs.empty()) {
      Print(Time("cpu max-rule", *MakeCpuMaxRuleBackend(g, threads), cpu_inputs, &cpu_max_rule));
      Print(Time("cpu viterbi", *MakeCpuBackend(g, threads), cpu_inputs, nullptr));
    }
    if (!CudaBackendAvailable()) {
      std::printf("(no CUDA device: GPU rows skipped)\n");
      continue;
    }
    auto viterbi =
        MakeCudaBackend(g, CudaBackendOptions{.device = {.extraction_threads = threads}});
    if (no_end_to_end) viterbi = Status::Error("skipped");
    if (viterbi.ok()) {
      (*viterbi)->ParseBatch(steady ? all : all.first(std::min<size_t>(8, all.size())));
      Print(Time("cuda viterbi (" + (*viterbi)->name() + ")", **viterbi, all, nullptr));
    }
    std::vector<ParseOutcome> gpu, first_gpu;
    for (const std::string& variant : no_end_to_end ? std::vector<std::string>{} : end_to_end) {
      CudaMaxRuleOptions e2e{
          .device = {.max_batch_sentences = max_batch, .extraction_threads = threads}};
      if (variant != "default") {
        const cuda::DeviceInsideOutsideOptions kernels = ParseVariant(variant);
        e2e.cells_per_group = kernels.cells_per_group;
        e2e.pair_sum_kernel = kernels.pair_sum_kernel;
        e2e.max_rule_kernel = kernels.max_rule_kernel;
      }
      auto max_rule = MakeCudaMaxRuleBackend(g, e2e);
      if (!max_rule.ok()) {
        std::printf("| cuda max-rule | %s\n", max_rule.status().message().c_str());
        continue;
      }
      (*max_rule)->ParseBatch(steady ? all : all.first(std::min<size_t>(8, all.size())));
      Row row = Time("cuda max-rule (" + variant + ")", **max_rule, all, &gpu);
      if (!cpu_max_rule.empty()) {
        size_t same = 0;
        for (size_t k = 0; k < cpu_indices.size(); ++k) {
          const ParseOutcome& c = cpu_max_rule[k];
          const ParseOutcome& d = gpu[cpu_indices[k]];
          same += c.status == d.status && (c.status != ParseStatus::kOk || c.tree == d.tree);
        }
        row.note += "; agree with cpu max-rule " + std::to_string(same) + "/" +
                    std::to_string(cpu_indices.size());
      }
      if (first_gpu.empty()) {
        first_gpu = gpu;
      } else {  // trees and statuses against the first end-to-end row's
        size_t same = 0;
        for (size_t k = 0; k < gpu.size(); ++k)
          same += gpu[k].status == first_gpu[k].status && gpu[k].tree == first_gpu[k].tree;
        row.note += "; same trees as the first row " + std::to_string(same) + "/" +
                    std::to_string(gpu.size());
      }
      Print(row);
    }

    // The device passes alone (no extraction), in the backend's batches, with the profile, for
    // each kernel variant asked for. "same arrays": sentences whose max-rule arrays (split,
    // children, unary child of every cell and symbol: the trees and more) equal the first
    // variant's.
    std::vector<uint64_t> first_hashes;
    for (const std::string& variant : variants) {
      const cuda::DeviceInsideOutsideOptions options = ParseVariant(variant);
      std::string error;
      auto device = cuda::DeviceInsideOutside::Create(CudaGrammarView(g), options, &error);
      if (!device) {
        std::printf("| device only | %s\n", error.c_str());
        continue;
      }
      std::vector<size_t> order(inputs.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return inputs[a].words.size() > inputs[b].words.size();
      });
      std::vector<cuda::IoResult> results;
      std::vector<uint64_t> hashes(inputs.size(), 0);
      auto run = [&](size_t limit) {
        for (size_t first = 0; first < limit; first += max_batch) {
          std::vector<cuda::IoSentence> batch;
          for (size_t k = first; k < std::min(limit, first + max_batch); ++k)
            batch.push_back({static_cast<int32_t>(inputs[order[k]].words.size()),
                             inputs[order[k]].lexical.scores.data()});
          if (device->MaxRuleBatch(batch, false, &results, &error) != cuda::IoBatchResult::kOk)
            return false;
          for (size_t k = 0; k < batch.size(); ++k) {  // FNV-1a over the max-rule arrays
            const int64_t n = batch[k].length;
            const cuda::IoResult& r = results[k];
            // The finite entries come in no particular order: laid out densely first (-1 else).
            std::vector<int32_t> a(size_t(n * (n + 1) / 2 * g.num_symbols() * 4), -1);
            for (size_t j = 0; j < r.entries; ++j)
              std::copy(r.entry_split_left_right_unary + 4 * j,
                        r.entry_split_left_right_unary + 4 * j + 4,
                        a.begin() + 4 * size_t(r.entry_index[j]));
            uint64_t h = 1469598103934665603ull;
            for (const int32_t v : a) h = (h ^ static_cast<uint32_t>(v)) * 1099511628211ull;
            hashes[order[first + k]] = h;
          }
        }
        return true;
      };
      run(steady ? order.size() : 1);
      device->SetProfiling(true);
      const auto begin = std::chrono::steady_clock::now();
      Row only{"  device only, " + variant, inputs.size()};
      if (!run(order.size())) {
        only.note = "failed: " + error;
      } else {
        only.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        only.note = device->ProfileReport();
        if (first_hashes.empty()) first_hashes = hashes;
        size_t same = 0;
        for (size_t i = 0; i < hashes.size(); ++i) same += hashes[i] == first_hashes[i];
        only.note += "; same arrays as " + variants[0] + ": " + std::to_string(same) + "/" +
                     std::to_string(hashes.size());
      }
      Print(only);
    }
  }
  return 0;
}
