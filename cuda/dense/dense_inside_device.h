// Dense PCFG inside (sum-product) and Viterbi (max-product) charts on a CUDA GPU, many sentences
// per launch: Johnson's (2011) factored CKY as two batched products per span width d.
//   1. BC[p] = sum_j w_j C[i,j,:]^T C[j,k,:] for every span p = (sentence, i) of width d in the
//      batch: one small matrix product per span (inner dimension: the d-1 split points).
//   2. C[p, a] = sum_bc R[a, bc] BC[p, bc]: one matrix product over all spans of width d at once,
//      [spans x m^2] times [m^2 x m].
// then a per-cell rescale. Chart cells carry their own scale exactly as in dense/dense_inside.h
// (value * exp(log_scale), largest value 1), so long sentences do not underflow; in the max
// semiring the sums become max. Arithmetic is float32 on the CUDA cores (no tensor cores); scales
// are float64. Plain C++ interface: no CUDA types, usable from any translation unit. Built from
// dense_inside_device.cu, or dense_inside_device_stub.cpp without CUDA (then Create fails: no
// device).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace cky::cuda {

// A chart copied back from the device, in cky::DenseChart<float>'s layout:
// value(i,k,a) at ((i * (n + 1)) + k) * m + a, log_scale(i,k) at i * (n + 1) + k.
struct DenseGpuChart {
  int n = 0;
  int m = 0;
  std::vector<float> values;
  std::vector<double> log_scale;
};

struct DenseGpuStats {
  double seconds = 0;  // wall time of the last call, transfers included
  long levels = 0;     // span widths processed (summed over batches)
  long kernel_launches = 0;
  long batches = 0;
};

class DenseInsideGpu {
 public:
  // Copies the grammar to the device: rules R[a][b][c] (m^3 values) and terminals T[w][a]
  // (vocabulary_size * m values), probabilities. Fails without a usable device.
  static StatusOr<std::unique_ptr<DenseInsideGpu>> Create(int num_nonterminals, int vocabulary_size,
                                                          const std::vector<float>& rules,
                                                          const std::vector<float>& terminals);
  virtual ~DenseInsideGpu() = default;

  // For every sentence (word ids in [0, vocabulary_size)), the log-probability of start symbol 0
  // over the whole sentence: the log-likelihood (viterbi = false) or the best tree's
  // log-probability (viterbi = true); -inf for an empty sentence or one with no parse. Sentences
  // are processed in batches of similar length; results come back in input order. With `charts`
  // non-null, each sentence's chart is copied back too (for tree extraction).
  virtual Status Inside(const std::vector<std::vector<int>>& sentences, bool viterbi,
                        std::vector<double>* log_probs, std::vector<DenseGpuChart>* charts) = 0;

  virtual DenseGpuStats last_stats() const = 0;
};

}  // namespace cky::cuda
