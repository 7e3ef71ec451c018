#include "parser/tree_likelihood.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "parser/backend_test_support.h"
#include "parser/cpu_backend.h"
#include "parser/inside_outside_cpu.h"
#include "parser/max_rule.h"
#include "treebank/reader.h"

namespace cky {
namespace {

// Every tree over base symbols with positive probability, as inside-outside sums over them: per
// cell a direct node (binary, or a tag on one word), optionally under a chain of one or two base
// unaries between different symbols (the closure of parser/random_grammar.h).
class TreeEnumerator {
 public:
  TreeEnumerator(const Grammar& g, const std::vector<std::string>& words) : g_(g), words_(words) {
    for (size_t u = 0; u < g.base_unary_parent.size(); ++u) {
      unary_.insert(
          {g.state_symbol[g.base_unary_parent[u]], g.state_symbol[g.base_unary_child[u]]});
    }
    for (int64_t r = 0; r < g.num_binary_rules(); ++r) {
      binary_.insert({g.state_symbol[g.binary_parent[r]], g.state_symbol[g.binary_left[r]],
                      g.state_symbol[g.binary_right[r]]});
    }
  }

  std::vector<Tree> After(int32_t start, int32_t end, int32_t p) const {
    std::vector<Tree> out = Direct(start, end, p);
    for (int32_t c = 0; c < g_.num_symbols(); ++c) {
      if (c == p) continue;
      std::vector<Tree> below = Direct(start, end, c);
      if (below.empty()) continue;
      if (unary_.count({p, c})) {
        for (const Tree& t : below) out.push_back(Tree(g_.symbol_names[p], {t}));
      }
      for (int32_t m = 0; m < g_.num_symbols(); ++m) {
        if (m == p || m == c || !unary_.count({p, m}) || !unary_.count({m, c})) continue;
        for (const Tree& t : below) {
          out.push_back(Tree(g_.symbol_names[p], {Tree(g_.symbol_names[m], {t})}));
        }
      }
    }
    return out;
  }

  std::vector<Tree> Direct(int32_t start, int32_t end, int32_t a) const {
    std::vector<Tree> out;
    if (end - start == 1) {
      if (!g_.symbol_is_phrasal[a]) out.push_back(Tree(g_.symbol_names[a], {Tree(words_[start])}));
      return out;
    }
    for (const auto& [p, l, r] : binary_) {
      if (p != a) continue;
      for (int32_t split = start + 1; split < end; ++split) {
        for (const Tree& lt : After(start, split, l)) {
          for (const Tree& rt : After(split, end, r)) {
            out.push_back(Tree(g_.symbol_names[a], {lt, rt}));
          }
        }
      }
    }
    return out;
  }

 private:
  const Grammar& g_;
  const std::vector<std::string>& words_;
  std::set<std::pair<int32_t, int32_t>> unary_;
  std::set<std::tuple<int32_t, int32_t, int32_t>> binary_;
};

TEST(TreeLikelihoodTest, SumOverAllTreesIsTheSentenceLikelihood) {
  int checked = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const TestGrammar grammar = MakeRandomTestGrammar({.phrasal_symbols = 3,
                                                       .tags = 2,
                                                       .substates = 2,
                                                       .base_rule_density = 0.3,
                                                       .unary_density = 0.4,
                                                       .seed = seed});
    const Grammar& g = grammar.grammar();
    ASSERT_TRUE(g.base_unaries_known);
    Parser parser(g, grammar.lexicon, MakeReferenceMaxRuleBackend(g));
    for (const auto& words : MakeRandomSentences(grammar.model, 4, 1, 3, seed)) {
      LexicalScores lex = parser.ScoreWords(words);
      InsideOutsideCharts charts;
      ReferenceInsideOutside(g, lex, &charts);
      double total = 0;
      for (const Tree& t : TreeEnumerator(g, words).After(0, lex.length, Grammar::kRootState)) {
        auto joint = TreeLogLikelihood(g, lex, t);
        ASSERT_TRUE(joint.ok()) << joint.status().message();
        if (*joint > kNegInf) total += std::exp(*joint);
      }
      if (!(charts.log_likelihood > kNegInf)) {
        EXPECT_EQ(total, 0.0);
        continue;
      }
      ++checked;
      EXPECT_NEAR(std::log(total), charts.log_likelihood, 1e-10) << "seed " << seed;
    }
  }
  EXPECT_GT(checked, 12);
}

TEST(TreeLikelihoodTest, RebinarizesAsTheBerkeleyParser) {
  auto trees = ReadTreesFromString("(ROOT (NP (@NP (A a) (B b)) (C c) (D d)))");
  ASSERT_TRUE(trees.ok() && trees->size() == 1);
  const Tree* tree = &trees->front();
  auto right = RebinarizeTree(*tree, "RIGHT");
  ASSERT_TRUE(right.ok());
  EXPECT_EQ(ToBracketString(*right), "(ROOT (NP (@NP (@NP (A a) (B b)) (C c)) (D d)))");
  auto left = RebinarizeTree(*tree, "LEFT");
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(ToBracketString(*left), "(ROOT (NP (A a) (@NP (B b) (@NP (C c) (D d)))))");
  EXPECT_FALSE(RebinarizeTree(*tree, "HEAD").ok());
}

TEST(TreeLikelihoodTest, ParserAddsTreeLikelihoodAndConfidence) {
  const TestGrammar grammar =
      MakeRandomTestGrammar({.phrasal_symbols = 5, .tags = 3, .substates = 2, .seed = 4});
  const ParserOptions parser_options{
      .tree_likelihood = true, .confidence = true, .binarization = "RIGHT"};
  int checked = 0;
  for (const auto& outcome :
       ParseWith(grammar, MakeCpuMaxRuleBackend(grammar.grammar(), 1, {.kbest = 3}),
                 MakeRandomSentences(grammar.model, 10, 1, 12, 8), parser_options)) {
    if (outcome.status != ParseStatus::kOk) continue;
    ++checked;
    ASSERT_TRUE(outcome.message.empty()) << outcome.message;
    EXPECT_LE(outcome.tree_log_likelihood, outcome.log_likelihood + 1e-9);
    // Random grammars have no @ symbols, so re-binarizing changes nothing: P(T|w) = P(T,w)/P(w).
    EXPECT_NEAR(outcome.confidence, outcome.tree_log_likelihood - outcome.log_likelihood, 1e-9);
    ASSERT_FALSE(outcome.kbest.empty());
    EXPECT_EQ(outcome.kbest[0].tree_log_likelihood, outcome.tree_log_likelihood);
    for (const ScoredTree& t : outcome.kbest) EXPECT_LE(t.confidence, 1e-9);
  }
  EXPECT_GT(checked, 5);
}

}  // namespace
}  // namespace cky
