#include "membership/cnf_grammar.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "membership/cyk_recognizer.h"

namespace cky {
namespace {

constexpr char kParentheses[] = R"(# balanced parentheses
start S
S -> L R      # ()
S -> L X
X -> S R
S -> S S
L -> '('
R -> ')'
)";

StatusOr<CnfGrammar> Parse(const std::string& text) {
  std::istringstream in(text);
  return ParseCnfGrammar(in, "test.cnf");
}

TEST(CnfGrammarTest, ParsesTheWorkedExample) {
  auto grammar = Parse(kParentheses);
  ASSERT_TRUE(grammar.ok()) << grammar.status().message();
  EXPECT_EQ(grammar->num_nonterminals(), 4);
  EXPECT_EQ(grammar->nonterminal_names[grammar->start], "S");
  EXPECT_EQ(grammar->binary_rules.size(), 4u);
  EXPECT_EQ(grammar->num_terminals(), 3);  // <unk>, (, )
  EXPECT_EQ(grammar->Tokenize("( )"), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(grammar->TerminalId("x"), CnfGrammar::kUnknownTerminal);
  EXPECT_TRUE(grammar->terminal_parents[CnfGrammar::kUnknownTerminal].empty());
}

TEST(CnfGrammarTest, ErrorsNameFileAndLine) {
  auto missing_arrow = Parse("start S\nS -> A B\nS A B\n");
  ASSERT_FALSE(missing_arrow.ok());
  EXPECT_NE(missing_arrow.status().message().find("test.cnf:3:"), std::string::npos)
      << missing_arrow.status().message();
  auto too_long = Parse("start S\nS -> A B C\n");
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("test.cnf:2:"), std::string::npos);
  auto no_start = Parse("S -> A B\n");
  ASSERT_FALSE(no_start.ok());
  EXPECT_NE(no_start.status().message().find("start"), std::string::npos);
  auto unknown_start = Parse("start T\nS -> A B\n");
  ASSERT_FALSE(unknown_start.ok());
  EXPECT_NE(unknown_start.status().message().find("test.cnf:1:"), std::string::npos);
  auto two_starts = Parse("start S\nstart S\nS -> A B\n");
  ASSERT_FALSE(two_starts.ok());
  EXPECT_NE(two_starts.status().message().find("test.cnf:2:"), std::string::npos);
  auto bad_terminal = Parse("start S\nS -> 'a\n");
  ASSERT_FALSE(bad_terminal.ok());
  EXPECT_NE(bad_terminal.status().message().find("test.cnf:2:"), std::string::npos);
}

TEST(CnfGrammarTest, ChainRulesAreClosedTransitively) {
  auto grammar = Parse("start S\nS -> A\nA -> B\nB -> 'b'\nS -> S S\n");
  ASSERT_TRUE(grammar.ok()) << grammar.status().message();
  std::set<std::pair<std::string, std::string>> closure;
  for (const auto& u : grammar->unary_closure) {
    closure.insert({grammar->nonterminal_names[u.parent], grammar->nonterminal_names[u.child]});
  }
  EXPECT_EQ(closure,
            (std::set<std::pair<std::string, std::string>>{{"S", "A"}, {"S", "B"}, {"A", "B"}}));
  EXPECT_TRUE(RecognizeReference(*grammar, grammar->Tokenize("b")));
  EXPECT_TRUE(RecognizeReference(*grammar, grammar->Tokenize("b b b")));
}

TEST(CnfGrammarTest, WriteThenParseGivesTheSameGrammar) {
  CnfGrammar grammar =
      RandomCnfGrammar({.nonterminals = 7, .rules = 60, .terminals = 5, .seed = 3});
  std::ostringstream out;
  WriteCnfGrammar(grammar, out);
  auto again = Parse(out.str());
  ASSERT_TRUE(again.ok()) << again.status().message();
  // Names map to the same rules (ids may differ: the reader numbers names by first appearance).
  auto named_rules = [](const CnfGrammar& g) {
    std::set<std::tuple<std::string, std::string, std::string>> rules;
    for (const auto& r : g.binary_rules) {
      rules.insert({g.nonterminal_names[r.parent], g.nonterminal_names[r.left],
                    g.nonterminal_names[r.right]});
    }
    for (int32_t t = 1; t < g.num_terminals(); ++t) {
      for (int32_t a : g.terminal_parents[t]) {
        rules.insert({g.nonterminal_names[a], "'", g.terminal_names[t]});
      }
    }
    return rules;
  };
  EXPECT_EQ(named_rules(grammar), named_rules(*again));
  EXPECT_EQ(again->nonterminal_names[again->start], grammar.nonterminal_names[grammar.start]);
}

TEST(CnfGrammarTest, RandomGrammarHasDistinctRulesAsAsked) {
  for (int64_t rules : {32, 500, 4096}) {
    CnfGrammar g =
        RandomCnfGrammar({.nonterminals = 16, .rules = rules, .terminals = 8, .seed = 9});
    EXPECT_EQ(static_cast<int64_t>(g.binary_rules.size()), rules);  // Finish deduplicates
    EXPECT_EQ(g.num_nonterminals(), 16);
    EXPECT_EQ(g.num_terminals(), 9);
    for (int32_t t = 1; t < g.num_terminals(); ++t) EXPECT_FALSE(g.terminal_parents[t].empty());
  }
  CnfGrammar capped = RandomCnfGrammar({.nonterminals = 4, .rules = 1000, .terminals = 2});
  EXPECT_EQ(capped.binary_rules.size(), 64u);
}

TEST(CnfGrammarTest, RandomStringsMixMembersAndNonMembers) {
  CnfGrammar g = RandomCnfGrammar({.nonterminals = 12, .rules = 40, .terminals = 6, .seed = 5});
  auto strings = RandomStrings(
      g, {.count = 300, .min_length = 1, .max_length = 12, .member_fraction = 0.5, .seed = 2});
  ASSERT_EQ(strings.size(), 300u);
  int members = 0;
  for (const auto& s : strings) {
    ASSERT_GE(s.size(), 1u);
    ASSERT_LE(s.size(), 12u);
    for (int32_t t : s) ASSERT_GT(t, 0);
    members += RecognizeReference(g, s);
  }
  EXPECT_GT(members, 30);
  EXPECT_LT(members, 300);
}

// The sampler's strings are members whenever the start symbol derives some string of that length.
TEST(CnfGrammarTest, SampledDerivationsAreMembers) {
  CnfGrammar g = RandomCnfGrammar({.nonterminals = 8, .rules = 30, .terminals = 4, .seed = 11});
  auto strings = RandomStrings(
      g, {.count = 100, .min_length = 1, .max_length = 10, .member_fraction = 1.0, .seed = 4});
  int members = 0;
  for (const auto& s : strings) members += RecognizeReference(g, s);
  EXPECT_GT(members, 50);
}

const char kWsj0[] = "../shared/grammars/wsj-projected/wsj_0.gr";

TEST(CnfGrammarTest, ProjectsTheBerkeleyWsj0Grammar) {
  if (!std::filesystem::exists(std::string(kWsj0) + ".binary")) GTEST_SKIP() << "no ../shared";
  auto model = LoadBerkeleyModel(kWsj0);
  ASSERT_TRUE(model.ok()) << model.status().message();
  CnfGrammar g = ProjectBerkeleyModel(*model);
  EXPECT_EQ(g.num_nonterminals(), model->grammar.num_symbols());
  EXPECT_EQ(g.nonterminal_names[g.start], "ROOT");
  EXPECT_GT(g.binary_rules.size(), 1000u);
  EXPECT_FALSE(g.unary_closure.empty());
  EXPECT_FALSE(g.terminal_parents[CnfGrammar::kUnknownTerminal].empty());
  const int32_t the = g.TerminalId("the");
  ASSERT_NE(the, CnfGrammar::kUnknownTerminal);
  const int32_t dt = g.FindNonterminal("DT");
  ASSERT_GE(dt, 0);
  EXPECT_TRUE(
      std::binary_search(g.terminal_parents[the].begin(), g.terminal_parents[the].end(), dt));
  EXPECT_TRUE(RecognizeReference(g, g.Tokenize("The dog barked .")));
  EXPECT_TRUE(RecognizeReference(g, g.Tokenize("Flibbertigibbet zorbles the snark .")));
  EXPECT_FALSE(RecognizeReference(g, g.Tokenize("")));
}

}  // namespace
}  // namespace cky
