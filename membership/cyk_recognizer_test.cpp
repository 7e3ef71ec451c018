#include "membership/cyk_recognizer.h"

#include <gtest/gtest.h>

#include <sstream>

#include "cuda/common/device.h"

namespace cky {
namespace {

CnfGrammar Parentheses() {
  std::istringstream in("start S\nS -> L R\nS -> L X\nX -> S R\nS -> S S\nL -> '('\nR -> ')'\n");
  auto g = ParseCnfGrammar(in, "parentheses");
  EXPECT_TRUE(g.ok());
  return *g;
}

TEST(CykReferenceTest, BalancedParentheses) {
  CnfGrammar g = Parentheses();
  for (const char* member : {"( )", "( ( ) )", "( ) ( )", "( ( ) ( ( ) ) ) ( )"}) {
    EXPECT_TRUE(RecognizeReference(g, g.Tokenize(member))) << member;
  }
  for (const char* non_member : {"", "(", ")", ") (", "( ( )", "( ) )", "( x )"}) {
    EXPECT_FALSE(RecognizeReference(g, g.Tokenize(non_member))) << non_member;
  }
}

// The example of Fujita/Nakano et al.: S -> AB | BA | SS, A -> AB | a, B -> BA | b derives abaab.
TEST(CykReferenceTest, PaperExample) {
  std::istringstream in(
      "start S\nS -> A B\nS -> B A\nS -> S S\nA -> A B\nB -> B A\nA -> 'a'\nB -> 'b'\n");
  auto g = ParseCnfGrammar(in, "example");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(RecognizeReference(*g, g->Tokenize("a b a a b")));
  EXPECT_FALSE(RecognizeReference(*g, g->Tokenize("a")));
  EXPECT_FALSE(RecognizeReference(*g, g->Tokenize("a a")));
  EXPECT_TRUE(RecognizeReference(*g, g->Tokenize("a b")));
}

// Every mapping x memory variant of Kim et al. agrees with the reference.
TEST(CykGpuTest, EveryMappingAgreesWithTheReference) {
  if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device";
  for (uint64_t seed : {1, 2, 3}) {
    CnfGrammar g = RandomCnfGrammar({.nonterminals = 10 + static_cast<int32_t>(seed) * 7,
                                     .rules = 80 * static_cast<int64_t>(seed),
                                     .terminals = 6,
                                     .seed = seed});
    auto strings = RandomStrings(g, {.count = 40, .min_length = 1, .max_length = 24, .seed = seed});
    strings.push_back(strings[0]);
    strings.back().resize(1);
    strings.push_back(strings[1]);
    strings.back().resize(std::min<size_t>(2, strings[1].size()));
    strings.push_back({});
    std::vector<uint8_t> expected;
    for (const auto& s : strings) expected.push_back(RecognizeReference(g, s));
    for (auto mapping : {cuda::RuleMapping::kRule, cuda::RuleMapping::kRvs, cuda::RuleMapping::kLvs,
                         cuda::RuleMapping::kRvsDummy, cuda::RuleMapping::kLvsDummy}) {
      for (auto memory : {cuda::CellMemory::kGlobal, cuda::CellMemory::kShared}) {
        auto got = RecognizeEachOnGpu(g, strings, {.mapping = mapping, .memory = memory});
        ASSERT_TRUE(got.ok()) << got.status().message();
        EXPECT_EQ(*got, expected) << RuleMappingName(mapping) << " " << CellMemoryName(memory)
                                  << " seed " << seed;
      }
    }
  }
}

TEST(CykGpuTest, LongestAllowedStringAndChainRules) {
  if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device";
  std::istringstream in("start S\nS -> A\nA -> B\nB -> 'b'\nS -> S S\nA -> A B\n");
  auto g = ParseCnfGrammar(in, "chains");
  ASSERT_TRUE(g.ok());
  std::vector<std::vector<int32_t>> strings = {
      std::vector<int32_t>(kMaxRecognizeLength, g->TerminalId("b")),
      {g->TerminalId("b")},
      {g->TerminalId("b"), CnfGrammar::kUnknownTerminal}};
  std::vector<uint8_t> expected;
  for (const auto& s : strings) expected.push_back(RecognizeReference(*g, s));
  EXPECT_EQ(expected, (std::vector<uint8_t>{1, 1, 0}));
  auto got = RecognizeEachOnGpu(*g, strings, {});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, expected);
  auto too_long = RecognizeEachOnGpu(
      *g, {std::vector<int32_t>(kMaxRecognizeLength + 1, g->TerminalId("b"))}, {});
  EXPECT_FALSE(too_long.ok());
}

TEST(CykGpuTest, FailsCleanlyWithoutADevice) {
  if (cuda::DeviceAvailable()) GTEST_SKIP() << "a device is present";
  auto got = RecognizeEachOnGpu(Parentheses(), {{1, 2}}, {});
  EXPECT_FALSE(got.ok());
}

}  // namespace
}  // namespace cky
