#include "parser/viterbi_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "lexicon/lexicon.h"
#include "parser/parser.h"
#include "parser/random_grammar.h"
#include "parser/tree_extraction.h"
#include "parser/tree_format.h"
#include "parser/viterbi_cpu.h"
#include "parser/backend_factory.h"
#include "parser/cpu_backend.h"

namespace cky {
namespace {

// Every derivation's score, enumerated one by one (no dynamic programming), under Berkeley's
// semantics: a cell offers each state either directly (binary, or lexical on one word) or through
// one closed unary over another state's direct form.
class BruteForce {
 public:
  BruteForce(const Grammar& g, const LexicalScores& lex) : g_(g), lex_(lex) {}

  std::vector<double> Direct(int32_t state, int32_t start, int32_t end) const {
    std::vector<double> scores;
    if (end - start == 1) {
      const double s = lex_.word(start)[state];
      if (s > kNegInf) scores.push_back(s);
      return scores;
    }
    for (int32_t r = g_.binary_parent_begin[state]; r < g_.binary_parent_begin[state + 1]; ++r)
      for (int32_t split = start + 1; split < end; ++split)
        for (double l : Any(g_.binary_left[r], start, split))
          for (double rr : Any(g_.binary_right[r], split, end))
            scores.push_back(g_.binary_log_prob[r] + l + rr);
    return scores;
  }
  std::vector<double> Any(int32_t state, int32_t start, int32_t end) const {
    std::vector<double> scores = Direct(state, start, end);
    for (int32_t u = g_.unary_parent_begin[state]; u < g_.unary_parent_begin[state + 1]; ++u)
      for (double c : Direct(g_.unary_child[u], start, end))
        scores.push_back(g_.unary_log_prob[u] + c);
    return scores;
  }

 private:
  const Grammar& g_;
  const LexicalScores& lex_;
};

struct Fixture {
  BerkeleyModel model;
  Lexicon lexicon;
  std::unique_ptr<Parser> parser;

  explicit Fixture(const RandomGrammarOptions& options, const std::string& backend = "reference")
      : model(MakeRandomModel(options)), lexicon(*Lexicon::Build(model)) {
    auto made = MakeBackend(model.grammar, {.device = *ParseDeviceKind(backend),
                                                .threads = 2,
                                                .decoder = DecoderKind::kViterbi,
                                                .prune = PruneMode::kOff});
    parser = std::make_unique<Parser>(model.grammar, lexicon, std::move(*made));
  }
};

TEST(ReferenceViterbiTest, EqualsBruteForceEnumerationOnTinyGrammars) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    RandomGrammarOptions options;
    options.phrasal_symbols = 2;
    options.tags = 2;
    options.substates = 2;
    options.base_rule_density = 0.25;
    options.seed = seed;
    Fixture f(options);
    const Grammar& g = f.model.grammar;
    for (const auto& words : MakeRandomSentences(f.model, 6, 1, 4, seed * 7)) {
      LexicalScores lex = f.parser->ScoreWords(words);
      Chart chart;
      ReferenceViterbiInside(g, lex, &chart);
      const int32_t n = lex.length;
      std::vector<double> all = BruteForce(g, lex).Any(Grammar::kRootState, 0, n);
      const double chart_score = chart.score(0, n, Grammar::kRootState);
      if (all.empty()) {
        EXPECT_EQ(chart_score, kNegInf);
        continue;
      }
      EXPECT_NEAR(chart_score, *std::max_element(all.begin(), all.end()), 1e-9)
          << "seed " << seed << ", " << n << " words, " << all.size() << " trees";
    }
  }
}

TEST(ReferenceViterbiTest, ExtractionWithoutBackpointersMatchesBackpointers) {
  RandomGrammarOptions options;
  options.phrasal_symbols = 5;
  options.tags = 4;
  options.substates = 3;
  options.seed = 11;
  Fixture f(options);
  const Grammar& g = f.model.grammar;
  int parsed = 0;
  for (const auto& words : MakeRandomSentences(f.model, 20, 1, 12, 5)) {
    LexicalScores lex = f.parser->ScoreWords(words);
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
    auto score = ScoreAnnotatedTree(g, f.lexicon, *top_down);
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

TEST(ReferenceViterbiTest, FastCpuChartIsBitIdentical) {
  RandomGrammarOptions options;
  options.phrasal_symbols = 6;
  options.tags = 4;
  options.substates = 3;
  options.seed = 3;
  Fixture f(options);
  CpuViterbi fast(f.model.grammar);
  for (const auto& words : MakeRandomSentences(f.model, 10, 1, 15, 9)) {
    LexicalScores lex = f.parser->ScoreWords(words);
    Chart reference, chart;
    ReferenceViterbiInside(f.model.grammar, lex, &reference);
    fast.Inside(lex, &chart);
    EXPECT_EQ(reference.data(), chart.data());
  }
}

TEST(ReferenceViterbiTest, MultiThreadedBackendGivesReferenceTrees) {
  RandomGrammarOptions options;
  options.phrasal_symbols = 6;
  options.tags = 4;
  options.substates = 2;
  options.seed = 21;
  Fixture reference(options, "reference");
  Fixture threaded(options, "cpu");
  // Lengths 1, 2 and a long one are always included.
  auto sentences = MakeRandomSentences(reference.model, 24, 1, 20, 4);
  AddLengthEdgeCases(40, &sentences);
  auto expected = reference.parser->Parse(sentences);
  auto actual = threaded.parser->Parse(sentences);
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(expected[i].status, actual[i].status) << i;
    EXPECT_EQ(expected[i].tree, actual[i].tree) << i;
    if (expected[i].status == ParseStatus::kOk) {
      EXPECT_DOUBLE_EQ(expected[i].log_score, actual[i].log_score);
    }
  }
}

TEST(ReferenceViterbiTest, NoParseEmptyAndTooLongSentences) {
  RandomGrammarOptions options;
  options.seed = 2;
  BerkeleyModel model = MakeRandomModel(options);
  Lexicon lexicon = *Lexicon::Build(model);
  Parser parser(model.grammar, lexicon, MakeCpuBackend(model.grammar, 1), {.max_length = 5});
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
