#include "membership/bpbc.h"

#include <gtest/gtest.h>

#include <sstream>

#include "common/test_variants.h"
#include "cuda/common/device.h"
#include "membership/cyk_recognizer.h"

namespace cky {
namespace {

// The 2017 paper's Sect. 4 example: S -> SS | SB | AA | AB | BS | BB.
CnfGrammar PaperExample() {
  std::istringstream in(
      "start S\nS -> S S\nS -> S B\nS -> A A\nS -> A B\nS -> B S\nS -> B B\n"
      "A -> 'a'\nB -> 'b'\n");
  auto g = ParseCnfGrammar(in, "example");
  EXPECT_TRUE(g.ok());
  return *g;
}

TEST(BpbcCircuitTest, CompiledCircuitHasTwoGatesPerRule) {
  CnfGrammar g = PaperExample();
  BpbcCircuit circuit = CompileCircuit(g);
  EXPECT_EQ(circuit.GateCount(), 12);
  EXPECT_EQ(circuit.CoveredRules(), g.binary_rules);
}

TEST(BpbcCircuitTest, FactoringReproducesThePaperExample) {
  CnfGrammar g = PaperExample();
  BpbcCircuit factored = MinimizeCircuit(CompileCircuit(g), {.anneal = false});
  // ((S|A|B) & B) | ((S|B) & S) | (A & A): 9 gates in our count (the paper counts 8, without the
  // first OR into W).
  EXPECT_EQ(factored.GateCount(), 9);
  EXPECT_EQ(factored.products.size(), 3u);
  EXPECT_EQ(factored.CoveredRules(), g.binary_rules);
  BpbcCircuit annealed = MinimizeCircuit(CompileCircuit(g));
  EXPECT_LE(annealed.GateCount(), 9);
  EXPECT_EQ(annealed.CoveredRules(), g.binary_rules);
}

TEST(BpbcCircuitTest, MinimisationKeepsTheRulesAndSavesGates) {
  for (auto [n, p] : {std::pair{8, 200}, {32, 1024}, {64, 4096}}) {
    CnfGrammar g = RandomCnfGrammar({.nonterminals = n, .rules = p, .terminals = 4, .seed = 7});
    BpbcCircuit original = CompileCircuit(g);
    BpbcCircuit factored = MinimizeCircuit(original, {.anneal = false});
    BpbcCircuit annealed = MinimizeCircuit(original, {.seed = 3});
    EXPECT_EQ(factored.CoveredRules(), g.binary_rules);
    EXPECT_EQ(annealed.CoveredRules(), g.binary_rules);
    EXPECT_LT(factored.GateCount(), original.GateCount()) << n << " " << p;
    EXPECT_LE(annealed.GateCount(), factored.GateCount()) << n << " " << p;
  }
}

struct Case {
  CnfGrammar grammar;
  std::vector<std::vector<int32_t>> strings;
  std::vector<uint8_t> expected;
};

// Seeded random grammars with strings of mixed lengths (1, 2, up to 40), plus a few strings of the
// longest allowed length, and their reference answers.
std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (uint64_t seed : {1, 2, 3}) {
    Case c;
    c.grammar = RandomCnfGrammar({.nonterminals = 6 + 10 * static_cast<int32_t>(seed),
                                  .rules = 60 * static_cast<int64_t>(seed * seed),
                                  .terminals = 5,
                                  .seed = seed});
    c.strings = RandomStrings(
        c.grammar,
        {.count = 300, .min_length = 1, .max_length = 40, .member_fraction = 0.5, .seed = seed});
    // The reference takes a while at the longest length: only for the smallest grammar.
    auto longest = RandomStrings(c.grammar, {.count = seed == 1 ? 1 : 0,
                                             .min_length = cuda::BpbcGpu::kMaxLength,
                                             .max_length = cuda::BpbcGpu::kMaxLength,
                                             .member_fraction = 0.5,
                                             .seed = seed});
    c.strings.insert(c.strings.end(), longest.begin(), longest.end());
    c.strings.push_back({});
    for (const auto& s : c.strings) c.expected.push_back(RecognizeReference(c.grammar, s));
    cases.push_back(std::move(c));
  }
  // Chain rules and unknown terminals.
  std::istringstream in("start S\nS -> A\nA -> B\nB -> 'b'\nS -> S S\nA -> A B\n");
  Case chains{*ParseCnfGrammar(in, "chains"), {}, {}};
  chains.strings = {{1}, {1, 1}, {1, 0}, std::vector<int32_t>(cuda::BpbcGpu::kMaxLength, 1), {}};
  for (const auto& s : chains.strings)
    chains.expected.push_back(RecognizeReference(chains.grammar, s));
  cases.push_back(std::move(chains));
  return cases;
}

TEST(BpbcCpuTest, AgreesWithTheReference) {
  for (const Case& c : Cases()) {
    for (bool minimize : {false, true}) {
      BpbcCircuit circuit = CompileCircuit(c.grammar);
      if (minimize) circuit = MinimizeCircuit(circuit);
      cuda::BpbcProgram program = FlattenCircuit(c.grammar, circuit);
      for (int bits : {32, 64}) {
        for (bool dynamic : {false, true}) {
          auto got = RecognizeBulkCpu(
              program, c.strings, {.word_bits = bits, .threads = 2, .dynamic_scheduling = dynamic});
          ASSERT_TRUE(got.ok()) << got.status().message();
          EXPECT_EQ(*got, c.expected)
              << "bits " << bits << " dynamic " << dynamic << " minimize " << minimize;
        }
      }
    }
  }
}

TEST(BpbcCpuTest, RejectsTooLongStrings) {
  CnfGrammar g = PaperExample();
  auto program = FlattenCircuit(g, CompileCircuit(g));
  auto got = RecognizeBulkCpu(program, {std::vector<int32_t>(cuda::BpbcGpu::kMaxLength + 1, 1)});
  EXPECT_FALSE(got.ok());
}

TEST(BpbcGpuTest, AgreesWithTheReference) {
  if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device";
  for (Case c : Cases()) {
    // This process's share of the strings, and only the short ones if asked: under racecheck a
    // cooperative-kernel variant takes longer than one device command may run
    // (scripts/gpu-sanitize).
    KeepTestShard(&c.strings, &c.expected);
    KeepShortTestInputs(&c.strings, &c.expected);
    cuda::BpbcProgram program =
        FlattenCircuit(c.grammar, MinimizeCircuit(CompileCircuit(c.grammar)));
    // Small batches and few blocks, so that batching and block reuse are exercised; each kernel
    // and each of its variants (splits per pass, warps per group) at least once.
    using cuda::BpbcKernel;
    const cuda::BpbcGpuOptions variants[] = {{.word_bits = 32,
                                              .scheduling = cuda::Scheduling::kStatic,
                                              .kernel = BpbcKernel::kThreadPerWord,
                                              .threads_per_block = 32,
                                              .splits_per_pass = 4,
                                              .max_blocks = 3,
                                              .batch_strings = 2048},
                                             {.word_bits = 32,
                                              .scheduling = cuda::Scheduling::kDynamic,
                                              .kernel = BpbcKernel::kThreadPerWord,
                                              .threads_per_block = 64,
                                              .splits_per_pass = 1,
                                              .max_blocks = 3,
                                              .batch_strings = 2048},
                                             {.word_bits = 64,
                                              .scheduling = cuda::Scheduling::kDynamic,
                                              .kernel = BpbcKernel::kThreadPerWord,
                                              .threads_per_block = 32,
                                              .splits_per_pass = 8,
                                              .max_blocks = 2,
                                              .batch_strings = 4096},
                                             {.word_bits = 64,
                                              .scheduling = cuda::Scheduling::kStatic,
                                              .kernel = BpbcKernel::kThreadPerWord,
                                              .threads_per_block = 64,
                                              .splits_per_pass = 4,
                                              .max_blocks = 0,
                                              .batch_strings = 1 << 20},
                                             {.word_bits = 32,
                                              .scheduling = cuda::Scheduling::kStatic,
                                              .kernel = BpbcKernel::kCooperative,
                                              .warps_per_group = 3,
                                              .splits_per_pass = 4,
                                              .max_blocks = 3,
                                              .batch_strings = 2048},
                                             {.word_bits = 64,
                                              .scheduling = cuda::Scheduling::kDynamic,
                                              .kernel = BpbcKernel::kCooperative,
                                              .warps_per_group = 5,
                                              .splits_per_pass = 2,
                                              .max_blocks = 2,
                                              .batch_strings = 4096},
                                             {.word_bits = 32,
                                              .scheduling = cuda::Scheduling::kDynamic,
                                              .kernel = BpbcKernel::kCooperative,
                                              .warps_per_group = 32,  // more warps than products
                                              .splits_per_pass = 1,
                                              .max_blocks = 0,
                                              .batch_strings = 1 << 20},
                                             {.word_bits = 32,
                                              .scheduling = cuda::Scheduling::kDynamic,
                                              .kernel = BpbcKernel::kCooperative,
                                              .warps_per_group = 0,
                                              .splits_per_pass = 8,
                                              .max_blocks = 0,
                                              .batch_strings = 1 << 20},
                                             {.word_bits = 32,
                                              .scheduling = cuda::Scheduling::kDynamic,
                                              .kernel = BpbcKernel::kAuto,
                                              .max_blocks = 3,
                                              .batch_strings = 2048}};
    // A group of the longest strings is one warp's long serial job: only two of the configurations
    // (one per word size) take them, the others the strings of up to 40 terminals.
    std::vector<std::vector<int32_t>> short_strings;
    std::vector<uint8_t> short_expected;
    for (size_t s = 0; s < c.strings.size(); ++s) {
      if (c.strings[s].size() > 40) continue;
      short_strings.push_back(c.strings[s]);
      short_expected.push_back(c.expected[s]);
    }
    for (size_t v = 0; v < std::size(variants); ++v) {
      if (!TestVariantSelected("v" + std::to_string(v))) continue;
      const auto& options = variants[v];
      const bool longest = v == 0 || v == 2 || v == 4 || v == 5;
      auto got = RecognizeBulkGpu(program, longest ? c.strings : short_strings, options);
      ASSERT_TRUE(got.ok()) << got.status().message();
      EXPECT_EQ(*got, longest ? c.expected : short_expected)
          << "variant " << v << ": kernel " << static_cast<int>(options.kernel) << " bits "
          << options.word_bits << " threads " << options.threads_per_block << " warps "
          << options.warps_per_group << " splits " << options.splits_per_pass;
    }
  }
}

// The cooperative kernel stages operand cells in shared memory: with too many nonterminals it
// refuses with a message, and kAuto falls back to the thread-per-word kernel.
TEST(BpbcGpuTest, CooperativeKernelNeedsTheCellsToFitInSharedMemory) {
  if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device";
  CnfGrammar g = RandomCnfGrammar({.nonterminals = 2000, .rules = 6000, .terminals = 8, .seed = 5});
  auto strings = RandomStrings(
      g, {.count = 40, .min_length = 1, .max_length = 6, .member_fraction = 0.5, .seed = 5});
  std::vector<uint8_t> expected;
  for (const auto& s : strings) expected.push_back(RecognizeReference(g, s));
  auto gpu = cuda::BpbcGpu::Create(FlattenCircuit(g, CompileCircuit(g)));
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  std::vector<uint8_t> got;
  cuda::BpbcGpuStats stats;
  Status refused =
      (*gpu)->Recognize(strings, {.kernel = cuda::BpbcKernel::kCooperative}, &got, &stats);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("shared memory"), std::string::npos) << refused.message();
  ASSERT_TRUE((*gpu)->Recognize(strings, {}, &got, &stats).ok());
  EXPECT_EQ(stats.kernel, cuda::BpbcKernel::kThreadPerWord);
  EXPECT_EQ(got, expected);
}

// A parent with 520 rules S -> X0 Xj: factoring makes them one product of 521 operands, longer
// than the 512 code entries each warp of the cooperative kernel copies to shared memory, so that
// kernel reads this product's operands from global memory.
TEST(BpbcGpuTest, ProductLongerThanAWarpsCodeCopy) {
  std::ostringstream text;
  text << "start S\nY -> 'c'\n";
  for (int j = 0; j < 520; ++j) {
    text << "X" << j << " -> '" << (j % 2 ? "b" : "a") << "'\nS -> X0 X" << j << "\n";
  }
  std::istringstream in(text.str());
  auto grammar = ParseCnfGrammar(in, "row");
  ASSERT_TRUE(grammar.ok()) << grammar.status().message();
  const BpbcCircuit circuit = MinimizeCircuit(CompileCircuit(*grammar));
  size_t longest = 0;
  for (const auto& product : circuit.products) {
    longest = std::max(longest, product.left.size() + product.right.size());
  }
  ASSERT_GT(longest, 512u);
  std::vector<std::vector<int32_t>> strings;
  std::vector<uint8_t> expected;
  for (const char* s : {"a b", "a a", "b a", "a c", "c", "a a b", "b b", "a", "c a", ""}) {
    strings.push_back(grammar->Tokenize(s));
    expected.push_back(RecognizeReference(*grammar, strings.back()));
  }
  EXPECT_EQ(expected, (std::vector<uint8_t>{1, 1, 0, 0, 0, 0, 0, 0, 0, 0}));
  const cuda::BpbcProgram program = FlattenCircuit(*grammar, circuit);
  auto cpu = RecognizeBulkCpu(program, strings);
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  EXPECT_EQ(*cpu, expected);
  if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device";
  // 522 symbols: the cells fit in shared memory with 32-bit words only.
  auto gpu = RecognizeBulkGpu(program, strings,
                              {.word_bits = 32, .kernel = cuda::BpbcKernel::kCooperative});
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  EXPECT_EQ(*gpu, expected);
}

TEST(BpbcGpuTest, FailsCleanlyWithoutADevice) {
  if (cuda::DeviceAvailable()) GTEST_SKIP() << "a device is present";
  CnfGrammar g = PaperExample();
  auto got = RecognizeBulkGpu(FlattenCircuit(g, CompileCircuit(g)), {{1, 2}});
  EXPECT_FALSE(got.ok());
}

}  // namespace
}  // namespace cky
