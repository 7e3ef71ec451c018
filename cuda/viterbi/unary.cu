// The kernels every variant shares around its binary pass: the batch's fill, span length 1's
// lexical rows, and each span length's unary layer with the cells' presence flags.
#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/viterbi/device_common.cuh"
#include "cuda/viterbi/launch.cuh"

namespace cky::cuda::viterbi {
namespace {

__global__ void FillKernel(float* data, size_t count, float value) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    data[i] = value;
}

// Span length 1: pre = lexical scores.
__global__ void LexicalKernel(LevelArgs a, const float* lexical) {
  const CellItem it = a.items[a.item_offset + blockIdx.x];
  const size_t cell = size_t(it.base) + ChartCellIndex(it.n, it.start, it.start + 1);
  const float* row = lexical + size_t(it.word + it.start) * a.num_states;
  for (int s = threadIdx.x; s < a.num_states; s += blockDim.x)
    a.pre[cell * a.num_states + s] = row[s];
}

// The unary layer of one span length, and the cell's symbol presence flags (ANDed with the
// caller's allowed mask, when there is one: viterbi.h). One block per cell:
// the cell's binary maxima are staged in shared memory, then a warp per parent state reads its
// unary rules coalesced (a thread per state would read each lane's rules from a different line).
// Dynamic shared: num_states floats.
__global__ void UnaryKernel(LevelArgs a, float* chart, const int* __restrict__ unary_begin,
                            const int* __restrict__ unary_child, const float* __restrict__ unary_w,
                            const int* __restrict__ state_symbol, unsigned char* present,
                            int num_symbols, float* aligned_chart,
                            const int* __restrict__ aligned_index,
                            const unsigned char* __restrict__ allowed) {
  extern __shared__ float sh_pre[];
  const CellItem it = a.items[a.item_offset + blockIdx.x];
  const size_t cell = size_t(it.base) + ChartCellIndex(it.n, it.start, it.start + a.span);
  const float* pre = a.pre + cell * a.num_states;
  for (int s = threadIdx.x; s < a.num_states; s += blockDim.x) sh_pre[s] = pre[s];
  __syncthreads();
  float* out = chart + cell * a.num_states;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int s = warp; s < a.num_states; s += blockDim.x / 32) {
    float best = lane == 0 ? sh_pre[s] : kNegInfF;
    const int end = __ldg(unary_begin + s + 1);
    for (int u = __ldg(unary_begin + s) + lane; u < end; u += 32)
      best = fmaxf(best, __ldg(unary_w + u) + sh_pre[__ldg(unary_child + u)]);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      best = fmaxf(best, __shfl_xor_sync(0xffffffffu, best, offset));
    if (lane == 0) {
      // A caller's mask (SentenceRef::allowed) prunes the symbol from the cell.
      if (allowed && !allowed[cell * num_symbols + __ldg(state_symbol + s)]) best = kNegInfF;
      out[s] = best;
      if (aligned_chart) aligned_chart[cell * a.row_stride + __ldg(aligned_index + s)] = best;
      if (best > kNegInfF) present[cell * num_symbols + __ldg(state_symbol + s)] = 1;
    }
  }
}

// UnaryKernel for `per_block` (at most kUnaryCells) consecutive cells of the span length per
// block (the -u variants): each unary rule's child and log-prob are loaded once for the block's
// cells instead of once per cell (115,466 rules, 0.9 MB, per cell on en_sm6s), and each warp
// reduces the cells' maxima together. The same additions and maxima as UnaryKernel. The launch
// picks per_block by the span length's cell count (a launch of few cells keeps one per block, so
// that it still spreads over the SMs). Dynamic shared: per_block x num_states floats.
__global__ void UnaryCellsKernel(LevelArgs a, int count, int per_block, float* chart,
                                 const int* __restrict__ unary_begin,
                                 const int* __restrict__ unary_child,
                                 const float* __restrict__ unary_w,
                                 const int* __restrict__ state_symbol, unsigned char* present,
                                 int num_symbols, float* aligned_chart,
                                 const int* __restrict__ aligned_index,
                                 const unsigned char* __restrict__ allowed) {
  extern __shared__ float sh_pre[];  // [cell][state]
  const int first = blockIdx.x * per_block;
  const int cells = min(per_block, count - first);
  size_t cell[kUnaryCells];
#pragma unroll
  for (int c = 0; c < kUnaryCells; ++c) {
    const CellItem it = a.items[a.item_offset + first + min(c, cells - 1)];
    cell[c] = size_t(it.base) + ChartCellIndex(it.n, it.start, it.start + a.span);
  }
  for (int c = 0; c < cells; ++c)
    for (int s = threadIdx.x; s < a.num_states; s += blockDim.x)
      sh_pre[c * a.num_states + s] = a.pre[cell[c] * a.num_states + s];
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int s = warp; s < a.num_states; s += blockDim.x / 32) {
    float best[kUnaryCells];
#pragma unroll
    for (int c = 0; c < kUnaryCells; ++c)
      best[c] = lane == 0 && c < cells ? sh_pre[c * a.num_states + s] : kNegInfF;
    const int end = __ldg(unary_begin + s + 1);
    for (int u = __ldg(unary_begin + s) + lane; u < end; u += 32) {
      const int child = __ldg(unary_child + u);
      const float w = __ldg(unary_w + u);
#pragma unroll
      for (int c = 0; c < kUnaryCells; ++c)
        if (c < cells) best[c] = fmaxf(best[c], w + sh_pre[c * a.num_states + child]);
    }
#pragma unroll
    for (int c = 0; c < kUnaryCells; ++c)
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1)
        best[c] = fmaxf(best[c], __shfl_xor_sync(0xffffffffu, best[c], offset));
    if (lane < cells) {
      float mine = best[0];
#pragma unroll
      for (int c = 1; c < kUnaryCells; ++c)
        if (lane == c) mine = best[c];
      size_t here = cell[0];
#pragma unroll
      for (int c = 1; c < kUnaryCells; ++c)
        if (lane == c) here = cell[c];
      const int symbol = __ldg(state_symbol + s);
      if (allowed && !allowed[here * num_symbols + symbol]) mine = kNegInfF;
      chart[here * a.num_states + s] = mine;
      if (aligned_chart) aligned_chart[here * a.row_stride + __ldg(aligned_index + s)] = mine;
      if (mine > kNegInfF) present[here * num_symbols + symbol] = 1;
    }
  }
}

}  // namespace

void LaunchFill(float* data, size_t count, float value, int blocks, cudaStream_t stream) {
  FillKernel<<<blocks, 256, 0, stream>>>(data, count, value);
}

void LaunchLexical(const LevelArgs& a, int count, const float* lexical, cudaStream_t stream) {
  LexicalKernel<<<count, 256, 0, stream>>>(a, lexical);
}

void LaunchUnary(const LevelArgs& a, int count, int per_block, const UnaryArgs& u,
                 cudaStream_t stream) {
  if (per_block > 1) {
    UnaryCellsKernel<<<(count + per_block - 1) / per_block, 256,
                       per_block * a.num_states * sizeof(float), stream>>>(
        a, count, per_block, u.chart, u.unary_begin, u.unary_child, u.unary_w, u.state_symbol,
        u.present, u.num_symbols, u.aligned_chart, u.aligned_index, u.allowed);
  } else {
    UnaryKernel<<<count, 256, a.num_states * sizeof(float), stream>>>(
        a, u.chart, u.unary_begin, u.unary_child, u.unary_w, u.state_symbol, u.present,
        u.num_symbols, u.aligned_chart, u.aligned_index, u.allowed);
  }
}

}  // namespace cky::cuda::viterbi
