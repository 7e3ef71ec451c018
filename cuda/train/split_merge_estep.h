// The E-step of split-merge EM training (train/split_merge_trainer.h) on a CUDA device, in plain
// C++ (no CUDA types): inside-outside over the substates of every node of every gold training tree,
// then the expected rule, unary and lexical counts and the log-likelihood, all summed on the
// device. The CPU reference is SplitMergeTrainer's E-step (train/split_merge_trainer.cpp,
// InsideOutside and EStep); this computes the same quantities in the same order.
//
// The treebank's structure (nodes, which rule or token type each uses) is uploaded once; every
// E-step uploads the current parameters (rule probabilities and lexical scores in the trainer's
// flat layouts) and copies back the counts.
//
// Passes (split_merge_estep.cu), all over the whole treebank at once:
//   inside   by node height (preterminals 0, a parent 1 + its highest child): one launch per
//            height, a warp per node, lanes over parent substates; each lane sums
//            in[p] = sum_l left[l] sum_r p(p, l, r) right[r] in the reference's order; the
//            node's vector is scaled to a largest value of 1 (warp max), log of the factor kept;
//   outside  by height, from the highest: the warp of a parent node computes its children's
//            outside vectors (a child has one parent) in the reference's order, then scales them;
//   counts   per rule (and per token type), a block per tile of 256 of its (p, l, r) entries: each
//            thread loops over the rule's nodes in treebank order, staged in shared memory, and
//            adds out[p] f in[l] p(p, l, r) in[r] (f = exp(scales - log P(tree))), so that no
//            atomics are needed;
//   log-likelihood per tree from its root, trees that derive nothing counted apart.
//
// Sums and tolerance: every sum is taken in the CPU reference's order. Within a node, the same
// loops; across the treebank, the reference cuts trees into chunks (tree_chunk below) and adds
// each chunk's sum in chunk order: the counts kernels and the log-likelihood keep a per-chunk
// partial in the same way. The kernels are compiled without fused multiply-add contraction, so
// the only differences left come from the device's exp and log (within 1 ulp of the host's) and
// from the host compiler's own contraction (none on x86-64 without -march); the tests
// (train/cuda_estep_test.cpp) require 1e-9 relative per count and log-likelihood.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cky::cuda {

// The training trees and the grammar's structure, fixed for a whole training run.
struct SplitMergeTreebank {
  // Nodes of all trees, tree after tree, each tree's in post-order (children first, root last).
  // left/right: global node indices of the children (-1: none; right -1 for unary and preterminal
  // nodes); rule: binary rule index (binary nodes) or unary rule index (unary nodes); token: token
  // type (preterminals), else -1.
  std::vector<int32_t> symbol, left, right, rule, token;
  std::vector<int32_t> tree_first_node;  // num_trees + 1 entries
  std::vector<int32_t> tree_chunk;       // per tree: its chunk (non-decreasing in tree order)
  // Each rule's symbols, each token type's tag.
  std::vector<int32_t> binary_parent, binary_left, binary_right;
  std::vector<int32_t> unary_parent, unary_child;
  std::vector<int32_t> token_tag;
  int32_t num_symbols = 0;
};

// The current parameters. Offsets have one entry per rule (token type) plus one: rule i's
// probabilities are [p][l][r] (unary: [p][c]) at binary_probs + binary_offset[i]; a token type's
// lexical scores, one per substate of its tag, at lexical + token_offset[t].
struct SplitMergeParameters {
  const int32_t* num_substates = nullptr;  // per symbol
  const int64_t* binary_offset = nullptr;
  const int64_t* unary_offset = nullptr;
  const int64_t* token_offset = nullptr;
  const double* binary_probs = nullptr;
  const double* unary_probs = nullptr;
  const double* lexical = nullptr;
};

// Expected counts in the layouts of SplitMergeParameters.
struct SplitMergeCounts {
  std::vector<double> binary, unary, token;
  double log_likelihood = 0;  // sum over the trees that have a derivation
  int32_t unparsable = 0;     // trees without one (they add no counts)
};

class DeviceSplitMergeEStep {
 public:
  virtual ~DeviceSplitMergeEStep() = default;
  // Uploads the treebank. Null, with *error set, when there is no device or it does not fit.
  static std::unique_ptr<DeviceSplitMergeEStep> Create(const SplitMergeTreebank& treebank,
                                                       std::string* error);
  // One E-step under `parameters`. False, with *error set, when the device failed (out of memory,
  // a symbol with more substates than the kernels allow); *counts is then unspecified.
  virtual bool Run(const SplitMergeParameters& parameters, SplitMergeCounts* counts,
                   std::string* error) = 0;
  // Seconds spent in the last Run: uploads, kernels (inside, outside, counts), downloads.
  virtual std::string LastRunProfile() const = 0;
};

}  // namespace cky::cuda
