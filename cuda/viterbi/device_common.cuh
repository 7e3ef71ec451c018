// Device helpers that the Viterbi kernel files share (CUDA types: include only from .cu files):
// the cell list and per-span-length arguments every kernel reads, the float atomic max, and the
// presence-mask lookups of kernel 9 and the masks' kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <limits>

#include "cuda/common/device_helpers.cuh"

namespace cky::cuda::viterbi {

constexpr int kThreads = 256;  // block size of every binary kernel; also the virtual-parent size
constexpr float kNegInfF = -std::numeric_limits<float>::infinity();

// Float atomic max by the sign trick: for v >= 0 the IEEE bits order like signed ints, for v < 0
// they order in reverse like unsigned ints, so one native atomic suffices (no CAS loop). -0.0 is
// made +0.0 first (-0.0 has the sign bit but must order as zero). Works on global and shared
// memory.
__device__ __forceinline__ void AtomicMaxFloat(float* address, float value) {
  value = __fadd_rn(value, 0.0f);
  if (value >= 0.0f) {
    atomicMax(reinterpret_cast<int*>(address), __float_as_int(value));
  } else {
    atomicMin(reinterpret_cast<unsigned int*>(address), __float_as_uint(value));
  }
}

// One cell of one span length: which sentence (its first cell in the batch, its length), where.
struct CellItem {
  int base;   // batch-wide index of the sentence's first cell
  int n;      // sentence length
  int start;  // start of the cell's span
  int word;   // batch-wide index of the sentence's first word (lexical rows)
};

struct LevelArgs {
  const float* chart;  // post-unary scores, [cell][state]
  float* pre;          // binary (or lexical) maxima of the current span length, [cell][state]
  const CellItem* items;
  int item_offset;  // first item of this launch
  int span;         // span length being computed
  int num_states;
  // pair-seg-*-a4: the post-unary scores again, each symbol's substates starting at a multiple of
  // 4 floats ([cell][aligned state], row_stride floats a row), for float4 loads; else null.
  const float* aligned_chart;
  int row_stride;
};

__device__ __forceinline__ size_t TargetCell(const LevelArgs& a, const CellItem& it) {
  return size_t(it.base) + ChartCellIndex(it.n, it.start, it.start + a.span);
}

// The split table (kernel 9 with -t; masks.cu's GroupMaskKernel writes it): per item of the span
// length and split point k, a row of SplitTableStride(words) ints: the left cell's presence bits
// (words), the right cell's (words), the left cell, the right cell.
__host__ __device__ constexpr int SplitTableStride(int words) { return 2 * words + 2; }

// Whether a (tile, cell group) may hold a split point with both child symbols (sym = B, C): the
// group's presence masks (GroupMaskKernel) have both bits.
__device__ __forceinline__ bool GroupMayHavePair(const unsigned* left_mask,
                                                 const unsigned* right_mask, int words, int group,
                                                 int2 sym) {
  const unsigned l = __ldg(left_mask + size_t(group) * words + (sym.x >> 5));
  const unsigned r = __ldg(right_mask + size_t(group) * words + (sym.y >> 5));
  return ((l >> (sym.x & 31)) & (r >> (sym.y & 31)) & 1u) != 0;
}

}  // namespace cky::cuda::viterbi
