#include "parser/viterbi_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "lexicon/lexicon.h"
#include "parser/parser.h"
#include "parser/random_grammar.h"
#include "parser/tree_extraction.h"
#include "parser/viterbi_cpu.h"

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
    auto made = MakeBackend(model.grammar, {.backend = backend, .threads = 2});
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
  sentences.push_back({"w1"});
  sentences.push_back({"w2", "w3"});
  sentences.push_back(std::vector<std::string>(40, "w0"));
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
