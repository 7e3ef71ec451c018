// Membership benchmarks, both papers' tables in one run (CPU and GPU measured in the same run):
//
//  1. Kim et al. 2014, Table 2: speed-up of the single-string GPU CYK over our sequential CPU CYK
//     (RecognizeReference) for each rule mapping x cell memory, with the boolean projection of the
//     Berkeley grammar wsj_0 on GUM sentences.
//  2. Fujita/Nakano et al. 2017, Tables 1-3: for strings of length 32 and random grammars
//  of 32..512
//     nonterminals, gates before and after minimisation and microseconds per string of the
//     bitwise-parallel bulk CKY on all CPU cores and on the GPU, static vs dynamic scheduling,
//     next to the paper's TITAN X figures.
//
//   membership_bench --wsj0 ../shared/grammars/wsj-projected/wsj_0.gr \
//                    --gum ../shared/treebanks/gum/const [--time-budget 150]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "bench/gum_corpus.h"
#include "cuda/bpbc.h"
#include "cuda/cyk_membership.h"
#include "cuda/device.h"
#include "parser/bpbc.h"
#include "parser/cnf_grammar.h"
#include "parser/cyk_recognizer.h"

namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

void KimTable(const std::string& wsj0, const std::string& gum, int num_sentences, int max_length) {
  std::printf(
      "== Kim et al. 2014: single-string GPU CYK, speed-up over the sequential CPU CYK ==\n");
  auto model = cky::LoadBerkeleyModel(wsj0, {.use_cache = false});
  if (!model.ok()) {
    std::printf("skipped: %s\n", model.status().message().c_str());
    return;
  }
  const cky::CnfGrammar grammar = cky::ProjectBerkeleyModel(*model);
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(gum)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".ptb" && name.find("reddit") == std::string::npos) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  // Evenly spaced over all sentences of the sorted files, so that every genre contributes.
  std::vector<std::vector<std::string>> all;
  for (const auto& f : files) {
    for (auto& sentence : cky::bench::TreebankWords(f)) {
      if (static_cast<int>(sentence.size()) <= max_length) all.push_back(std::move(sentence));
    }
  }
  std::vector<std::vector<int32_t>> sentences;
  int64_t words = 0;
  const size_t step = std::max<size_t>(1, all.size() / std::max(1, num_sentences));
  for (size_t k = 0; k < all.size() && static_cast<int>(sentences.size()) < num_sentences;
       k += step) {
    std::vector<int32_t> ids;
    for (const auto& w : all[k]) ids.push_back(grammar.TerminalId(w));
    words += static_cast<int64_t>(ids.size());
    sentences.push_back(std::move(ids));
  }
  std::printf("grammar %s: %d nonterminals, %zu binary rules, %zu chain rules (closed)\n",
              wsj0.c_str(), grammar.num_nonterminals(), grammar.binary_rules.size(),
              grammar.unary_closure.size());
  std::printf("%zu GUM sentences (%zu files, reddit skipped, <= %d words), %.1f words on average\n",
              sentences.size(), files.size(), max_length,
              static_cast<double>(words) / std::max<size_t>(1, sentences.size()));
  auto start = Clock::now();
  std::vector<uint8_t> expected;
  for (const auto& s : sentences) expected.push_back(cky::RecognizeReference(grammar, s));
  const double cpu_ms = Seconds(start) * 1e3 / sentences.size();
  const int64_t members = std::count(expected.begin(), expected.end(), 1);
  std::printf("sequential CPU CYK (the reference): %.3f ms per sentence; %lld of %zu recognised\n",
              cpu_ms, static_cast<long long>(members), sentences.size());
  if (!cky::cuda::DeviceAvailable()) {
    std::printf("GPU: %s\n\n", cky::cuda::DeviceDescription().c_str());
    return;
  }
  std::printf("%-7s %8s | %10s %8s %6s | %10s %8s %6s\n", "mapping", "rules", "M ms/sent",
              "speed-up", "agree", "M+SH ms/s", "speed-up", "agree");
  const cky::cuda::MembershipGrammar device_grammar = cky::ToMembershipGrammar(grammar);
  for (auto mapping :
       {cky::cuda::RuleMapping::kRule, cky::cuda::RuleMapping::kRvs, cky::cuda::RuleMapping::kLvs,
        cky::cuda::RuleMapping::kRvsDummy, cky::cuda::RuleMapping::kLvsDummy}) {
    std::printf("%-7s", cky::cuda::RuleMappingName(mapping));
    bool first = true;
    for (auto memory : {cky::cuda::CellMemory::kGlobal, cky::cuda::CellMemory::kShared}) {
      auto gpu = cky::cuda::CykMembershipGpu::Create(
          device_grammar, {.mapping = mapping, .memory = memory}, cky::kMaxRecognizeLength);
      if (!gpu.ok()) {
        std::printf(" %s\n", gpu.status().message().c_str());
        return;
      }
      if (first) std::printf(" %8lld |", static_cast<long long>((*gpu)->device_rule_count()));
      first = false;
      std::vector<uint8_t> got;
      // Warm-up on a few sentences, then the timed pass over all.
      std::vector<std::vector<int32_t>> warm(
          sentences.begin(), sentences.begin() + std::min<size_t>(5, sentences.size()));
      (void)(*gpu)->Recognize(warm, &got);
      start = Clock::now();
      cky::Status status = (*gpu)->Recognize(sentences, &got);
      const double gpu_ms = Seconds(start) * 1e3 / sentences.size();
      if (!status.ok()) {
        std::printf(" %s\n", status.message().c_str());
        return;
      }
      std::printf(" %10.3f %7.1fx %6s |", gpu_ms, cpu_ms / gpu_ms, got == expected ? "yes" : "NO");
    }
    std::printf("\n");
  }
  std::printf("\n");
}

// The 2017 paper's Table 3 GPU column (TITAN X, us per string, length 32, dynamic scheduling),
// keyed by (nonterminals, rules).
const std::map<std::pair<int, int>, double> kPaperGpuUs = {
    {{32, 32}, 0.278},     {{32, 64}, 0.350},    {{32, 128}, 0.369},   {{32, 256}, 0.356},
    {{32, 512}, 0.352},    {{32, 1024}, 0.376},  {{32, 2048}, 0.387},  {{32, 4096}, 0.385},
    {{32, 8192}, 0.914},   {{32, 16384}, 1.63},  {{64, 64}, 0.448},    {{64, 128}, 0.565},
    {{64, 256}, 0.632},    {{64, 512}, 0.601},   {{64, 1024}, 0.617},  {{64, 2048}, 0.690},
    {{64, 4096}, 1.32},    {{64, 8192}, 1.97},   {{64, 16384}, 2.48},  {{64, 32768}, 3.70},
    {{64, 65536}, 7.66},   {{64, 131072}, 13.4}, {{128, 128}, 0.761},  {{128, 256}, 0.985},
    {{128, 512}, 1.31},    {{128, 1024}, 1.91},  {{128, 2048}, 2.02},  {{128, 4096}, 2.27},
    {{128, 8192}, 3.49},   {{128, 16384}, 5.44}, {{128, 32768}, 8.73}, {{128, 65536}, 14.5},
    {{128, 131072}, 24.8}, {{256, 256}, 1.40},   {{256, 512}, 2.66},   {{256, 1024}, 4.34},
    {{256, 2048}, 5.68},   {{256, 4096}, 8.89},  {{256, 8192}, 15.3},  {{256, 16384}, 29.2},
    {{256, 32768}, 56.4},  {{256, 65536}, 110},  {{256, 131072}, 202}, {{512, 512}, 3.95},
    {{512, 1024}, 5.92},   {{512, 2048}, 8.65},  {{512, 4096}, 15.6},  {{512, 8192}, 27.2},
    {{512, 16384}, 53.1},  {{512, 32768}, 98.7}, {{512, 65536}, 195},  {{512, 131072}, 395}};

std::vector<std::vector<int32_t>> Tile(const std::vector<std::vector<int32_t>>& pool,
                                       int64_t count) {
  std::vector<std::vector<int32_t>> out;
  out.reserve(count);
  for (int64_t i = 0; i < count; ++i) out.push_back(pool[i % pool.size()]);
  return out;
}

void BpbcTable(const std::vector<int>& nonterminal_counts, const std::vector<int>& rule_counts,
               double time_budget_s, double table_memory_gb, int64_t max_strings,
               double config_seconds) {
  constexpr int kLength = 32;
  const bool gpu = cky::cuda::DeviceAvailable();
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  std::printf("== Fujita/Nakano et al. 2017: bitwise-parallel bulk CKY, strings of length %d ==\n",
              kLength);
  std::printf(
      "CPU: BPBC, 64-bit words, %d threads, dynamic. GPU: 32 threads per block, tables "
      "limited to %.0f GB as in the paper; static/dynamic with 32-bit words and 4 splits per pass "
      "over the circuit, dyn64 with "
      "64-bit words, dyn1s one split per pass (the paper's order). us = microseconds per string "
      "(GPU: kernel time). paper = TITAN X "
      "Table 3 GPU; x = paper / ours(dyn32).\n",
      cores, table_memory_gb);
  std::printf("%5s %7s | %8s %8s %5s %6s | %8s %9s | %7s %6s %9s %9s %9s %9s %6s | %8s %6s\n", "N",
              "rules", "gates", "min", "ratio", "min s", "cpu us", "cpu strs", "gpu str", "blocks",
              "static us", "dyn us", "dyn64 us", "dyn1s us", "agree", "paper us", "x");
  const auto bench_start = Clock::now();
  for (int n : nonterminal_counts) {
    for (int p : rule_counts) {
      if (p < n || static_cast<int64_t>(p) >= static_cast<int64_t>(n) * n * n) continue;
      if (n == 32 && p > 16384) continue;  // as in the paper's tables
      if (Seconds(bench_start) > time_budget_s) {
        std::printf("%5d %7d | skipped: --time-budget %.0f s spent\n", n, p, time_budget_s);
        std::fflush(stdout);
        continue;
      }
      const cky::CnfGrammar grammar =
          cky::RandomCnfGrammar({.nonterminals = n,
                                 .rules = p,
                                 .terminals = 16,
                                 .seed = static_cast<uint64_t>(n * 1000003 + p)});
      const cky::BpbcCircuit original = cky::CompileCircuit(grammar);
      auto start = Clock::now();
      const cky::BpbcCircuit minimized =
          cky::MinimizeCircuit(original, {.anneal_steps_per_product = 100, .seed = 1});
      const double minimize_s = Seconds(start);
      const cky::cuda::BpbcProgram program = cky::FlattenCircuit(grammar, minimized);
      const auto pool = cky::RandomStrings(grammar, {.count = 16384,
                                                     .min_length = kLength,
                                                     .max_length = kLength,
                                                     .member_fraction = 0.5,
                                                     .seed = 7});

      // CPU: double the count until a run takes 0.25 s.
      double cpu_us = 0;
      int64_t cpu_count = 64LL * cores;
      std::vector<uint8_t> cpu_result;
      while (true) {
        const auto strings = Tile(pool, cpu_count);
        start = Clock::now();
        auto result = cky::RecognizeBulkCpu(program, strings, {.word_bits = 64});
        const double s = Seconds(start);
        cpu_us = s * 1e6 / cpu_count;
        cpu_result = std::move(*result);
        if (s > 0.25 || cpu_count >= (1 << 20)) break;
        cpu_count *= s < 0.03 ? 8 : 2;
      }
      std::printf("%5d %7d | %8lld %8lld %5.2f %6.2f | %8.3f %9lld |", n, p,
                  static_cast<long long>(original.GateCount()),
                  static_cast<long long>(minimized.GateCount()),
                  static_cast<double>(minimized.GateCount()) / original.GateCount(), minimize_s,
                  cpu_us, static_cast<long long>(cpu_count));
      std::fflush(stdout);
      if (!gpu) {
        std::printf(" no GPU\n");
        continue;
      }
      auto device = cky::cuda::BpbcGpu::Create(program);
      if (!device.ok()) {
        std::printf(" %s\n", device.status().message().c_str());
        continue;
      }
      cky::cuda::BpbcGpuOptions options{
          .word_bits = 32,
          .scheduling = cky::cuda::Scheduling::kDynamic,
          .threads_per_block = 32,
          .table_memory_bytes = static_cast<size_t>(table_memory_gb * (1 << 30))};
      // GPU: from one group per SM, grow the count until a run takes 0.3 s and every block the
      // table memory allows has a string group (the GPU is full), unless the next run would take
      // longer than --config-seconds.
      const int64_t slot_bytes = int64_t{kLength * (kLength + 1) / 2 + 1} * n * 32 * 4;
      const int64_t fill_blocks = std::min<int64_t>(
          132 * 32, static_cast<int64_t>(table_memory_gb * (1 << 30)) / slot_bytes);
      const int64_t fill = std::min(max_strings, fill_blocks * 1024);
      int64_t gpu_count = 132 * 1024;
      cky::cuda::BpbcGpuStats dynamic_stats;
      std::vector<uint8_t> gpu_result;
      const std::vector<std::vector<int32_t>> tiled = Tile(pool, max_strings);
      while (true) {
        cky::Status status =
            (*device)->Recognize(tiled.data(), gpu_count, options, &gpu_result, &dynamic_stats);
        if (!status.ok()) {
          std::printf(" %s\n", status.message().c_str());
          break;
        }
        if ((dynamic_stats.kernel_ms > 300 && gpu_count >= fill) || gpu_count >= max_strings) break;
        const int64_t next =
            std::min(max_strings, gpu_count * (dynamic_stats.kernel_ms < 40 ? 8 : 4));
        if (dynamic_stats.kernel_ms * next / gpu_count > config_seconds * 1e3) break;
        gpu_count = next;
      }
      // Agreement: both evaluators on the shared prefix of the tiled pool.
      const size_t common = std::min(cpu_result.size(), gpu_result.size());
      const bool agree =
          std::equal(cpu_result.begin(), cpu_result.begin() + common, gpu_result.begin());
      cky::cuda::BpbcGpuStats static_stats, wide_stats, v1_stats;
      // Slow configurations: only the dynamic 32-bit run (the others print as 0).
      const bool slow = dynamic_stats.kernel_ms > 1500;
      options.scheduling = cky::cuda::Scheduling::kStatic;
      cky::Status s1 =
          slow ? cky::Status()
               : (*device)->Recognize(tiled.data(), gpu_count, options, &gpu_result, &static_stats);
      const bool static_agree =
          s1.ok() &&
          std::equal(cpu_result.begin(), cpu_result.begin() + common, gpu_result.begin());
      options.scheduling = cky::cuda::Scheduling::kDynamic;
      options.word_bits = 64;
      cky::Status s2 =
          slow ? cky::Status()
               : (*device)->Recognize(tiled.data(), gpu_count, options, &gpu_result, &wide_stats);
      const bool wide_agree = s2.ok() && std::equal(cpu_result.begin(), cpu_result.begin() + common,
                                                    gpu_result.begin());
      options.word_bits = 32;
      options.splits_per_pass = 1;
      cky::Status s3 =
          slow ? cky::Status()
               : (*device)->Recognize(tiled.data(), gpu_count, options, &gpu_result, &v1_stats);
      const bool v1_agree = s3.ok() && std::equal(cpu_result.begin(), cpu_result.begin() + common,
                                                  gpu_result.begin());
      const double dyn_us = dynamic_stats.kernel_ms * 1e3 / gpu_count;
      auto paper = kPaperGpuUs.find({n, p});
      std::printf(" %7lld %6d %9.3f %9.3f %9.3f %9.3f %6s |", static_cast<long long>(gpu_count),
                  dynamic_stats.blocks, static_stats.kernel_ms * 1e3 / gpu_count, dyn_us,
                  wide_stats.kernel_ms * 1e3 / gpu_count, v1_stats.kernel_ms * 1e3 / gpu_count,
                  agree && static_agree && wide_agree && v1_agree ? "yes" : "NO");
      if (paper != kPaperGpuUs.end()) {
        std::printf(" %8.3f %5.1fx\n", paper->second, paper->second / dyn_us);
      } else {
        std::printf(" %8s %6s\n", "-", "-");
      }
      std::fflush(stdout);
    }
  }
}

// Saturated GPU measurements of single configurations: a fixed number of strings (enough to give
// every block of the table budget a string group), dynamic scheduling, 32-bit words, each kernel
// variant (splits per pass) in turn.
void SaturatedRows(const std::vector<int>& nonterminal_counts, const std::vector<int>& rule_counts,
                   int64_t strings_count, double table_memory_gb, const std::vector<int>& splits) {
  constexpr int kLength = 32;
  std::printf("== BPBC, saturated GPU: %lld strings of length %d, dynamic, 32-bit words ==\n",
              static_cast<long long>(strings_count), kLength);
  std::printf("%5s %7s | %8s %8s | %6s %6s %9s %6s | %8s %6s\n", "N", "rules", "gates", "min",
              "splits", "blocks", "dyn us", "agree", "paper us", "x");
  for (int n : nonterminal_counts) {
    for (int p : rule_counts) {
      const cky::CnfGrammar grammar =
          cky::RandomCnfGrammar({.nonterminals = n,
                                 .rules = p,
                                 .terminals = 16,
                                 .seed = static_cast<uint64_t>(n * 1000003 + p)});
      const cky::BpbcCircuit original = cky::CompileCircuit(grammar);
      const cky::BpbcCircuit minimized =
          cky::MinimizeCircuit(original, {.anneal_steps_per_product = 100, .seed = 1});
      const cky::cuda::BpbcProgram program = cky::FlattenCircuit(grammar, minimized);
      const auto pool = cky::RandomStrings(grammar, {.count = 16384,
                                                     .min_length = kLength,
                                                     .max_length = kLength,
                                                     .member_fraction = 0.5,
                                                     .seed = 7});
      auto expected = cky::RecognizeBulkCpu(program, pool, {.word_bits = 64});
      const auto tiled = Tile(pool, strings_count);
      auto device = cky::cuda::BpbcGpu::Create(program);
      if (!device.ok()) {
        std::printf("%s\n", device.status().message().c_str());
        return;
      }
      for (int split : splits) {
        cky::cuda::BpbcGpuOptions options{
            .word_bits = 32,
            .scheduling = cky::cuda::Scheduling::kDynamic,
            .threads_per_block = 32,
            .splits_per_pass = split,
            .table_memory_bytes = static_cast<size_t>(table_memory_gb * (1 << 30))};
        cky::cuda::BpbcGpuStats stats;
        std::vector<uint8_t> got;
        cky::Status status =
            (*device)->Recognize(tiled.data(), tiled.size(), options, &got, &stats);
        if (!status.ok()) {
          std::printf("%s\n", status.message().c_str());
          return;
        }
        const bool agree = std::equal(expected->begin(), expected->end(), got.begin());
        const double us = stats.kernel_ms * 1e3 / strings_count;
        auto paper = kPaperGpuUs.find({n, p});
        std::printf("%5d %7d | %8lld %8lld | %6d %6d %9.3f %6s | %8.3f %5.2fx\n", n, p,
                    static_cast<long long>(original.GateCount()),
                    static_cast<long long>(minimized.GateCount()), split, stats.blocks, us,
                    agree ? "yes" : "NO", paper == kPaperGpuUs.end() ? 0.0 : paper->second,
                    paper == kPaperGpuUs.end() ? 0.0 : paper->second / us);
        std::fflush(stdout);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Membership benchmarks: Kim et al. 2014 mapping x memory table and the 2017 BPBC table"};
  std::string wsj0 = "../shared/grammars/wsj-projected/wsj_0.gr";
  std::string gum = "../shared/treebanks/gum/const";
  int sentences = 200;
  int max_length = 40;
  double time_budget = 150;
  double table_memory_gb = 8;
  int64_t max_strings = int64_t{1} << 22;
  bool skip_kim = false, skip_bpbc = false;
  int64_t saturated_strings = 0;
  double config_seconds = 8;
  std::vector<int> splits = {4, 8};
  std::vector<int> nonterminals = {32, 64, 128, 256, 512};
  std::vector<int> rules = {32, 64, 128, 256, 512, 2048, 8192, 32768, 131072};
  app.add_option("--wsj0", wsj0, "Berkeley grammar prefix for the Kim et al. table")
      ->capture_default_str();
  app.add_option("--gum", gum, "Folder of GUM .ptb files (sentences for the Kim et al. table)")
      ->capture_default_str();
  app.add_option("--sentences", sentences, "Sentences for the Kim et al. table")
      ->capture_default_str();
  app.add_option("--max-sentence-length", max_length, "Longest sentence used")
      ->capture_default_str();
  app.add_option("--nonterminals", nonterminals, "Nonterminal counts of the BPBC table")
      ->capture_default_str();
  app.add_option("--rules", rules,
                 "Binary rule counts of the BPBC table (kept when N <= rules < N^3)")
      ->capture_default_str();
  app.add_option("--time-budget", time_budget, "Seconds for the BPBC table; later rows are skipped")
      ->capture_default_str();
  app.add_option("--table-memory-gb", table_memory_gb,
                 "GPU memory for CKY tables (the paper: 8 GB)")
      ->capture_default_str();
  app.add_option("--max-strings", max_strings,
                 "Most strings per GPU measurement (the paper: 4194304)")
      ->capture_default_str();
  app.add_flag("--skip-kim", skip_kim, "Skip the Kim et al. table");
  app.add_flag("--skip-bpbc", skip_bpbc, "Skip the BPBC table");
  app.add_option("--saturated", saturated_strings,
                 "Instead of the BPBC table: time each --nonterminals x --rules configuration on "
                 "this many strings (dynamic, 32-bit), once per --splits variant")
      ->capture_default_str();
  app.add_option(
         "--config-seconds", config_seconds,
         "Longest single GPU run of the BPBC table (bounds the string count of big circuits)")
      ->capture_default_str();
  app.add_option("--splits", splits, "Kernel variants (splits per pass) for --saturated")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::printf("device: %s\n\n", cky::cuda::DeviceDescription().c_str());
  if (!skip_kim) KimTable(wsj0, gum, sentences, max_length);
  if (saturated_strings > 0) {
    SaturatedRows(nonterminals, rules, saturated_strings, table_memory_gb, splits);
    return 0;
  }
  if (!skip_bpbc) {
    BpbcTable(nonterminals, rules, time_budget, table_memory_gb, max_strings, config_seconds);
  }
  return 0;
}
