#include "dense/dense_inside.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "dense/dense_test_util.h"

namespace cky {
namespace {

using namespace dense_test;  // NOLINT: test helpers

std::vector<std::string> Spell(const DensePcfg& g, const std::vector<int>& ids) {
  std::vector<std::string> words;
  for (int id : ids) words.push_back(g.words[id]);
  return words;
}

struct Variant {
  DenseAlgorithm algorithm;
  DenseParallelism parallelism;
};

std::vector<Variant> AllVariants() {
  std::vector<Variant> variants;
  for (DenseAlgorithm algorithm : {DenseAlgorithm::kBaseline, DenseAlgorithm::kFactored}) {
    for (DenseParallelism parallelism : {DenseParallelism::kSerial, DenseParallelism::kOuter,
                                         DenseParallelism::kInner, DenseParallelism::kBoth}) {
      variants.push_back({algorithm, parallelism});
    }
  }
  return variants;
}

double g_max_relative_error = 0;

void ExpectVariantsMatchReference(const DensePcfg& g, const std::vector<int>& sentence,
                                  DenseInsideCpu& cpu) {
  for (DenseSemiring semiring : {DenseSemiring::kSum, DenseSemiring::kMax}) {
    const double reference = DenseInsideReference(g, sentence, semiring).SentenceLogProb();
    ASSERT_TRUE(std::isfinite(reference));
    for (const Variant& v : AllVariants()) {
      const double value =
          cpu.Inside(sentence, semiring, v.algorithm, v.parallelism).SentenceLogProb();
      const double error = RelativeError(value, reference);
      g_max_relative_error = std::max(g_max_relative_error, error);
      EXPECT_LE(error, kRelativeTolerance)
          << DenseAlgorithmName(v.algorithm) << " " << DenseParallelismName(v.parallelism)
          << (semiring == DenseSemiring::kSum ? " sum" : " max") << " length " << sentence.size()
          << ": " << value << " vs reference " << reference;
    }
  }
}

TEST(DenseInsideTest, EveryVariantMatchesTheReferenceForLengths1To60) {
  DensePcfg g = TestGrammar(8, 11, 40);
  DenseInsideCpu cpu(g, 3);  // more workers than this machine may have cores: still correct
  for (int length = 1; length <= 60; ++length) {
    ExpectVariantsMatchReference(g, RandomSentence(g, length, 100 + length), cpu);
  }
  std::printf("largest relative error vs the float64 reference: %.3g\n", g_max_relative_error);
}

TEST(DenseInsideTest, EveryVariantMatchesTheReferenceWith32Nonterminals) {
  DensePcfg g = TestGrammar(32, 5, 100);
  DenseInsideCpu cpu(g, 2);
  for (int length : {1, 2, 7, 40})
    ExpectVariantsMatchReference(g, RandomSentence(g, length, length), cpu);
  std::printf("largest relative error vs the float64 reference: %.3g\n", g_max_relative_error);
}

TEST(DenseInsideTest, OddNonterminalCountsWork) {
  DensePcfg g = TestGrammar(13, 9, 20);
  DenseInsideCpu cpu(g, 4);
  for (int length : {1, 2, 3, 25})
    ExpectVariantsMatchReference(g, RandomSentence(g, length, length), cpu);
}

TEST(DenseInsideTest, ScalingKeepsLongSentencesFromUnderflowing) {
  // The sentence's probability is far below the smallest double, let alone float.
  DensePcfg g = TestGrammar(4, 3, 50);
  const std::vector<int> sentence = RandomSentence(g, 200, 1);
  const double reference = DenseInsideReference(g, sentence, DenseSemiring::kSum).SentenceLogProb();
  ASSERT_TRUE(std::isfinite(reference));
  EXPECT_LT(reference, -800);
  DenseInsideCpu cpu(g, 2);
  const double factored =
      cpu.Inside(sentence, DenseSemiring::kSum, DenseAlgorithm::kFactored, DenseParallelism::kOuter)
          .SentenceLogProb();
  EXPECT_LE(RelativeError(factored, reference), kRelativeTolerance);
}

TEST(DenseInsideTest, AcrossSentencesMatchesTheReferenceInOrder) {
  DensePcfg g = TestGrammar(8, 4, 30);
  DenseInsideCpu cpu(g, 3);
  std::vector<std::vector<int>> sentences;
  for (int s = 0; s < 20; ++s) sentences.push_back(RandomSentence(g, 1 + (s * 7) % 33, s));
  sentences.push_back({});
  for (DenseSemiring semiring : {DenseSemiring::kSum, DenseSemiring::kMax}) {
    std::vector<double> log_probs = cpu.SentenceLogProbsAcrossSentences(sentences, semiring);
    ASSERT_EQ(log_probs.size(), sentences.size());
    for (size_t s = 0; s < sentences.size(); ++s) {
      const double reference = DenseInsideReference(g, sentences[s], semiring).SentenceLogProb();
      if (sentences[s].empty()) {
        EXPECT_EQ(log_probs[s], -std::numeric_limits<double>::infinity());
      } else {
        EXPECT_LE(RelativeError(log_probs[s], reference), kRelativeTolerance) << s;
      }
    }
  }
}

// All trees over words [i, k) with root label a, with their probabilities (brute force).
void Enumerate(const DensePcfg& g, const std::vector<int>& ids,
               const std::vector<std::string>& words, int i, int k, int a,
               std::vector<std::pair<Tree, double>>* out) {
  const std::string label = DensePcfg::NonterminalName(a);
  if (k == i + 1) {
    out->push_back({Tree(label, {Tree(words[i])}), g.Terminal(ids[i], a)});
    return;
  }
  for (int j = i + 1; j < k; ++j) {
    for (int b = 0; b < g.num_nonterminals; ++b) {
      std::vector<std::pair<Tree, double>> left;
      Enumerate(g, ids, words, i, j, b, &left);
      for (int c = 0; c < g.num_nonterminals; ++c) {
        std::vector<std::pair<Tree, double>> right;
        Enumerate(g, ids, words, j, k, c, &right);
        for (const auto& [left_tree, left_p] : left) {
          for (const auto& [right_tree, right_p] : right) {
            out->push_back(
                {Tree(label, {left_tree, right_tree}), g.Rule(a, b, c) * left_p * right_p});
          }
        }
      }
    }
  }
}

TEST(DenseInsideTest, SumAndBestTreeEqualBruteForceEnumeration) {
  int checked = 0, unique_best = 0;
  for (auto [m, max_length] : {std::pair{2, 5}, std::pair{3, 4}}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      DensePcfg g = TestGrammar(m, seed, 6);
      DenseInsideCpu cpu(g, 2);
      for (int length = 1; length <= max_length; ++length) {
        const std::vector<int> ids = RandomSentence(g, length, seed * 31 + length);
        const std::vector<std::string> words = Spell(g, ids);
        std::vector<std::pair<Tree, double>> trees;
        Enumerate(g, ids, words, 0, length, 0, &trees);
        double total = 0;
        size_t best = 0;
        for (size_t t = 0; t < trees.size(); ++t) {
          total += trees[t].second;
          if (trees[t].second > trees[best].second) best = t;
        }
        // Dense grammars tie exactly: bracketings built from the same multiset of rules have the
        // same probability. So a Viterbi tree must reach the best probability, and must equal the
        // enumerated best tree only where that one is unique.
        double second = 0;
        for (size_t t = 0; t < trees.size(); ++t) {
          if (t != best) second = std::max(second, trees[t].second);
        }
        const bool unique = second < trees[best].second * (1 - 1e-4);
        unique_best += unique;
        const double best_log = std::log(trees[best].second);
        const DenseChart<double> inside = DenseInsideReference(g, ids, DenseSemiring::kSum);
        EXPECT_NEAR(inside.SentenceLogProb(), std::log(total), 1e-12 * std::abs(std::log(total)));
        const DenseChart<double> viterbi = DenseInsideReference(g, ids, DenseSemiring::kMax);
        EXPECT_NEAR(viterbi.SentenceLogProb(), best_log, 1e-12 * std::abs(best_log));
        StatusOr<Tree> tree = DenseViterbiTree(g, viterbi, ids, words);
        ASSERT_TRUE(tree.ok()) << tree.status().message();
        EXPECT_NEAR(TreeLogProb(g, *tree), best_log, 1e-12 * std::abs(best_log));
        EXPECT_NEAR(tree->score, viterbi.SentenceLogProb(), 1e-12);
        EXPECT_EQ(Leaves(*tree), words);
        if (unique) EXPECT_EQ(ToBracketString(*tree), ToBracketString(trees[best].first));
        for (const Variant& v : AllVariants()) {
          const DenseChart<float> fast =
              cpu.Inside(ids, DenseSemiring::kMax, v.algorithm, v.parallelism);
          StatusOr<Tree> fast_tree = DenseViterbiTree(g, fast, ids, words);
          ASSERT_TRUE(fast_tree.ok());
          EXPECT_NEAR(TreeLogProb(g, *fast_tree), best_log, kRelativeTolerance * std::abs(best_log))
              << DenseAlgorithmName(v.algorithm) << " " << DenseParallelismName(v.parallelism);
          if (unique) {
            EXPECT_EQ(ToBracketString(*fast_tree), ToBracketString(trees[best].first))
                << DenseAlgorithmName(v.algorithm) << " " << DenseParallelismName(v.parallelism);
          }
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 27);
  EXPECT_GE(unique_best, 9);  // the tree comparison must not be vacuous
  std::printf("%d of %d brute-force cases have a unique best tree\n", unique_best, checked);
}

TEST(DenseInsideTest, FloatViterbiTreesReachTheBestScoreOnLongerSentences) {
  DensePcfg g = TestGrammar(8, 21, 30);
  DenseInsideCpu cpu(g, 2);
  for (int length : {5, 12, 30}) {
    const std::vector<int> ids = RandomSentence(g, length, length);
    const std::vector<std::string> words = Spell(g, ids);
    StatusOr<Tree> reference =
        DenseViterbiTree(g, DenseInsideReference(g, ids, DenseSemiring::kMax), ids, words);
    StatusOr<Tree> fast = DenseViterbiTree(
        g,
        cpu.Inside(ids, DenseSemiring::kMax, DenseAlgorithm::kFactored, DenseParallelism::kOuter),
        ids, words);
    ASSERT_TRUE(reference.ok() && fast.ok());
    EXPECT_EQ(Leaves(*fast), words);
    // Exact ties between bracketings are common (see above), so compare what the trees score.
    const double best = reference->score;
    EXPECT_NEAR(TreeLogProb(g, *reference), best, 1e-12 * std::abs(best));
    EXPECT_NEAR(TreeLogProb(g, *fast), best, kRelativeTolerance * std::abs(best));
  }
}

TEST(DenseInsideTest, EmptySentenceHasNoParse) {
  DensePcfg g = TestGrammar(3, 1, 5);
  DenseChart<double> chart = DenseInsideReference(g, {}, DenseSemiring::kSum);
  EXPECT_EQ(chart.SentenceLogProb(), -std::numeric_limits<double>::infinity());
  EXPECT_FALSE(DenseViterbiTree(g, chart, {}, {}).ok());
}

}  // namespace
}  // namespace cky
