// The GPU dense inside path against the float64 CPU reference (dense/dense_inside.h). Skips
// itself without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "cuda/common/device.h"
#include "cuda/dense/dense_inside_device.h"
#include "dense/dense_inside.h"
#include "dense/dense_test_util.h"

namespace cky {
namespace {

using namespace dense_test;  // NOLINT: test helpers

// All sentences in one call (one batch); sum and max; every result against the reference.
void ExpectGpuMatchesReference(const DensePcfg& g, const std::vector<std::vector<int>>& sentences) {
  StatusOr<std::unique_ptr<cuda::DenseInsideGpu>> gpu = CreateDenseInsideGpu(g);
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  double largest_error = 0;
  for (bool viterbi : {false, true}) {
    std::vector<double> log_probs;
    std::vector<cuda::DenseGpuChart> charts;
    Status status = (*gpu)->Inside(sentences, viterbi, &log_probs, viterbi ? &charts : nullptr);
    ASSERT_TRUE(status.ok()) << status.message();
    ASSERT_EQ(log_probs.size(), sentences.size());
    for (size_t s = 0; s < sentences.size(); ++s) {
      if (sentences[s].empty()) {
        EXPECT_EQ(log_probs[s], -std::numeric_limits<double>::infinity());
        continue;
      }
      const double reference =
          DenseInsideReference(g, sentences[s], viterbi ? DenseSemiring::kMax : DenseSemiring::kSum)
              .SentenceLogProb();
      const double error = RelativeError(log_probs[s], reference);
      largest_error = std::max(largest_error, error);
      EXPECT_LE(error, kRelativeTolerance)
          << (viterbi ? "max" : "sum") << " sentence " << s << " length " << sentences[s].size()
          << ": " << log_probs[s] << " vs reference " << reference;
      if (viterbi) {
        std::vector<std::string> words;
        for (int id : sentences[s]) words.push_back(g.words[id]);
        DenseChart<float> chart = ToDenseChart(std::move(charts[s]));
        ASSERT_EQ(chart.n, static_cast<int>(sentences[s].size()));
        StatusOr<Tree> tree = DenseViterbiTree(g, chart, sentences[s], words);
        ASSERT_TRUE(tree.ok()) << tree.status().message();
        EXPECT_EQ(Leaves(*tree), words);
        EXPECT_LE(RelativeError(TreeLogProb(g, *tree), reference), kRelativeTolerance);
      }
    }
  }
  std::printf("m=%d: largest relative error of the GPU vs the float64 reference: %.3g\n",
              g.num_nonterminals, largest_error);
}

class DenseInsideGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(DenseInsideGpuTest, MatchesTheReferenceForLengths1To60) {
  DensePcfg g = TestGrammar(8, 11, 40);
  std::vector<std::vector<int>> sentences;
  for (int length = 60; length >= 1; --length)
    sentences.push_back(RandomSentence(g, length, length));
  sentences.push_back({});  // an empty line in the middle of a batch
  for (int length = 1; length <= 60; length += 7)
    sentences.push_back(RandomSentence(g, length, 999 + length));
  ExpectGpuMatchesReference(g, sentences);
}

TEST_F(DenseInsideGpuTest, MatchesTheReferenceWith32Nonterminals) {
  DensePcfg g = TestGrammar(32, 5, 100);
  std::vector<std::vector<int>> sentences;
  for (int length : {1, 2, 3, 7, 19, 33, 60})
    sentences.push_back(RandomSentence(g, length, length));
  ExpectGpuMatchesReference(g, sentences);
}

TEST_F(DenseInsideGpuTest, MatchesTheReferenceWithUnevenTiles) {
  // 40 and 13 nonterminals leave partial 32-wide tiles in both products.
  for (int m : {40, 13}) {
    DensePcfg g = TestGrammar(m, 3, 30);
    std::vector<std::vector<int>> sentences;
    for (int length : {1, 2, 5, 17, 26}) sentences.push_back(RandomSentence(g, length, m + length));
    ExpectGpuMatchesReference(g, sentences);
  }
}

TEST_F(DenseInsideGpuTest, MatchesTheReferenceWith128Nonterminals) {
  DensePcfg g = TestGrammar(128, 2, 50);
  std::vector<std::vector<int>> sentences;
  for (int length : {1, 2, 9}) sentences.push_back(RandomSentence(g, length, length));
  ExpectGpuMatchesReference(g, sentences);
}

TEST_F(DenseInsideGpuTest, ManySentencesComeBackInInputOrder) {
  DensePcfg g = TestGrammar(16, 8, 60);
  std::vector<std::vector<int>> sentences;
  std::mt19937_64 random(4);
  for (int s = 0; s < 400; ++s) {
    sentences.push_back(RandomSentence(g, 1 + static_cast<int>(random() % 30), s));
  }
  ExpectGpuMatchesReference(g, sentences);
}

TEST_F(DenseInsideGpuTest, LongSentencesDoNotUnderflow) {
  DensePcfg g = TestGrammar(4, 3, 50);
  ExpectGpuMatchesReference(g, {RandomSentence(g, 200, 1)});
}

TEST(DenseInsideGpuWithoutDevice, CreateFailsCleanly) {
  if (cuda::DeviceAvailable()) GTEST_SKIP() << "a device is present";
  DensePcfg g = TestGrammar(4, 1, 5);
  EXPECT_FALSE(CreateDenseInsideGpu(g).ok());
}

}  // namespace
}  // namespace cky
