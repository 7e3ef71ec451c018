// The CUDA E-step against the CPU reference (SplitMergeTrainer::ReferenceEStep): expected counts
// and log-likelihood within train/cuda_estep.h's tolerance on tiny trees and on GUM training trees
// after 1-3 splits (with smoothing, after a merge); the log-likelihood never decreases within a
// cycle with the device's E-step; the cpu and cuda backends train the same grammar. Skips without
// a CUDA device (the GUM test also without $CKY_SHARED_DIR/treebanks/gum). The backend choice is
// tested without a device too.
#include "train/cuda_estep.h"

#include <gtest/gtest.h>

#include <cmath>

#include "cuda/common/device.h"
#include "train/split_merge_test_util.h"

namespace cky {
namespace {

// train/cuda_estep.h's tolerance: relative, |x - y| <= 1e-9 (|x| + |y|); values both below 1e-250
// count as equal (their rounding is subnormal).
constexpr double kTolerance = 1e-9;

struct Difference {
  double relative = 0;  // the largest |x - y| / (|x| + |y|) seen
  int failures = 0;
};

void Compare(const std::vector<double>& cpu, const std::vector<double>& gpu, const char* what,
             Difference* diff) {
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double x = cpu[i], y = gpu[i];
    if (x == y || (std::abs(x) < 1e-250 && std::abs(y) < 1e-250)) continue;
    const double relative = std::abs(x - y) / (std::abs(x) + std::abs(y));
    diff->relative = std::max(diff->relative, relative);
    if (!(relative <= kTolerance) && diff->failures++ < 10) {
      ADD_FAILURE() << what << " " << i << ": cpu " << x << ", cuda " << y;
    }
  }
}

// Both E-steps of `trainer` agree; returns the largest relative difference.
double ExpectSameEStep(const SplitMergeTrainer& trainer, const std::string& where) {
  SCOPED_TRACE(where);
  const SplitMergeTrainer::ExpectedCounts cpu = trainer.ReferenceEStep();
  StatusOr<SplitMergeTrainer::ExpectedCounts> gpu = trainer.DeviceEStep();
  EXPECT_TRUE(gpu.ok()) << gpu.status().message();
  if (!gpu.ok()) return INFINITY;
  Difference diff;
  Compare(cpu.binary, gpu->binary, "binary", &diff);
  Compare(cpu.unary, gpu->unary, "unary", &diff);
  Compare(cpu.token, gpu->token, "token", &diff);
  EXPECT_EQ(cpu.unparsable, gpu->unparsable);
  EXPECT_NEAR(cpu.log_likelihood, gpu->log_likelihood,
              kTolerance * std::abs(cpu.log_likelihood));
  const double ll_diff = std::abs(cpu.log_likelihood - gpu->log_likelihood) /
                         std::max(1e-300, std::abs(cpu.log_likelihood));
  std::printf("%s: largest relative difference of a count %.3g, of the log-likelihood %.3g\n",
              where.c_str(), diff.relative, ll_diff);
  return diff.relative;
}

SplitMergeOptions CudaOptions() {
  SplitMergeOptions options;
  options.backend = EStepBackend::kCuda;
  options.threads = 2;
  return options;
}

#define SKIP_WITHOUT_DEVICE() \
  if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device"

TEST(CudaEStep, BackendChoice) {
  SplitMergeOptions options;
  options.backend = EStepBackend::kAuto;
  auto automatic = MakeTrainer(Trees(kTinyTrees), options);
  ASSERT_TRUE(automatic);
  options.backend = EStepBackend::kCuda;
  auto cuda = SplitMergeTrainer::Create(Trees(kTinyTrees), options);
  options.backend = EStepBackend::kCpu;
  auto cpu = MakeTrainer(Trees(kTinyTrees), options);
  EXPECT_EQ(cpu->estep_backend(), "cpu");
  EXPECT_FALSE(cpu->DeviceEStep().ok());
  if (cuda::DeviceAvailable()) {
    EXPECT_EQ(automatic->estep_backend(), "cuda");
    EXPECT_TRUE(cuda.ok()) << cuda.status().message();
  } else {
    EXPECT_EQ(automatic->estep_backend(), "cpu");
    EXPECT_FALSE(automatic->estep_note().empty());
    ASSERT_FALSE(cuda.ok());
    EXPECT_NE(cuda.status().message().find("CUDA"), std::string::npos);
  }
}

TEST(CudaEStep, EqualsTheCpuEStepOnTinyTrees) {
  SKIP_WITHOUT_DEVICE();
  SplitMergeOptions options = CudaOptions();
  options.rare_word_threshold = 1;
  options.randomness = 20;
  auto trainer = MakeTrainer(Trees(kTinyTrees), options);
  ASSERT_TRUE(trainer);
  ExpectSameEStep(*trainer, "tiny, baseline");
  for (int split = 1; split <= 3; ++split) {
    trainer->Split();
    trainer->EmIteration();
    ExpectSameEStep(*trainer, "tiny, " + std::to_string(split) + " splits");
  }
  trainer->SetSmoothing(true);
  trainer->EmIteration();
  ExpectSameEStep(*trainer, "tiny, smoothed");
  auto synthetic = MakeTrainer(SyntheticTrees(300, 7), options);
  ASSERT_TRUE(synthetic);
  for (int split = 1; split <= 2; ++split) {
    synthetic->Split();
    for (int it = 0; it < 3; ++it) synthetic->EmIteration();
    ExpectSameEStep(*synthetic, "synthetic, " + std::to_string(split) + " splits");
  }
  synthetic->Merge();
  ExpectSameEStep(*synthetic, "synthetic, merged");
}

TEST(CudaEStep, EqualsTheCpuEStepOnGumTrees) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<Tree> trees = GumTrainTrees(400);
  if (trees.empty()) GTEST_SKIP() << "no GUM treebank under " << SharedDataDir();
  SplitMergeOptions options = CudaOptions();
  auto trainer = MakeTrainer(trees, options);
  ASSERT_TRUE(trainer);
  ExpectSameEStep(*trainer, "GUM, baseline");
  for (int cycle = 1; cycle <= 3; ++cycle) {
    trainer->Split();
    for (int it = 0; it < 4; ++it) trainer->EmIteration();
    ExpectSameEStep(*trainer, "GUM, cycle " + std::to_string(cycle) + " split");
    trainer->Merge();
    trainer->EmIteration();
    trainer->SetSmoothing(true);
    trainer->EmIteration();
    ExpectSameEStep(*trainer, "GUM, cycle " + std::to_string(cycle) + " merged, smoothed");
  }
  std::printf("GUM: %zu trees, %lld substates\n", trainer->trees().size(),
              static_cast<long long>(trainer->total_substates()));
}

TEST(CudaEStep, LogLikelihoodNeverDecreasesWithinACycle) {
  SKIP_WITHOUT_DEVICE();
  SplitMergeOptions options = CudaOptions();
  options.rare_word_threshold = 0;  // the rare-word tying is not part of the EM objective
  auto trainer = MakeTrainer(SyntheticTrees(300, 7), options);
  ASSERT_TRUE(trainer);
  ASSERT_EQ(trainer->estep_backend(), "cuda");
  for (int cycle = 0; cycle < 2; ++cycle) {
    trainer->Split();
    double previous = -INFINITY;
    for (int it = 0; it < 12; ++it) {
      const double ll = trainer->EmIteration();
      // As on the CPU (split_merge_trainer_test.cpp): monotone up to the 1e-4 mixing of the
      // noSmoothing lexicon formula.
      EXPECT_GE(ll, previous - 1e-6 * std::abs(previous)) << "cycle " << cycle << " it " << it;
      previous = ll;
    }
    trainer->Merge();
    previous = -INFINITY;
    for (int it = 0; it < 8; ++it) {
      const double ll = trainer->EmIteration();
      EXPECT_GE(ll, previous - 1e-6 * std::abs(previous)) << "merge, cycle " << cycle;
      previous = ll;
    }
  }
  EXPECT_EQ(trainer->estep_backend(), "cuda") << trainer->estep_note();
}

TEST(CudaEStep, CpuAndCudaTrainTheSameGrammar) {
  SKIP_WITHOUT_DEVICE();
  SplitMergeOptions options;
  options.cycles = 2;
  options.split_iterations = 8;
  options.merge_iterations = 4;
  options.smooth_iterations = 3;
  options.threads = 2;
  const std::vector<Tree> trees = SyntheticTrees(300, 11);
  auto cpu = MakeTrainer(trees, options);
  options.backend = EStepBackend::kCuda;
  auto gpu = MakeTrainer(trees, options);
  ASSERT_TRUE(cpu && gpu);
  ASSERT_TRUE(cpu->Train().ok());
  ASSERT_TRUE(gpu->Train().ok());
  EXPECT_EQ(gpu->estep_backend(), "cuda") << gpu->estep_note();
  const LatentPcfg& a = cpu->grammar();
  const LatentPcfg& b = gpu->grammar();
  ASSERT_EQ(a.num_substates, b.num_substates);
  // Rules and lexical scores within a tolerance of 1e-9, after 2 cycles of EM (34 E-steps).
  Difference diff;
  for (size_t i = 0; i < a.binaries.size(); ++i) {
    Compare(a.binaries[i].probs, b.binaries[i].probs, "binary rule", &diff);
  }
  for (size_t i = 0; i < a.unaries.size(); ++i) {
    Compare(a.unaries[i].probs, b.unaries[i].probs, "unary rule", &diff);
  }
  for (int32_t t = 0; t < cpu->num_tokens(); ++t) {
    Compare(cpu->TokenScores(t, false), gpu->TokenScores(t, false), "lexical score", &diff);
  }
  std::printf("trained grammars: largest relative difference %.3g\n", diff.relative);
}

}  // namespace
}  // namespace cky
