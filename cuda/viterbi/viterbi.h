// Exhaustive Viterbi CKY inside passes on a CUDA device, in plain C++ (no CUDA types).
//
// The grammar is uploaded once (log-probabilities converted to float); batches of sentences then
// stream through: the caller hands over each sentence's lexical log-scores and gets back the
// sentence's chart, in parser/chart.h's layout (cells by span length, then start; each cell holds
// num_states post-unary float scores, -infinity where a state cannot cover the span)
// (InsideBatch), or only the best tree's nodes, read from the chart on the device (ParseTrees:
// parser/tree_extraction.h's search, in the same order and the same double arithmetic, so the
// trees are the CPU's; only the nodes come back).
//
// Presence masks (exact skipping): after each span length's unary pass, present[cell][symbol] is 1
// where some substate of the symbol has a finite score. Before the binary pass of the next span
// lengths, one bitmask per group of G cells and side (the OR over the group's cells and split
// points of the left, resp. right, child cells' presence) lets kernel 9 skip a (tile, cell group)
// whose left symbol B or right symbol C is absent from every such child cell before it loads
// anything. SentenceRef::allowed is the input a caller can add to this (coarse-to-fine pruning):
// a per-cell, per-symbol mask ANDed into the presence flags and the scores (a symbol not allowed
// in a cell gets -infinity there), which makes the pass pruned, no longer exhaustive.
// (parser/cuda_backend.h passes none yet: SentenceInput carries no mask.)
//
// The recurrence is parser/viterbi_reference.h's: per span length, a binary pass (each kernel
// variant below computes pre[A] = max over rules A -> B C and split points of
// rule + chart[left][B] + chart[right][C]), then a unary pass on the device,
// chart[A] = max(pre[A], max_u unary(A -> B) + pre[B]). Scores are floats; the adapter compares
// trees to the double-precision reference within the extraction's relative tolerance (1e-5).
//
// Kernel variants: one registry (variants.h: each name and its kernel family's policy) that
// ViterbiKernels() lists, the default first; cuda/README.md says what each kernel does and in
// which file it lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/common/grammar_view.h"

namespace cky::cuda {

// The kernel families: Yi et al.'s rule mappings (kernels 1-6), then the child-pair kernels 7-9.
enum class ViterbiKernelFamily { kPaper, kPairFused, kPairAcc, kPairSeg };

// One registered kernel variant.
struct ViterbiKernelInfo {
  std::string name;         // what DeviceViterbiOptions::kernel (and `--kernel`) takes
  std::string description;  // one line
  ViterbiKernelFamily family = ViterbiKernelFamily::kPairSeg;
  // The production path (the default); the others are research variants, kept for measurement.
  bool production = false;
};

// Every registered variant; the first is the default, the production variant (bench/RESULTS.md).
const std::vector<ViterbiKernelInfo>& ViterbiKernels();
// Their names, in the same order.
std::vector<std::string> ViterbiKernelNames();

struct DeviceViterbiOptions {
  std::string kernel;  // "" = default
  // Device bytes a batch may use; 0 = 85% of the free memory at creation.
  size_t max_batch_bytes = 0;
};

// One sentence of a batch: its length and its lexical log-scores (length x num_states, row-major,
// as parser/viterbi_reference.h's LexicalScores).
struct SentenceRef {
  int32_t length = 0;
  const double* lexical = nullptr;
  // Optional: Chart::NumCells(length) x num_symbols bytes in chart cell order, 0 = the symbol is
  // pruned from the cell (its states get -infinity after the cell's unary pass), else allowed.
  // Null = every symbol allowed (exact).
  const uint8_t* allowed = nullptr;
};

// One node of a tree read on the device, in preorder (a node, then its children's subtrees left to
// right). kind: kBinary (two children follow), kUnary (one child follows), kPreterminal (its child
// is the word at `start`). score: the state's chart score over [start, end).
struct DeviceTreeNode {
  enum Kind : int32_t { kPreterminal = 0, kUnary = 1, kBinary = 2 };
  int32_t state = 0;
  int16_t start = 0, end = 0;
  float score = 0;
  int32_t kind = kPreterminal;
};

// One sentence of ParseTrees: its tree (kTree), no parse (the root's score is -infinity), or its
// whole chart (kChart: the device search did not finish, e.g. a one-word phrasal node without a
// unary to a tag, no rule reproducing a score, or the node buffer full; the caller extracts on the
// host, which gives the same result or the same error as the CPU).
struct DeviceTree {
  enum Status { kTree, kNoParse, kChart } status = kNoParse;
  std::vector<DeviceTreeNode> nodes;
  std::vector<float> chart;  // kChart only
};

// Device bytes one sentence of `length` words needs in a batch: chart and binary maxima (floats),
// symbol presence flags, lexical rows and the cell list.
// (DeviceViterbi::BytesForSentence adds the -a4 kernels' aligned chart copy to this.)
inline size_t BatchBytesForSentence(int32_t num_states, int32_t num_symbols, int32_t length) {
  const size_t cells = static_cast<size_t>(length) * (length + 1) / 2;
  return cells * num_states * sizeof(float) * 2 + cells * num_symbols +
         static_cast<size_t>(length) * num_states * sizeof(float) + cells * 16;
}

enum class BatchResult { kOk, kOutOfMemory, kFailed };

class DeviceViterbi {
 public:
  virtual ~DeviceViterbi() = default;
  // Uploads the grammar. Returns null and sets *error when there is no device, the kernel name is
  // unknown, or the grammar does not fit.
  static std::unique_ptr<DeviceViterbi> Create(const GrammarView& grammar,
                                               const DeviceViterbiOptions& options,
                                               std::string* error);

  virtual const std::string& kernel() const = 0;
  // Device bytes one sentence of `length` words needs in a batch.
  virtual size_t BytesForSentence(int32_t length) const = 0;
  // The batch budget in bytes (options.max_batch_bytes or the default).
  virtual size_t BatchBudget() const = 0;

  // Measuring: when on, InsideBatch times its phases with CUDA events (device time of uploads and
  // fills, binary passes, unary passes, the chart copy back) and the call's host wall time;
  // ProfileReport() sums them over the calls since profiling was turned on.
  virtual void SetProfiling(bool on) = 0;
  virtual std::string ProfileReport() const = 0;

  // Runs the inside pass for every sentence of the batch (lengths >= 1). On kOk, (*charts)[i]
  // points to sentence i's chart (Chart::NumCells(length) * num_states floats), valid until the
  // second next call (two host buffers alternate, so a caller can read one batch's charts while the
  // device computes the next). kOutOfMemory: the device could not hold the batch (nothing was
  // computed; split it and retry).
  virtual BatchResult InsideBatch(const std::vector<SentenceRef>& batch,
                                  std::vector<const float*>* charts, std::string* error) = 0;

  // Whether ParseTrees works here (the grammar arrays came with the extraction's inputs).
  virtual bool SupportsTrees() const { return false; }
  // The inside pass and the best trees, read on the device: (*trees)[i] is sentence i's. Same
  // failure contract as InsideBatch; the chart stays on the device.
  virtual BatchResult ParseTrees(const std::vector<SentenceRef>& batch,
                                 std::vector<DeviceTree>* trees, std::string* error) {
    (void)batch, (void)trees;
    *error = "this device backend reads no trees";
    return BatchResult::kFailed;
  }
  // Presence statistics for the bench: when on, each batch also counts, per span length w (index
  // w), the symbols present per cell, and the share of (tile, cell group) iterations of kernel 9
  // that the group masks skip (extra kernels after the batch: not for timed runs). The two
  // getters average over the batches since it was turned on.
  virtual void SetPresenceStats(bool on) { (void)on; }
  virtual std::vector<double> PresentSymbolsBySpan() const { return {}; }
  virtual std::vector<double> SkippedGroupsBySpan() const { return {}; }
};

}  // namespace cky::cuda
