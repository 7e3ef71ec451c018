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

// Trained grammars: EM amplifies the E-steps' differences of about 1e-14 while freshly split
// substates break their symmetry (measured on all GUM training trees: 3e-10 relative after the 50
// iterations of the first split phase), so trained grammars are compared within 1e-6.
constexpr double kTrainedTolerance = 1e-6;

void Compare(const std::vector<double>& cpu, const std::vector<double>& gpu, const char* what,
             Difference* diff, double tolerance = kTolerance) {
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double x = cpu[i], y = gpu[i];
    if (x == y || (std::abs(x) < 1e-250 && std::abs(y) < 1e-250)) continue;
    const double relative = std::abs(x - y) / (std::abs(x) + std::abs(y));
    diff->relative = std::max(diff->relative, relative);
    if (!(relative <= tolerance) && diff->failures++ < 10) {
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
  EXPECT_NEAR(cpu.log_likelihood, gpu->log_likelihood, kTolerance * std::abs(cpu.log_likelihood));
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

// `cky train --devices`: the E-step shared over several devices (SplitMergeOptions::devices) equals
// the CPU reference within the same tolerance, on the fake setups of one GPU (two and three shares
// on device 0) and on every GPU of the host when it has several, through splits and EM.
TEST(CudaEStep, SharedOverDevicesEqualsTheCpuEStep) {
  SKIP_WITHOUT_DEVICE();
  std::vector<std::vector<int>> setups = {{0, 0}, {0, 0, 0}};
  const int gpus = cuda::DeviceCount();
  if (gpus >= 2) {
    setups.emplace_back();
    for (int d = 0; d < gpus; ++d) setups.back().push_back(d);
  }
  for (const std::vector<int>& devices : setups) {
    SplitMergeOptions options = CudaOptions();
    options.devices = devices;
    auto trainer = MakeTrainer(SyntheticTrees(300, 7), options);
    ASSERT_TRUE(trainer);
    ASSERT_EQ(trainer->estep_backend(), "cuda") << trainer->estep_note();
    const std::string setup = std::to_string(devices.size()) + " shares, last on device " +
                              std::to_string(devices.back());
    ExpectSameEStep(*trainer, setup + ", baseline");
    for (int split = 1; split <= 2; ++split) {
      trainer->Split();
      for (int it = 0; it < 2; ++it) trainer->EmIteration();
      ExpectSameEStep(*trainer, setup + ", " + std::to_string(split) + " splits");
    }
    EXPECT_NE(trainer->estep_profile().find("device " + std::to_string(devices.back())),
              std::string::npos)
        << trainer->estep_profile();
    EXPECT_EQ(trainer->estep_backend(), "cuda") << trainer->estep_note();
  }
}

TEST(CudaEStep, LogLikelihoodNeverDecreasesWithinACycle) {
  SKIP_WITHOUT_DEVICE();
  SplitMergeOptions options = CudaOptions();
  options.rare_word_threshold = 0;  // the rare-word tying is not part of the EM objective
  auto trainer = MakeTrainer(SyntheticTrees(300, 7), options);
  ASSERT_TRUE(trainer);
  ASSERT_EQ(trainer->estep_backend(), "cuda");
  ExpectLogLikelihoodNeverDecreasesWithinACycle(trainer.get());
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
  // Rules and lexical scores after 2 cycles of EM (30 E-steps).
  Difference diff;
  for (size_t i = 0; i < a.binaries.size(); ++i) {
    Compare(a.binaries[i].probs, b.binaries[i].probs, "binary rule", &diff, kTrainedTolerance);
  }
  for (size_t i = 0; i < a.unaries.size(); ++i) {
    Compare(a.unaries[i].probs, b.unaries[i].probs, "unary rule", &diff, kTrainedTolerance);
  }
  for (int32_t t = 0; t < cpu->num_tokens(); ++t) {
    Compare(cpu->TokenScores(t, false), gpu->TokenScores(t, false), "lexical score", &diff,
            kTrainedTolerance);
  }
  std::printf("trained grammars: largest relative difference %.3g\n", diff.relative);
}

// cpu- and cuda-backed trainers on all GUM training trees, in lockstep through two cycles of the
// real schedule (50 split, 20 merge, 10 smoothing iterations): the same log-likelihood (1e-9),
// the same merges, rules within kTrainedTolerance after every phase (measured: 3e-10), and both
// E-steps equal on the cuda trainer's grammar.
TEST(CudaEStep, CpuAndCudaTrainTogetherOnAllGumTrees) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<Tree> trees = GumTrainTrees(100000);
  if (trees.empty()) GTEST_SKIP() << "no GUM treebank under " << SharedDataDir();
  SplitMergeOptions options;
  options.threads = 4;
  auto cpu = MakeTrainer(trees, options);
  options.backend = EStepBackend::kCuda;
  auto gpu = MakeTrainer(trees, options);
  ASSERT_TRUE(cpu && gpu);
  auto check = [&](const std::string& where) {
    SCOPED_TRACE(where);
    const LatentPcfg& a = cpu->grammar();
    const LatentPcfg& b = gpu->grammar();
    ASSERT_EQ(a.num_substates, b.num_substates);
    Difference rules;
    for (size_t i = 0; i < a.binaries.size(); ++i) {
      Compare(a.binaries[i].probs, b.binaries[i].probs, "binary rule", &rules, kTrainedTolerance);
    }
    for (size_t i = 0; i < a.unaries.size(); ++i) {
      Compare(a.unaries[i].probs, b.unaries[i].probs, "unary rule", &rules, kTrainedTolerance);
    }
    const double estep = ExpectSameEStep(*gpu, where);
    std::printf("%s: rules differ by at most %.3g relative, E-steps by %.3g\n", where.c_str(),
                rules.relative, estep);
  };
  for (int cycle = 1; cycle <= 2; ++cycle) {
    const std::string name = "cycle " + std::to_string(cycle);
    auto phase = [&](const char* what, int iterations) {
      for (int it = 1; it <= iterations; ++it) {
        const double a = cpu->EmIteration(), b = gpu->EmIteration();
        EXPECT_NEAR(a, b, kTolerance * std::abs(a)) << name << " " << what << " " << it;
      }
      check(name + " " + what);
    };
    cpu->Split();
    gpu->Split();
    phase("split", 50);
    cpu->Merge();
    gpu->Merge();
    phase("merge", 20);
    cpu->SetSmoothing(true);
    gpu->SetSmoothing(true);
    phase("smooth", 10);
  }
  EXPECT_EQ(gpu->estep_backend(), "cuda") << gpu->estep_note();
}

}  // namespace
}  // namespace cky
