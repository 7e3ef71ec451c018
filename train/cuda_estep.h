// The split-merge trainer's E-step on a CUDA device: adapts SplitMergeTrainer's grammar, trees and
// lexical scores to cuda/train/split_merge_estep.h and its counts back to LatentExpectedCounts.
// The CPU reference is SplitMergeTrainer::ReferenceEStep; this takes the same sums in the same
// order (the reference's chunks of trees included), so that the counts differ only where the
// device's exp and log differ from the host's (by an ulp); tests (train/cuda_estep_test.cpp)
// require 1e-9 relative.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "train/latent_pcfg.h"

namespace cky {

class CudaEStep {
 public:
  // Uploads the trees (their structure: symbols, rules, token types). `token_tags`: each token
  // type's tag; trees are summed in `chunks` chunks as the reference does (tree t of N in chunk c
  // when N c / chunks <= t < N (c + 1) / chunks). An error when there is no CUDA device.
  static StatusOr<std::unique_ptr<CudaEStep>> Create(const LatentPcfg& grammar,
                                                     const std::vector<LatentTrainingTree>& trees,
                                                     const std::vector<int32_t>& token_tags,
                                                     int chunks);
  ~CudaEStep();

  // Expected counts and log-likelihood of the trees under `grammar` (whose rules and symbols are
  // those given to Create; substate counts may change) and `lexical` (per token type and substate
  // of its tag, at token_offset). Offsets as SplitMergeTrainer's (one entry per rule plus one).
  StatusOr<LatentExpectedCounts> Run(const LatentPcfg& grammar,
                                     const std::vector<int64_t>& binary_offset,
                                     const std::vector<int64_t>& unary_offset,
                                     const std::vector<int64_t>& token_offset,
                                     const std::vector<double>& lexical);
  // Where the last Run's time went (uploads, kernels, downloads).
  std::string LastRunProfile() const;

 private:
  struct Impl;
  explicit CudaEStep(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cky
