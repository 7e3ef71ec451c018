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
#include "cuda/common/device.h"
#include "cuda/membership/bpbc_device.h"
#include "cuda/membership/cyk_membership.h"
#include "membership/bpbc.h"
#include "membership/cnf_grammar.h"
#include "membership/cyk_recognizer.h"

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
    std::printf("%-7s", cky::RuleMappingName(mapping));
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

// "8w4s": warps per group and splits per pass of a cooperative launch; "4s" for kernel 1.
std::string ShapeName(const cky::cuda::BpbcGpuStats& stats) {
  if (stats.kernel == cky::cuda::BpbcKernel::kCooperative) {
    return std::to_string(stats.warps_per_group) + "w" + std::to_string(stats.splits_per_pass) +
           "s";
  }
  return "k1 " + std::to_string(stats.splits_per_pass) + "s";
}

struct BpbcConfig {
  cky::CnfGrammar grammar;
  cky::BpbcCircuit original, minimized;
  double minimize_s = 0;
  cky::cuda::BpbcProgram program;
  std::vector<std::vector<int32_t>> pool;  // 16,384 distinct strings of length 32
};

BpbcConfig MakeConfig(int n, int p) {
  constexpr int kLength = 32;
  BpbcConfig c;
  c.grammar = cky::RandomCnfGrammar({.nonterminals = n,
                                     .rules = p,
                                     .terminals = 16,
                                     .seed = static_cast<uint64_t>(n * 1000003 + p)});
  c.original = cky::CompileCircuit(c.grammar);
  const auto start = Clock::now();
  c.minimized = cky::MinimizeCircuit(c.original, {.anneal_steps_per_product = 100, .seed = 1});
  c.minimize_s = Seconds(start);
  c.program = cky::FlattenCircuit(c.grammar, c.minimized);
  c.pool = cky::RandomStrings(c.grammar, {.count = 16384,
                                          .min_length = kLength,
                                          .max_length = kLength,
                                          .member_fraction = 0.5,
                                          .seed = 7});
  return c;
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
      "CPU: BPBC, 64-bit words, %d threads, dynamic. GPU: CKY tables limited to %.0f GB as in the "
      "paper; us = microseconds per string (kernel time). dyn: the default path of `cky recognize "
      "--bulk` (kernel chosen automatically, shape = its launch shape: k1 = kernel 1 with splits "
      "per pass, else kernel 2's warps per group x splits per pass), dynamic scheduling, 32-bit "
      "words; static: the same with static scheduling; dyn64: with 64-bit words. k1: kernel 1 "
      "(thread per word, the paper's mapping, 32 threads per block, 4 splits per pass) forced; k2: "
      "kernel 2 (cooperative) forced. paper = TITAN X Table 3 GPU; x = paper / dyn. '-' = not "
      "run (the default run took over 0.5 s).\n",
      cores, table_memory_gb);
  std::printf(
      "%5s %7s | %8s %8s %5s %6s | %8s %9s | %8s %6s %6s %9s %8s %8s %9s %9s %6s | %8s %6s\n", "N",
      "rules", "gates", "min", "ratio", "min s", "cpu us", "cpu strs", "gpu str", "blocks", "shape",
      "dyn us", "k1 us", "k2 us", "static us", "dyn64 us", "agree", "paper us", "x");
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
      const BpbcConfig c = MakeConfig(n, p);

      // CPU: double the count until a run takes 0.15 s.
      double cpu_us = 0;
      int64_t cpu_count = 64LL * cores;
      std::vector<uint8_t> cpu_result;
      while (true) {
        const auto strings = Tile(c.pool, cpu_count);
        const auto start = Clock::now();
        auto result = cky::RecognizeBulkCpu(c.program, strings, {.word_bits = 64});
        const double s = Seconds(start);
        cpu_us = s * 1e6 / cpu_count;
        cpu_result = std::move(*result);
        if (s > 0.15 || cpu_count >= (1 << 20)) break;
        cpu_count *= s < 0.03 ? 8 : 2;
      }
      std::printf("%5d %7d | %8lld %8lld %5.2f %6.2f | %8.3f %9lld |", n, p,
                  static_cast<long long>(c.original.GateCount()),
                  static_cast<long long>(c.minimized.GateCount()),
                  static_cast<double>(c.minimized.GateCount()) / c.original.GateCount(),
                  c.minimize_s, cpu_us, static_cast<long long>(cpu_count));
      std::fflush(stdout);
      if (!gpu) {
        std::printf(" no GPU\n");
        continue;
      }
      auto device = cky::cuda::BpbcGpu::Create(c.program);
      if (!device.ok()) {
        std::printf(" %s\n", device.status().message().c_str());
        continue;
      }
      cky::cuda::BpbcGpuOptions options{
          .word_bits = 32,
          .scheduling = cky::cuda::Scheduling::kDynamic,
          .table_memory_bytes = static_cast<size_t>(table_memory_gb * (1 << 30))};
      // GPU: start with two string groups for every block the table memory and the SMs allow
      // (the GPU is full), then grow the count until a run takes 0.3 s, unless the next run would
      // take longer than --config-seconds.
      cky::cuda::BpbcGpuStats dynamic_stats;
      std::vector<uint8_t> gpu_result;
      std::vector<std::vector<int32_t>> tiled = Tile(c.pool, 1024);
      auto tile_to = [&](int64_t count) {  // the pool repeated, as far as the next run needs
        for (int64_t k = static_cast<int64_t>(tiled.size()); k < count; ++k) {
          tiled.push_back(c.pool[k % c.pool.size()]);
        }
      };
      bool failed = false;
      if (!(*device)->Recognize(tiled.data(), 1024, options, &gpu_result, &dynamic_stats).ok()) {
        std::printf(" probe run failed\n");
        continue;
      }
      int64_t gpu_count = std::min<int64_t>(max_strings, dynamic_stats.block_limit * 2048LL);
      while (true) {
        tile_to(gpu_count);
        cky::Status status =
            (*device)->Recognize(tiled.data(), gpu_count, options, &gpu_result, &dynamic_stats);
        if (!status.ok()) {
          std::printf(" %s\n", status.message().c_str());
          failed = true;
          break;
        }
        if (dynamic_stats.kernel_ms > 300 || gpu_count >= max_strings) break;
        const int64_t next =
            std::min(max_strings, gpu_count * (dynamic_stats.kernel_ms < 40 ? 8 : 4));
        if (dynamic_stats.kernel_ms * next / gpu_count > config_seconds * 1e3) break;
        gpu_count = next;
      }
      if (failed) continue;
      // Agreement: every evaluator on the shared prefix of the tiled pool.
      const size_t common = std::min(cpu_result.size(), gpu_result.size());
      bool agree = std::equal(cpu_result.begin(), cpu_result.begin() + common, gpu_result.begin());
      // The other variants, where the default one took at most 0.5 s (each takes up to ~5x).
      const bool slow = dynamic_stats.kernel_ms > 500;
      auto time_variant = [&](cky::cuda::BpbcGpuOptions variant) -> double {
        if (slow) return -1;
        cky::cuda::BpbcGpuStats stats;
        cky::Status status =
            (*device)->Recognize(tiled.data(), gpu_count, variant, &gpu_result, &stats);
        if (!status.ok()) return -1;  // e.g. kernel 2 where the cells do not fit: "-"
        agree = agree &&
                std::equal(cpu_result.begin(), cpu_result.begin() + common, gpu_result.begin());
        return stats.kernel_ms * 1e3 / gpu_count;
      };
      cky::cuda::BpbcGpuOptions variant = options;
      variant.kernel = cky::cuda::BpbcKernel::kThreadPerWord;
      const double k1_us = time_variant(variant);
      variant.kernel = cky::cuda::BpbcKernel::kCooperative;
      const double k2_us = time_variant(variant);
      variant = options;
      variant.scheduling = cky::cuda::Scheduling::kStatic;
      const double static_us = time_variant(variant);
      variant = options;
      variant.word_bits = 64;
      const double wide_us = time_variant(variant);
      const double dyn_us = dynamic_stats.kernel_ms * 1e3 / gpu_count;
      auto cell = [](double us) {
        char buffer[32];
        if (us < 0) return std::string("-");
        std::snprintf(buffer, sizeof buffer, "%.3f", us);
        return std::string(buffer);
      };
      auto paper = kPaperGpuUs.find({n, p});
      std::printf(" %8lld %6d %6s %9.3f %8s %8s %9s %9s %6s |", static_cast<long long>(gpu_count),
                  dynamic_stats.blocks, ShapeName(dynamic_stats).c_str(), dyn_us,
                  cell(k1_us).c_str(), cell(k2_us).c_str(), cell(static_us).c_str(),
                  cell(wide_us).c_str(), agree ? "yes" : "NO");
      if (paper != kPaperGpuUs.end()) {
        std::printf(" %8.3f %5.1fx\n", paper->second, paper->second / dyn_us);
      } else {
        std::printf(" %8s %6s\n", "-", "-");
      }
      std::fflush(stdout);
    }
  }
}

// Saturated GPU measurements of single configurations: a fixed number of strings, dynamic
// scheduling, 32-bit words; kernel 1 once per --splits value, kernel 2 once per --warps value
// (0: the automatic shape).
void SaturatedRows(const std::vector<int>& nonterminal_counts, const std::vector<int>& rule_counts,
                   int64_t strings_count, double table_memory_gb, const std::vector<int>& kernels,
                   const std::vector<int>& splits, const std::vector<int>& warps,
                   const std::vector<int>& coop_splits) {
  constexpr int kLength = 32;
  std::printf("== BPBC, saturated GPU: %lld strings of length %d, dynamic, 32-bit words ==\n",
              static_cast<long long>(strings_count), kLength);
  std::printf("%5s %7s | %8s %8s | %7s %6s %9s %6s | %8s %6s\n", "N", "rules", "gates", "min",
              "shape", "blocks", "dyn us", "agree", "paper us", "x");
  for (int n : nonterminal_counts) {
    for (int p : rule_counts) {
      const BpbcConfig c = MakeConfig(n, p);
      auto expected = cky::RecognizeBulkCpu(c.program, c.pool, {.word_bits = 64});
      const auto tiled = Tile(c.pool, strings_count);
      auto device = cky::cuda::BpbcGpu::Create(c.program);
      if (!device.ok()) {
        std::printf("%s\n", device.status().message().c_str());
        return;
      }
      std::vector<cky::cuda::BpbcGpuOptions> variants;
      const cky::cuda::BpbcGpuOptions base{
          .word_bits = 32,
          .scheduling = cky::cuda::Scheduling::kDynamic,
          .table_memory_bytes = static_cast<size_t>(table_memory_gb * (1 << 30))};
      for (int kernel : kernels) {
        if (kernel == 1) {
          for (int split : splits) {
            cky::cuda::BpbcGpuOptions options = base;
            options.kernel = cky::cuda::BpbcKernel::kThreadPerWord;
            options.splits_per_pass = split;
            variants.push_back(options);
          }
          continue;
        }
        for (int warp_count : warps) {
          for (int split : coop_splits) {
            cky::cuda::BpbcGpuOptions options = base;
            options.kernel = cky::cuda::BpbcKernel::kCooperative;
            options.warps_per_group = warp_count;
            options.splits_per_pass = split;
            variants.push_back(options);
          }
        }
      }
      for (const auto& options : variants) {
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
        std::printf("%5d %7d | %8lld %8lld | %7s %6d %9.3f %6s | %8.3f %5.2fx\n", n, p,
                    static_cast<long long>(c.original.GateCount()),
                    static_cast<long long>(c.minimized.GateCount()), ShapeName(stats).c_str(),
                    stats.blocks, us, agree ? "yes" : "NO",
                    paper == kPaperGpuUs.end() ? 0.0 : paper->second,
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
  std::vector<int> kernels = {1, 2};
  std::vector<int> warps = {0};
  std::vector<int> coop_splits = {0};
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
                 "this many strings (dynamic, 32-bit), once per --kernels x --splits/--warps "
                 "variant")
      ->capture_default_str();
  app.add_option(
         "--config-seconds", config_seconds,
         "Longest single GPU run of the BPBC table (bounds the string count of big circuits)")
      ->capture_default_str();
  app.add_option("--kernels", kernels,
                 "--saturated: kernels to time (1: thread per word, 2: cooperative)")
      ->capture_default_str();
  app.add_option("--splits", splits, "--saturated: kernel 1's splits per pass to time")
      ->capture_default_str();
  app.add_option("--warps", warps,
                 "--saturated: kernel 2's warps per group to time (0: chosen automatically)")
      ->capture_default_str();
  app.add_option("--coop-splits", coop_splits,
                 "--saturated: kernel 2's splits per pass to time (0: chosen automatically)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::printf("device: %s\n\n", cky::cuda::DeviceDescription().c_str());
  if (!skip_kim) KimTable(wsj0, gum, sentences, max_length);
  if (saturated_strings > 0) {
    SaturatedRows(nonterminals, rules, saturated_strings, table_memory_gb, kernels, splits, warps,
                  coop_splits);
    return 0;
  }
  if (!skip_bpbc) {
    BpbcTable(nonterminals, rules, time_budget, table_memory_gb, max_strings, config_seconds);
  }
  return 0;
}
