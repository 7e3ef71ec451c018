// K-best lists against a brute-force enumeration of the max-rule hypergraph; the backends' k-best
// lists against the reference's are rows of parser/backend_conformance_test.cpp.
#include "parser/kbest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "parser/backend_test_support.h"
#include "parser/cpu_backend.h"
#include "parser/max_rule.h"
#include "parser/tree_format.h"

namespace cky {
namespace {

// Every tree of the max-rule hypergraph (parser/kbest.h), enumerated exhaustively with its score:
// the sum of its rule scores, each computed here from the inside and outside log-scores by the
// formulas of parser/max_rule.h, substate by substate.
class TreeEnumerator {
 public:
  TreeEnumerator(const Grammar& g, const LexicalScores& lex, const InsideOutsideCharts& charts,
                 const std::vector<std::string>& words)
      : g_(g), lex_(lex), c_(charts), words_(words) {}

  using Scored = std::vector<std::pair<double, Tree>>;

  const Scored& After(int32_t start, int32_t end, int32_t symbol) {
    auto key = std::make_tuple(start, end, symbol, true);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    Scored out = Before(start, end, symbol);
    for (int32_t child = 0; child < g_.num_symbols(); ++child) {
      if (child == symbol) continue;
      double sum = 0;
      for (int32_t u = 0; u < static_cast<int32_t>(g_.sum_unary_parent.size()); ++u) {
        const int32_t p = g_.sum_unary_parent[u], c = g_.sum_unary_child[u];
        if (g_.state_symbol[p] != symbol || g_.state_symbol[c] != child) continue;
        sum += Exp(Out(start, end, p) + g_.sum_unary_log_prob[u] + In(start, end, c));
      }
      if (!(sum > 0)) continue;
      const int32_t middle = g_.UnaryIntermediate(symbol, child);
      for (const auto& [score, tree] : Before(start, end, child)) {
        Tree below = tree;
        if (middle > 0) below = Tree(g_.symbol_names[middle], {std::move(below)});
        out.push_back({score + std::log(sum), Tree(g_.symbol_names[symbol], {std::move(below)})});
      }
    }
    return memo_[key] = std::move(out);
  }

  const Scored& Before(int32_t start, int32_t end, int32_t symbol) {
    auto key = std::make_tuple(start, end, symbol, false);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    Scored& out = memo_[key];
    const std::string& label = g_.symbol_names[symbol];
    if (end - start == 1) {
      if (g_.symbol_is_phrasal[symbol]) return out;
      double sum = 0;
      const int32_t first = g_.symbol_first_state[symbol];
      for (int32_t k = 0; k < g_.symbol_num_substates[symbol]; ++k) {
        sum += Exp(Out(start, end, first + k) + lex_.word(start)[first + k]);
      }
      if (sum > 0) out.push_back({std::log(sum), Tree(label, {Tree(words_[start])})});
      return out;
    }
    for (int32_t split = start + 1; split < end; ++split) {
      std::map<std::pair<int32_t, int32_t>, double> sums;
      for (int64_t r = 0; r < g_.num_binary_rules(); ++r) {
        if (g_.state_symbol[g_.binary_parent[r]] != symbol) continue;
        sums[{g_.state_symbol[g_.binary_left[r]], g_.state_symbol[g_.binary_right[r]]}] +=
            Exp(Out(start, end, g_.binary_parent[r]) + g_.binary_log_prob[r] +
                In(start, split, g_.binary_left[r]) + In(split, end, g_.binary_right[r]));
      }
      for (const auto& [children, sum] : sums) {
        if (!(sum > 0)) continue;
        for (const auto& [ls, lt] : After(start, split, children.first)) {
          for (const auto& [rs, rt] : After(split, end, children.second)) {
            out.push_back({std::log(sum) + ls + rs, Tree(label, {lt, rt})});
          }
        }
      }
    }
    return out;
  }

 private:
  double In(int32_t s, int32_t e, int32_t state) const { return c_.inside.LogScore(s, e, state); }
  double Out(int32_t s, int32_t e, int32_t state) const { return c_.outside.LogScore(s, e, state); }
  double Exp(double log_value) const {
    return log_value > kNegInf ? std::exp(log_value - c_.log_likelihood) : 0.0;
  }

  const Grammar& g_;
  const LexicalScores& lex_;
  const InsideOutsideCharts& c_;
  const std::vector<std::string>& words_;
  std::map<std::tuple<int32_t, int32_t, int32_t, bool>, Scored> memo_;
};

TEST(KBestTest, EqualsBruteForceTopKOfTheMaxRuleHypergraph) {
  int checked = 0, deep = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const TestGrammar grammar = MakeRandomTestGrammar({
        .phrasal_symbols = 3,
        .tags = 2,
        .substates = 2,
        .base_rule_density = 0.3,
        .unary_density = seed % 2 ? 0.3 : 0.0,  // unary chains on odd seeds
        .seed = seed,
    });
    const Grammar& g = grammar.grammar();
    Parser parser(g, grammar.lexicon, MakeReferenceMaxRuleBackend(g));
    for (const auto& words : MakeRandomSentences(grammar.model, 5, 1, 4, seed * 11)) {
      LexicalScores lex = parser.ScoreWords(words);
      InsideOutsideCharts charts;
      ReferenceInsideOutside(g, lex, &charts);
      if (!(charts.log_likelihood > kNegInf)) continue;
      MaxRuleChart maxc;
      ReferenceMaxRuleChart(g, lex, charts, &maxc);
      TreeEnumerator enumerator(g, lex, charts, words);
      auto all = enumerator.After(0, lex.length, Grammar::kRootState);
      ASSERT_FALSE(all.empty());
      std::sort(all.begin(), all.end(),
                [](const auto& a, const auto& b) { return a.first > b.first; });
      const int k = 8;
      auto kbest = KBestMaxRuleTrees(g, charts, maxc, words, k);
      ASSERT_TRUE(kbest.ok()) << kbest.status().message();
      ASSERT_EQ(kbest->size(), std::min<size_t>(k, all.size())) << "seed " << seed;
      ++checked;
      if (all.size() > 3) ++deep;
      // The first is the max-rule tree, with the chart's score.
      auto best = ExtractMaxRuleTree(g, maxc, words);
      ASSERT_TRUE(best.ok());
      EXPECT_EQ((*kbest)[0].tree, *best);
      EXPECT_EQ((*kbest)[0].log_score, maxc.root_score());
      // Berkeley's list: its first tree is the max-rule tree, scores never rise, and every tree
      // is one of the hypergraph's with the score the enumeration gives it.
      auto berkeley = KBestMaxRuleTrees(g, charts, maxc, words, k, KBestStyle::kBerkeley);
      ASSERT_TRUE(berkeley.ok());
      ASSERT_FALSE(berkeley->empty());
      EXPECT_EQ((*berkeley)[0].tree, *best);
      for (size_t i = 0; i < berkeley->size(); ++i) {
        const ScoredTree& t = (*berkeley)[i];
        if (i > 0) EXPECT_LE(t.log_score, (*berkeley)[i - 1].log_score + 1e-12);
        EXPECT_LE(t.log_score, all[i].first + 1e-9);  // never above the exact i-th best
        bool found = false;
        for (const auto& [score, tree] : all) {
          if (tree == t.tree && std::abs(score - t.log_score) < 1e-9) found = true;
        }
        EXPECT_TRUE(found) << ToBracketString(t.tree);
      }
      std::set<std::string> distinct;
      for (size_t i = 0; i < kbest->size(); ++i) {
        const ScoredTree& t = (*kbest)[i];
        EXPECT_NEAR(t.log_score, all[i].first, 1e-9) << "seed " << seed << " rank " << i;
        if (i > 0) EXPECT_LE(t.log_score, (*kbest)[i - 1].log_score + 1e-12);
        EXPECT_TRUE(distinct.insert(ToBracketString(t.tree)).second) << "a tree came twice";
        // The tree is one the enumeration scores the same.
        bool found = false;
        for (const auto& [score, tree] : all) {
          if (tree == t.tree) {
            found = true;
            EXPECT_NEAR(score, t.log_score, 1e-9);
          }
        }
        EXPECT_TRUE(found) << ToBracketString(t.tree);
      }
    }
  }
  EXPECT_GT(checked, 30);
  EXPECT_GT(deep, 15);
}

}  // namespace
}  // namespace cky
