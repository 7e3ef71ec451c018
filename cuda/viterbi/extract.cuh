// The device tree search's launch (extract.cu), on its own so that other kernel folders of the
// parser (cuda/pruning/pruned_viterbi.cu) read trees from their charts too. For .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "cuda/viterbi/viterbi.h"

namespace cky::cuda::viterbi {

// The node slots a sentence of `length` words gets: room for any tree (n - 1 binary nodes, n
// preterminals, unary chains above them).
inline int TreeNodeSlots(int length) { return 6 * length + 32; }

// A node as the search writes it (ExtractArgs::nodes): state, start | end << 16, the score's float
// bits, kind.
inline DeviceTreeNode UnpackTreeNode(const int4& packed) {
  DeviceTreeNode node;
  node.state = packed.x;
  node.start = static_cast<int16_t>(packed.y & 0xffff);
  node.end = static_cast<int16_t>(packed.y >> 16);
  std::memcpy(&node.score, &packed.z, sizeof(float));
  node.kind = packed.w;
  return node;
}

// extract.cu: the best trees read on the device (ParseTrees), a block per sentence.
struct ExtractArgs {
  const float* chart;
  int num_states;
  const int* sentence_base;    // per sentence: its first cell in the batch
  const int* sentence_length;  // per sentence
  const int* node_offset;      // per sentence + 1: its node slots
  int* node_count;             // out, per sentence: nodes, -1 no parse, -2 extract on the host
  int4* nodes;                 // out: DeviceTreeNode's layout
  const int* bin_begin;
  const int* bin_left;
  const int* bin_right;
  const double* bin_w;
  const int* un_begin;
  const int* un_child;
  const double* un_w;
  const int* state_symbol;
  const unsigned char* phrasal;
  double tolerance;
  // When set, the chart is read from here (doubles: the pruned fine chart of
  // cuda/pruning/pruned_viterbi.cu) instead of `chart`.
  const double* chart_double = nullptr;
};
void LaunchExtractTrees(const ExtractArgs& x, int num_sentences, cudaStream_t stream);
// Loads the tree search's kernel (modules load lazily, at a kernel's first launch otherwise), for
// a caller that first launches it behind long work.
void PrepareExtractTrees();

}  // namespace cky::cuda::viterbi
