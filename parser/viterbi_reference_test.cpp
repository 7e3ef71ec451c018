#include "parser/viterbi_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "parser/backend_test_support.h"
#include "parser/cpu_backend.h"
#include "parser/tree_extraction.h"
#include "parser/tree_format.h"
#include "parser/viterbi_cpu.h"

namespace cky {
namespace {

// The reference's fixtures: a grammar with its lexicon, and a parser for lexical scores.
struct Fixture {
  TestGrammar grammar;
  Parser parser;
  explicit Fixture(const RandomGrammarOptions& options)
      : grammar(MakeRandomTestGrammar(options)),
        parser(grammar.grammar(), grammar.lexicon, MakeReferenceBackend(grammar.grammar())) {}
  const Grammar& g() const { return grammar.grammar(); }
};

TEST(ReferenceViterbiTest, EqualsBruteForceEnumerationOnTinyGrammars) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Fixture f(TinyShape(seed));
    const Grammar& g = f.g();
    for (const auto& words : MakeRandomSentences(f.grammar.model, 6, 1, 4, seed * 7)) {
      LexicalScores lex = f.parser.ScoreWords(words);
      Chart chart;
      ReferenceViterbiInside(g, lex, &chart);
      const int32_t n = lex.length;
      const auto all = EnumerateViterbiDerivations(g, lex, Grammar::kRootState, 0, n);
      const double chart_score = chart.score(0, n, Grammar::kRootState);
      if (all.empty()) {
        EXPECT_EQ(chart_score, kNegInf);
        continue;
      }
      double best = kNegInf;
      for (const ViterbiDerivation& d : all) best = std::max(best, d.score);
      EXPECT_NEAR(chart_score, best, 1e-9)
          << "seed " << seed << ", " << n << " words, " << all.size() << " trees";
    }
  }
}

TEST(ReferenceViterbiTest, ExtractionWithoutBackpointersMatchesBackpointers) {
  Fixture f({.phrasal_symbols = 5, .tags = 4, .substates = 3, .seed = 11});
  const Grammar& g = f.g();
  int parsed = 0;
  for (const auto& words : MakeRandomSentences(f.grammar.model, 20, 1, 12, 5)) {
    LexicalScores lex = f.parser.ScoreWords(words);
    Chart chart;
    Backpointers bp;
    ReferenceViterbiInside(g, lex, &chart, &bp);
    auto top_down = ExtractViterbiTree(g, chart, words);
    auto from_bp = ExtractFromBackpointers(g, chart, bp, words);
    ASSERT_EQ(top_down.ok(), from_bp.ok());
    if (!top_down.ok()) continue;
    ++parsed;
    EXPECT_EQ(*top_down, *from_bp);
    // The extracted tree's own score is the chart's root score.
    auto score = ScoreAnnotatedTree(g, f.grammar.lexicon, *top_down);
    ASSERT_TRUE(score.ok()) << score.status().message();
    EXPECT_NEAR(*score, chart.score(0, lex.length, Grammar::kRootState), 1e-9);
  }
  EXPECT_GT(parsed, 10);
}

// A unary closure that is not transitive (U(A,B) + U(B,C) > U(A,C), here with A -> C absent; as
// in en_sm6s's text export): a child's own unary lifts its chart score above every match at its
// parent, whose score the inside pass built on the child before its unary layer. Here ROOT -> X ->
// Y with no ROOT -> Y: X's chart score comes from Y (0.5 x 0.9 > 0.1), ROOT's from X's binary
// rule. A 27-word sentence with en_sm6s got no tree from any backend before.
TEST(ReferenceViterbiTest, ExtractionFollowsTheInsidePassWhenUnariesAreNotTransitive) {
  GrammarBuilder b;
  const int32_t root = b.AddSymbol("ROOT"), x = b.AddSymbol("X"), y = b.AddSymbol("Y"),
                t = b.AddSymbol("T");
  b.AddBinary(x, 0, t, 0, t, 0, 0.1);
  b.AddBinary(y, 0, t, 0, t, 0, 0.9);
  b.AddUnary(root, 0, x, 0, 1.0);
  b.AddUnary(x, 0, y, 0, 0.5);
  std::vector<int32_t> ids;
  BerkeleyModel model;
  model.grammar = b.Finish(&ids);
  model.lexicon.push_back({ids[t], "w", {0.5}});
  model.known_words.push_back("w");
  const Grammar& g = model.grammar;
  auto lexicon = Lexicon::Build(model);
  ASSERT_TRUE(lexicon.ok()) << lexicon.status().message();
  Parser parser(g, *lexicon, MakeReferenceBackend(g));
  const std::vector<std::string> words = {"w", "w"};
  LexicalScores lex = parser.ScoreWords(words);
  Chart chart;
  Backpointers bp;
  ReferenceViterbiInside(g, lex, &chart, &bp);
  const double root_score = chart.score(0, 2, Grammar::kRootState);
  EXPECT_NEAR(root_score, std::log(0.1 * 0.5 * 0.5), 1e-12);
  const int32_t x_state = g.FindState("X_0");
  ASSERT_GE(x_state, 0);
  EXPECT_NEAR(chart.score(0, 2, x_state), std::log(0.5 * 0.9 * 0.5 * 0.5), 1e-12);

  auto top_down = ExtractViterbiTree(g, chart, words);
  ASSERT_TRUE(top_down.ok()) << top_down.status().message();
  auto from_bp = ExtractFromBackpointers(g, chart, bp, words);
  ASSERT_TRUE(from_bp.ok()) << from_bp.status().message();
  EXPECT_EQ(FormatTree(*top_down, {.substates = true}), "( (X-0 (T-0 w) (T-0 w)) )");
  EXPECT_EQ(*top_down, *from_bp);
  auto score = ScoreAnnotatedTree(g, *lexicon, *top_down);
  ASSERT_TRUE(score.ok()) << score.status().message();
  EXPECT_NEAR(*score, root_score, 1e-12);
  // Through Parser, with the reference and the multi-threaded CPU backends.
  const std::vector<std::vector<std::string>> sentences = {words};
  for (bool reference : {true, false}) {
    Parser with(g, *lexicon, reference ? MakeReferenceBackend(g) : MakeCpuBackend(g, 2));
    auto outcomes = with.Parse(sentences);
    ASSERT_EQ(outcomes[0].status, ParseStatus::kOk) << outcomes[0].message;
    EXPECT_NEAR(outcomes[0].log_score, root_score, 1e-12);
    EXPECT_EQ(outcomes[0].tree, *top_down);
  }
}

// Chart by chart; the trees and scores of the fast CPU backend against the reference are rows of
// parser/backend_conformance_test.cpp.
TEST(ReferenceViterbiTest, FastCpuChartIsBitIdentical) {
  Fixture f(StandardShape(3));
  CpuViterbi fast(f.g());
  for (const auto& words : MakeRandomSentences(f.grammar.model, 10, 1, 15, 9)) {
    LexicalScores lex = f.parser.ScoreWords(words);
    Chart reference, chart;
    ReferenceViterbiInside(f.g(), lex, &reference);
    fast.Inside(lex, &chart);
    EXPECT_EQ(reference.data(), chart.data());
  }
}

TEST(ReferenceViterbiTest, NoParseEmptyAndTooLongSentences) {
  const TestGrammar grammar = MakeRandomTestGrammar({.seed = 2});
  Parser parser(grammar.grammar(), grammar.lexicon, MakeCpuBackend(grammar.grammar(), 1),
                {.max_length = 5});
  std::vector<std::vector<std::string>> sentences = {
      {}, {"w1", "w2", "w3", "w4", "w5", "w6"}, {"zzz-unknown"}};
  auto outcomes = parser.Parse(sentences);
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[0].status, ParseStatus::kNoParse);
  EXPECT_EQ(outcomes[1].status, ParseStatus::kTooLong);
  // An unknown word with no signature row at all cannot be tagged.
  EXPECT_EQ(outcomes[2].status, ParseStatus::kNoParse);
}

}  // namespace
}  // namespace cky
