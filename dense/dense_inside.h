// Inside (sum-product) and Viterbi (max-product) charts of dense PCFGs on the CPU, after Johnson
// (2011): the baseline CKY loop order (his Figure 1), the factored algorithm (Figure 2: first
// BC[b,c] = sum_j C[i,j,b] C[j,k,c] over the split points j, then C[i,k,a] = sum_bc R[a,b,c]
// BC[b,c]), and their multi-core parallelisations. The GPU version is
// cuda/dense/dense_inside_device.h.
//
// Scaling: every chart cell keeps its own scale, C[i,k,a] = value(i,k,a) * exp(log_scale(i,k)),
// with the largest value of a cell equal to 1, so sentences of any length neither underflow nor
// overflow (the paper instead multiplied terminal probabilities by 1e4). When a span combines split
// points of different scales, each split's product is weighted by exp(its scale - the largest).
// Replacing the sums by max gives the Viterbi chart, whose cell (i,k,a) is the probability of the
// best subtree of A_a over words i..k-1.
#pragma once

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "cuda/dense/dense_inside_device.h"
#include "dense/dense_pcfg.h"
#include "treebank/tree.h"

namespace cky {

enum class DenseSemiring { kSum, kMax };

// A scaled chart over a sentence of n words: cells (i, k) with 0 <= i < k <= n.
template <typename T>
struct DenseChart {
  int n = 0;                      // sentence length
  int m = 0;                      // nonterminals
  std::vector<T> values;          // value(i,k,a) at ((i * (n + 1)) + k) * m + a
  std::vector<double> log_scale;  // log_scale(i,k) at i * (n + 1) + k; -inf for an all-zero cell

  void Resize(int length, int nonterminals) {
    n = length;
    m = nonterminals;
    values.assign(static_cast<size_t>(n + 1) * (n + 1) * m, T(0));
    log_scale.assign(static_cast<size_t>(n + 1) * (n + 1), 0.0);
  }
  size_t Cell(int i, int k) const { return static_cast<size_t>(i) * (n + 1) + k; }
  T* CellValues(int i, int k) { return values.data() + Cell(i, k) * m; }
  const T* CellValues(int i, int k) const { return values.data() + Cell(i, k) * m; }
  // log C[i,k,a]: the log inside (or Viterbi) probability of A_a over words i..k-1.
  double LogValue(int i, int k, int a) const {
    const double v = static_cast<double>(CellValues(i, k)[a]);
    return v > 0 ? std::log(v) + log_scale[Cell(i, k)] : -std::numeric_limits<double>::infinity();
  }
  // The sentence's log-likelihood (kSum) or best tree's log-probability (kMax) under start symbol
  // 0; -inf for the empty sentence, which no CNF grammar generates.
  double SentenceLogProb() const {
    return n == 0 ? -std::numeric_limits<double>::infinity() : LogValue(0, n, 0);
  }
};

// THE REFERENCE: float64, the baseline loop order, plain loops, one thread. Every faster variant
// (CPU and GPU) is tested against it; it is never tuned. Word ids must be < vocabulary size.
DenseChart<double> DenseInsideReference(const DensePcfg& grammar, const std::vector<int>& word_ids,
                                        DenseSemiring semiring);

enum class DenseAlgorithm { kBaseline, kFactored };

// The paper's parallelisations (Table 1): kOuter parallelises the loops over spans (baseline: the
// span start i and parent a; factored: i, with a private BC per thread); kInner the loops inside a
// span (baseline: split points j with per-thread partial sums; factored: rows b of BC, then
// parents a of the rule contraction); kBoth every loop but the span width, with no atomics
// (partial results per (i, j) or (i, b-block), combined afterwards).
enum class DenseParallelism { kSerial, kOuter, kInner, kBoth };

const char* DenseAlgorithmName(DenseAlgorithm algorithm);
const char* DenseParallelismName(DenseParallelism parallelism);

// The fast CPU variants, in float32 (like the paper). Holds float copies of the grammar and a pool
// of worker threads (common/thread_pool.h) for the parallel variants. One Inside call at a time
// per object.
class DenseInsideCpu {
 public:
  // num_threads <= 0 means ThreadPool::DefaultThreads() (the cores this process may run on).
  DenseInsideCpu(const DensePcfg& grammar, int num_threads);
  ~DenseInsideCpu();
  DenseInsideCpu(const DenseInsideCpu&) = delete;
  DenseInsideCpu& operator=(const DenseInsideCpu&) = delete;

  int num_threads() const;
  int num_nonterminals() const;

  DenseChart<float> Inside(const std::vector<int>& word_ids, DenseSemiring semiring,
                           DenseAlgorithm algorithm, DenseParallelism parallelism);

  // Parallel across sentences: each worker runs the serial factored algorithm on whole sentences.
  // Returns each sentence's SentenceLogProb(), in order.
  std::vector<double> SentenceLogProbsAcrossSentences(
      const std::vector<std::vector<int>>& sentences, DenseSemiring semiring);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The best tree of a Viterbi chart (DenseSemiring::kMax): labels "A<a>", the root is A0, leaves
// are `words` (the sentence as written, so unknown words keep their spelling). Each node takes the
// (split j, left b, right c) maximising log R[a,b,c] + log C[i,j,b] + log C[j,k,c], recomputed in
// float64 from the chart; the first in increasing (j, b, c) order wins exact ties. Each node's
// score is its chart log value; the root's is the best tree's log probability. Fails when the
// sentence is empty or has no parse (a zero root cell).
template <typename T>
StatusOr<Tree> DenseViterbiTree(const DensePcfg& grammar, const DenseChart<T>& viterbi_chart,
                                const std::vector<int>& word_ids,
                                const std::vector<std::string>& words);

// The GPU path (cuda/dense/dense_inside_device.h) for this grammar, in float32; fails without a
// CUDA device.
StatusOr<std::unique_ptr<cuda::DenseInsideGpu>> CreateDenseInsideGpu(const DensePcfg& grammar);

// A chart copied back from the GPU, as a CPU chart (same layout).
DenseChart<float> ToDenseChart(cuda::DenseGpuChart&& chart);

}  // namespace cky
