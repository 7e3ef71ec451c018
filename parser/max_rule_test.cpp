// The charts and trees of the reference inside-outside and max-rule passes against brute-force
// enumeration, and the fast CPU path's charts against the reference's; the max-rule backends'
// outcomes against the reference are rows of parser/backend_conformance_test.cpp.
#include "parser/max_rule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "parser/backend_test_support.h"
#include "parser/cpu_backend.h"
#include "parser/inside_outside_cpu.h"
#include "parser/max_rule_test_util.h"
#include "parser/tree_format.h"

namespace cky {
namespace {

// Log-scores equal within `tolerance`, -infinity only where the other is too.
void ExpectLogNear(double expected, double actual, double tolerance) {
  if (expected == kNegInf || actual == kNegInf) {
    EXPECT_EQ(expected, actual);
  } else {
    EXPECT_NEAR(expected, actual, tolerance);
  }
}

struct Fixture {
  TestGrammar grammar;
  BerkeleyModel& model = grammar.model;
  Parser parser;
  explicit Fixture(const RandomGrammarOptions& options)
      : grammar(MakeRandomTestGrammar(options)),
        parser(grammar.grammar(), grammar.lexicon, MakeReferenceMaxRuleBackend(grammar.grammar())) {
  }
  LexicalScores Score(const std::vector<std::string>& words) const {
    return parser.ScoreWords(words);
  }
};

TEST(InsideOutsideTest, LikelihoodEqualsBruteForceSumOverDerivations) {
  int checked = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    Fixture f(TinyShape(seed));
    const Grammar& g = f.model.grammar;
    ASSERT_TRUE(g.sum_unaries_exact);
    for (const auto& words : MakeRandomSentences(f.model, 6, 1, 4, seed * 7)) {
      LexicalScores lex = f.Score(words);
      InsideOutsideCharts charts;
      ReferenceInsideOutside(g, lex, &charts);
      double total = 0;
      for (const Derivation& d : Enumerator(g, lex).Any(Grammar::kRootState, 0, lex.length)) {
        total += d.prob;
      }
      if (total == 0) {
        EXPECT_EQ(charts.log_likelihood, kNegInf);
        continue;
      }
      ++checked;
      EXPECT_NEAR(charts.log_likelihood, std::log(total), 1e-10) << "seed " << seed;
    }
  }
  EXPECT_GT(checked, 20);
}

// Over every word, exactly one tag: the tag posteriors outpre(t) P(word | t) / P(w) sum to 1. This
// holds only if every outside score is right, down to the words.
TEST(InsideOutsideTest, TagPosteriorsSumToOneAtEveryWord) {
  Fixture f({.phrasal_symbols = 5, .tags = 4, .substates = 3, .seed = 17});
  const Grammar& g = f.model.grammar;
  int checked = 0;
  auto sentences = MakeRandomSentences(f.model, 12, 1, 25, 3);
  sentences.push_back(std::vector<std::string>(120, "w1"));  // long: scaling must hold
  for (const auto& words : sentences) {
    LexicalScores lex = f.Score(words);
    InsideOutsideCharts charts;
    ReferenceInsideOutside(g, lex, &charts);
    if (!(charts.log_likelihood > kNegInf)) continue;
    ++checked;
    for (int32_t i = 0; i < lex.length; ++i) {
      double sum = 0;
      for (int32_t s = 0; s < g.num_states(); ++s) {
        const double o = charts.outside.LogScore(i, i + 1, s);
        if (o > kNegInf && lex.word(i)[s] > kNegInf) {
          sum += std::exp(o + lex.word(i)[s] - charts.log_likelihood);
        }
      }
      EXPECT_NEAR(sum, 1.0, 1e-9) << words.size() << " words, word " << i;
    }
  }
  EXPECT_GT(checked, 5);
}

// Under a pruning mask the charts are those of the grammar restricted to the allowed items: pruned
// items have neither inside nor outside scores, and the tag posteriors still sum to 1 at every
// word. Both fail when outside scores flow through pruned items (a pruned parent's outside
// reaching its children).
TEST(InsideOutsideTest, PosteriorsStayWithinThePrunedChart) {
  Fixture f({.phrasal_symbols = 5, .tags = 4, .substates = 3, .seed = 29});
  const Grammar& g = f.model.grammar;
  SumProductRules rules(g);
  std::mt19937_64 random(5);
  int checked = 0;
  for (const auto& words : MakeRandomSentences(f.model, 40, 1, 14, 11)) {
    LexicalScores lex = f.Score(words);
    const int32_t n = lex.length;
    std::vector<uint8_t> allowed(size_t(Chart::NumCells(n)) * g.num_states());
    for (uint8_t& a : allowed) a = random() % 4 != 0;  // keep 3 items of 4
    allowed[size_t(Chart::NumCells(n) - 1) * g.num_states() + Grammar::kRootState] = 1;  // the top
    InsideOutsideCharts charts;
    FastInsideOutside(g, rules, lex, &charts, &allowed);
    if (!(charts.log_likelihood > kNegInf)) continue;
    ++checked;
    for (int32_t span = 1; span <= n; ++span)
      for (int32_t start = 0; start + span <= n; ++start) {
        double tags = 0;
        for (int32_t s = 0; s < g.num_states(); ++s) {
          const double o = charts.outside.LogScore(start, start + span, s);
          const bool kept =
              allowed[size_t(charts.inside.CellIndex(start, start + span)) * g.num_states() + s];
          if (!kept) {
            EXPECT_EQ(o, kNegInf) << "a pruned item has an outside score";
            EXPECT_EQ(charts.inside.LogScore(start, start + span, s), kNegInf);
          }
          if (span == 1 && o > kNegInf && lex.word(start)[s] > kNegInf) {
            tags += std::exp(o + lex.word(start)[s] - charts.log_likelihood);
          }
        }
        if (span == 1) EXPECT_NEAR(tags, 1.0, 1e-9) << n << " words, word " << start;
      }
  }
  EXPECT_GT(checked, 10);
}

TEST(InsideOutsideTest, FastCpuPathEqualsReference) {
  Fixture f(StandardShape(5));
  const Grammar& g = f.model.grammar;
  SumProductRules rules(g);
  auto sentences = MakeRandomSentences(f.model, 10, 1, 18, 2);
  sentences.push_back({"w3"});
  sentences.push_back({"w1", "w2"});
  for (const auto& words : sentences) {
    LexicalScores lex = f.Score(words);
    InsideOutsideCharts reference, fast;
    ReferenceInsideOutside(g, lex, &reference);
    FastInsideOutside(g, rules, lex, &fast);
    ASSERT_EQ(reference.log_likelihood == kNegInf, fast.log_likelihood == kNegInf);
    if (reference.log_likelihood == kNegInf) continue;
    EXPECT_NEAR(reference.log_likelihood, fast.log_likelihood, 1e-10);
    for (int32_t span = 1; span <= lex.length; ++span)
      for (int32_t start = 0; start + span <= lex.length; ++start)
        for (int32_t s = 0; s < g.num_states(); ++s) {
          const double in = reference.inside.LogScore(start, start + span, s);
          ExpectLogNear(in, fast.inside.LogScore(start, start + span, s), 1e-9);
          ExpectLogNear(reference.outside.LogScore(start, start + span, s),
                        fast.outside.LogScore(start, start + span, s), 1e-9);
        }
  }
}

// Max-rule = the brute-force argmax, over base-symbol trees, of the sum of log posteriors of the
// tree's events, each posterior summed over every derivation that uses it. Unaries only at ROOT,
// where Berkeley's unary formula is the true posterior.
TEST(MaxRuleTest, EqualsBruteForceArgmaxOfRulePosteriors) {
  int checked = 0, unique = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    Fixture f({.phrasal_symbols = 3,
               .tags = 2,
               .substates = 2,
               .base_rule_density = 0.2,
               .unary_density = 0,
               .seed = seed});
    const Grammar& g = f.model.grammar;
    for (const auto& words : MakeRandomSentences(f.model, 5, 1, 4, seed * 3)) {
      LexicalScores lex = f.Score(words);
      const BruteForcePosteriors brute = EnumerateRulePosteriors(g, lex);
      if (brute.trees.empty()) continue;
      std::vector<double> scores;
      for (const auto& t : brute.trees) {
        double score = 0;
        for (const auto& e : t) score += std::log(brute.posterior.at(e));
        scores.push_back(score);
      }
      std::sort(scores.rbegin(), scores.rend());
      InsideOutsideCharts charts;
      ReferenceInsideOutside(g, lex, &charts);
      MaxRuleChart maxc;
      ReferenceMaxRuleChart(g, lex, charts, &maxc);
      ++checked;
      EXPECT_NEAR(maxc.root_score(), scores[0], 1e-9) << "seed " << seed;
      auto tree = ExtractMaxRuleTree(g, maxc, words);
      ASSERT_TRUE(tree.ok()) << tree.status().message();
      EXPECT_EQ(Leaves(*tree), words);
      if (scores.size() == 1 || scores[0] - scores[1] > 1e-6) ++unique;
    }
  }
  EXPECT_GT(checked, 20);
  EXPECT_GT(unique, 10);
}

TEST(FormatJavaDoubleTest, PrintsLikeJava) {
  EXPECT_EQ(FormatJavaDouble(-87.86582921731302), "-87.86582921731302");
  EXPECT_EQ(FormatJavaDouble(-1.0), "-1.0");
  EXPECT_EQ(FormatJavaDouble(-1234.5), "-1234.5");
  EXPECT_EQ(FormatJavaDouble(1e-5), "1.0E-5");
  EXPECT_EQ(FormatJavaDouble(-0.0015), "-0.0015");
  EXPECT_EQ(FormatJavaDouble(12345678.0), "1.2345678E7");
  EXPECT_EQ(FormatJavaDouble(kNegInf), "-Infinity");
}

}  // namespace
}  // namespace cky
