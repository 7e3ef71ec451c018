// CUDA Viterbi CKY: the kernels (Kernel 1..9, with the device helpers they share), then the host
// side: the variant table (Variants(): every --kernel name, numbered by the kernel it launches),
// dispatch (one launch sequence per batch) and the public API (DeviceViterbi).
#include <cuda_runtime.h>
#include <math_constants.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cuda/common/device_helpers.cuh"
#include "cuda/common/fault_injection.h"
#include "cuda/common/host_parallel.h"
#include "cuda/viterbi/viterbi.h"

namespace cky::cuda {
namespace {

constexpr int kThreads = 256;  // block size of every binary kernel; also the virtual-parent size
constexpr float kNegInfF = -std::numeric_limits<float>::infinity();

// ---------------------------------------------------------------------------------------------
// Device helpers

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
constexpr int kUnaryCells = 4;
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

// Best over split points of (rule + left) + right, the reference's order of additions.
__device__ __forceinline__ float RuleOverSplits(const LevelArgs& a, const CellItem& it, int left,
                                                int right, float w) {
  const int end = it.start + a.span;
  float best = kNegInfF;
  for (int k = it.start + 1; k < end; ++k) {
    const size_t lc = size_t(it.base) + ChartCellIndex(it.n, it.start, k);
    const size_t rc = size_t(it.base) + ChartCellIndex(it.n, k, end);
    best =
        fmaxf(best, (w + a.chart[lc * a.num_states + left]) + a.chart[rc * a.num_states + right]);
  }
  return best;
}

__device__ __forceinline__ size_t TargetCell(const LevelArgs& a, const CellItem& it) {
  return size_t(it.base) + ChartCellIndex(it.n, it.start, it.start + a.span);
}

struct RuleArrays {
  const int* parent;
  const int* left;
  const int* right;
  const float* w;
  int count;
};

// ---------------------------------------------------------------------------------------------
// Kernel 1: thread-based mapping, global atomics. grid = (cells, rule chunks).
__global__ void ThreadAtomicGlobalKernel(LevelArgs a, RuleArrays rules) {
  const int r = blockIdx.y * blockDim.x + threadIdx.x;
  if (r >= rules.count) return;
  const CellItem it = a.items[a.item_offset + blockIdx.x];
  const float best =
      RuleOverSplits(a, it, __ldg(rules.left + r), __ldg(rules.right + r), __ldg(rules.w + r));
  if (best > kNegInfF)
    AtomicMaxFloat(a.pre + TargetCell(a, it) * a.num_states + __ldg(rules.parent + r), best);
}

// Kernel 2: thread-based mapping, shared atomics over the chunk's parent range, then one global
// atomic per parent. grid = (cells, rule chunks); dynamic shared = the widest parent range.
__global__ void ThreadAtomicSharedKernel(LevelArgs a, RuleArrays rules,
                                         const int* __restrict__ chunk_first_parent,
                                         const int* __restrict__ chunk_parent_count) {
  extern __shared__ float sh_pre[];
  const int first = chunk_first_parent[blockIdx.y];
  const int count = chunk_parent_count[blockIdx.y];
  for (int i = threadIdx.x; i < count; i += blockDim.x) sh_pre[i] = kNegInfF;
  __syncthreads();
  const CellItem it = a.items[a.item_offset + blockIdx.x];
  const int r = blockIdx.y * blockDim.x + threadIdx.x;
  if (r < rules.count) {
    const float best =
        RuleOverSplits(a, it, __ldg(rules.left + r), __ldg(rules.right + r), __ldg(rules.w + r));
    if (best > kNegInfF) AtomicMaxFloat(sh_pre + (__ldg(rules.parent + r) - first), best);
  }
  __syncthreads();
  float* pre = a.pre + TargetCell(a, it) * a.num_states + first;
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    if (sh_pre[i] > kNegInfF) AtomicMaxFloat(pre + i, sh_pre[i]);
}

struct VirtualParents {
  const int* parent;
  const int* begin;
  const int* end;  // end - begin <= kThreads
};

// Kernel 3: block-based mapping (one block per virtual parent), shared atomic max.
__global__ void BlockAtomicSharedKernel(LevelArgs a, RuleArrays rules, VirtualParents vp) {
  __shared__ float sh_best;
  if (threadIdx.x == 0) sh_best = kNegInfF;
  __syncthreads();
  const CellItem it = a.items[a.item_offset + blockIdx.x];
  const int r = __ldg(vp.begin + blockIdx.y) + threadIdx.x;
  if (r < __ldg(vp.end + blockIdx.y)) {
    const float best =
        RuleOverSplits(a, it, __ldg(rules.left + r), __ldg(rules.right + r), __ldg(rules.w + r));
    if (best > kNegInfF) AtomicMaxFloat(&sh_best, best);
  }
  __syncthreads();
  // Virtual parents of one parent merge here.
  if (threadIdx.x == 0 && sh_best > kNegInfF)
    AtomicMaxFloat(a.pre + TargetCell(a, it) * a.num_states + __ldg(vp.parent + blockIdx.y),
                   sh_best);
}

// Tree-shaped max over the block (blockDim.x == kThreads) into sh[0].
__device__ __forceinline__ void BlockTreeMax(float* sh) {
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + stride]);
    __syncthreads();
  }
}

// Kernel 4: block-based mapping, tree-shaped parallel reduction. Kernel 6 (block-reduce-seq) is
// this kernel with spans in sequence: LaunchBinary launches it once per start position.
__global__ void BlockReduceKernel(LevelArgs a, RuleArrays rules, VirtualParents vp) {
  __shared__ float sh[kThreads];
  const CellItem it = a.items[a.item_offset + blockIdx.x];
  const int r = __ldg(vp.begin + blockIdx.y) + threadIdx.x;
  float best = kNegInfF;
  if (r < __ldg(vp.end + blockIdx.y))
    best = RuleOverSplits(a, it, __ldg(rules.left + r), __ldg(rules.right + r), __ldg(rules.w + r));
  sh[threadIdx.x] = best;
  __syncthreads();
  BlockTreeMax(sh);
  if (threadIdx.x == 0 && sh[0] > kNegInfF)
    AtomicMaxFloat(a.pre + TargetCell(a, it) * a.num_states + __ldg(vp.parent + blockIdx.y), sh[0]);
}

// Kernel 5: block-reduce with each split's two child cells staged in shared memory
// (sh_scores_L, sh_scores_R). Dynamic shared: 2 * num_states floats.
__global__ void BlockReduceStagedKernel(LevelArgs a, RuleArrays rules, VirtualParents vp) {
  extern __shared__ float sh_scores[];
  float* sh_scores_L = sh_scores;
  float* sh_scores_R = sh_scores + a.num_states;
  __shared__ float sh[kThreads];
  const CellItem it = a.items[a.item_offset + blockIdx.x];
  const int r = __ldg(vp.begin + blockIdx.y) + threadIdx.x;
  const bool has_rule = r < __ldg(vp.end + blockIdx.y);
  int left = 0, right = 0;
  float w = kNegInfF;
  if (has_rule) {
    left = __ldg(rules.left + r);
    right = __ldg(rules.right + r);
    w = __ldg(rules.w + r);
  }
  const int end = it.start + a.span;
  float best = kNegInfF;
  for (int k = it.start + 1; k < end; ++k) {
    const float* lc =
        a.chart + (size_t(it.base) + ChartCellIndex(it.n, it.start, k)) * a.num_states;
    const float* rc = a.chart + (size_t(it.base) + ChartCellIndex(it.n, k, end)) * a.num_states;
    __syncthreads();
    for (int s = threadIdx.x; s < a.num_states; s += blockDim.x) {
      sh_scores_L[s] = lc[s];
      sh_scores_R[s] = rc[s];
    }
    __syncthreads();
    if (has_rule) best = fmaxf(best, (w + sh_scores_L[left]) + sh_scores_R[right]);
  }
  sh[threadIdx.x] = best;
  __syncthreads();
  BlockTreeMax(sh);
  if (threadIdx.x == 0 && sh[0] > kNegInfF)
    AtomicMaxFloat(a.pre + TargetCell(a, it) * a.num_states + __ldg(vp.parent + blockIdx.y), sh[0]);
}

// Kernels 7-9 (pair-fused-gG, pair-acc-gG, pair-seg-gG) work per child pair tile and G cells of one
// span length. A tile is a base child pair (B, C), or a band of B's substates when B x C has more
// substate pairs than the band limit (512, or 1024 for the -wide, pair-seg variants) (the "virtual
// pair", as virtual parents split a big parent), so that G tiles of maxima fit in shared memory
// with full occupancy. The three kernels share their phases through the device helpers below:
// gather the usable split points of a group of G cells (GatherSplits), take the max over split
// points per substate pair (SplitMaxima), then add each rule's log-prob per parent (WarpRuleMaxima
// for kernels 7 and 8, SegRulesForCount for kernel 9).
constexpr int kQuad = 4;  // register blocking: a thread computes 4 x 4 substate pairs

struct PairArrays {
  const int4*
      info;  // per tile: first B state of the band, band rows, C's first state, C's substates
  const int2* symbols;       // per tile: B, C (symbols, for the presence flags)
  const int* pl_begin;       // per tile: its parent states [pl_begin[p], pl_begin[p + 1])
  const int* pl_parent;      // per parent-of-tile: the parent state
  const int* pl_rule_begin;  // per parent-of-tile: its rules [.., ..) in key/w
  const int* key;            // per rule: b * sC + c (b relative to the band)
  const float* w;            // per rule: log-prob
  const int* class_pairs;    // the tiles of this launch's size class
};

// One tile as the kernels read it: PairArrays::info and ::symbols, and the 4 x 4 blocks of
// substate pairs that cover its band.
struct PairTile {
  int4 info;
  int2 sym;
  int s_c;         // C's substates
  int quads;       // blocks of kQuad of C's substates
  int band_items;  // kQuad x kQuad blocks of the band
};

__device__ __forceinline__ PairTile LoadPairTile(const PairArrays& pairs, int pair) {
  PairTile t;
  t.info = __ldg(pairs.info + pair);
  t.sym = __ldg(pairs.symbols + pair);
  t.s_c = t.info.w;
  t.quads = (t.s_c + kQuad - 1) / kQuad;
  t.band_items = ((t.info.y + kQuad - 1) / kQuad) * t.quads;
  return t;
}

// Where the split maxima of substate pair `pair` start in sh_best ([substate pair][G], cell g at
// + g). kPad (kernel 9) adds 4 floats of padding after every 4 pairs, against bank conflicts.
template <int G, bool kPad>
__device__ __forceinline__ int BestOffset(int pair) {
  return kPad ? pair * G + 4 * (pair >> 2) : pair * G;
}
// Floats of sh_best for max_bc substate pairs (BestOffset's padding included, G of them spare).
__host__ __device__ constexpr int BestFloats(int g, int max_bc) {
  return g * max_bc + 4 * ((max_bc + 3) / 4) + g;
}

// Split points where both child symbols are present (sparse-aware skipping): for each cell g of
// the group starting at first_item, the left and right cells of its usable split points go to
// sh_left / sh_right[g * max_splits + slot], their number to sh_count[g], the group's total to
// *sh_total. sh_count and *sh_total must be zero on entry; ends with a barrier.
template <int G>
__device__ __forceinline__ void GatherSplits(const LevelArgs& a, int2 sym,
                                             const unsigned char* present, int num_symbols,
                                             int num_items, int first_item, int max_splits,
                                             int* sh_left, int* sh_right, int* sh_count,
                                             int* sh_total) {
  const int splits = a.span - 1;
  for (int e = threadIdx.x; e < G * splits; e += blockDim.x) {
    const int g = e / splits, k = e % splits;
    if (first_item + g >= num_items) continue;
    const CellItem it = a.items[a.item_offset + first_item + g];
    const int mid = it.start + 1 + k;
    const int lc = it.base + ChartCellIndex(it.n, it.start, mid);
    const int rc = it.base + ChartCellIndex(it.n, mid, it.start + a.span);
    if (present[size_t(lc) * num_symbols + sym.x] && present[size_t(rc) * num_symbols + sym.y]) {
      const int slot = atomicAdd(&sh_count[g], 1);
      sh_left[g * max_splits + slot] = lc;
      sh_right[g * max_splits + slot] = rc;
      atomicAdd(sh_total, 1);
    }
  }
  __syncthreads();
}

template <bool kReadOnly>
__device__ __forceinline__ float LoadScore(const float* p) {
  if constexpr (kReadOnly) {
    return __ldg(p);
  } else {
    return *p;
  }
}

// Read-only loads with an L1 eviction hint (kernel 9's -k options): the rules a block reads again
// for every cell group stay (evict_last), chart rows read once go first (evict_first).
__device__ __forceinline__ int2 LoadRuleKeep(const int2* p) {
  int2 v;
  asm("ld.global.nc.L1::evict_last.v2.s32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}
__device__ __forceinline__ float4 LoadRowOnce(const float* p) {
  float4 v;
  asm("ld.global.nc.L1::evict_first.v4.f32 {%0, %1, %2, %3}, [%4];"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
      : "l"(p));
  return v;
}

// One split point's max-plus update of a thread's 4 x 4 block of substate pairs (b0.., c0..):
// best[i][j] = max(best[i][j], left[b0 + i] + right[c0 + j]). kAligned reads the aligned chart
// copy with two float4 loads; kReadOnly reads the chart through the read-only cache.
template <bool kAligned, bool kReadOnly, bool kOnce = false>
__device__ __forceinline__ void MaxPlusSplit(const LevelArgs& a, const PairTile& t, int left_cell,
                                             int right_cell, int b0, int c0,
                                             float (&best)[kQuad][kQuad]) {
  float l[kQuad], r[kQuad];
  if constexpr (kAligned) {
    // info.x, info.z, b0, c0 and the row stride are multiples of 4: two float4 loads. Lanes past
    // the band or the symbol read the next band or padding; those pairs are not stored.
    const float* lrow = a.aligned_chart + size_t(left_cell) * a.row_stride + t.info.x;
    const float* rrow = a.aligned_chart + size_t(right_cell) * a.row_stride + t.info.z;
    const float4 lv =
        kOnce ? LoadRowOnce(lrow + b0) : __ldg(reinterpret_cast<const float4*>(lrow + b0));
    const float4 rv =
        kOnce ? LoadRowOnce(rrow + c0) : __ldg(reinterpret_cast<const float4*>(rrow + c0));
    l[0] = lv.x, l[1] = lv.y, l[2] = lv.z, l[3] = lv.w;
    r[0] = rv.x, r[1] = rv.y, r[2] = rv.z, r[3] = rv.w;
  } else {
    const float* lrow = a.chart + size_t(left_cell) * a.num_states + t.info.x;
    const float* rrow = a.chart + size_t(right_cell) * a.num_states + t.info.z;
#pragma unroll
    for (int q = 0; q < kQuad; ++q) {
      l[q] = b0 + q < t.info.y ? LoadScore<kReadOnly>(lrow + b0 + q) : kNegInfF;
      r[q] = c0 + q < t.s_c ? LoadScore<kReadOnly>(rrow + c0 + q) : kNegInfF;
    }
  }
#pragma unroll
  for (int i = 0; i < kQuad; ++i)
#pragma unroll
    for (int j = 0; j < kQuad; ++j) best[i][j] = fmaxf(best[i][j], l[i] + r[j]);
}

// Max over split points per substate pair (b, c) of the tile, for each cell g of the group:
// register blocking, a 4 x 4 block of (b, c) per thread (8 loads per 16 max-plus updates), stored
// at sh_best[BestOffset<G, kPad>(b * s_c + c) + g]. kSplitUnroll > 0 unrolls the split loop that
// many times (loads of the next split issued before the max-plus); 0 leaves it to the compiler;
// -1 (aligned rows only) prefetches the next split's rows explicitly.
// Ends with a barrier.
template <int G, int kSplitUnroll, bool kPad, bool kAligned, bool kReadOnly, bool kOnce = false>
__device__ __forceinline__ void SplitMaxima(const LevelArgs& a, const PairTile& t,
                                            const int* sh_left, const int* sh_right,
                                            const int* sh_count, int max_splits, float* sh_best) {
  for (int e = threadIdx.x; e < G * t.band_items; e += blockDim.x) {
    const int g = e / t.band_items, rem = e % t.band_items;
    const int b0 = (rem / t.quads) * kQuad, c0 = (rem % t.quads) * kQuad;
    float best[kQuad][kQuad];
#pragma unroll
    for (int i = 0; i < kQuad; ++i)
#pragma unroll
      for (int j = 0; j < kQuad; ++j) best[i][j] = kNegInfF;
    const int count = sh_count[g];
    const int* left = sh_left + g * max_splits;
    const int* right = sh_right + g * max_splits;
    if constexpr (kSplitUnroll < 0) {
      // Software pipelining (aligned rows): the next split's two float4 loads are issued before
      // the current split's max-plus.
      static_assert(kAligned, "prefetching reads the aligned rows");
      const float* lbase = a.aligned_chart + t.info.x + b0;
      const float* rbase = a.aligned_chart + t.info.z + c0;
      auto load = [&](const float* base, int cell) {
        return __ldg(reinterpret_cast<const float4*>(base + size_t(cell) * a.row_stride));
      };
      if (count > 0) {
        float4 lv = load(lbase, left[0]), rv = load(rbase, right[0]);
        for (int s = 1; s <= count; ++s) {
          float4 next_l = lv, next_r = rv;
          if (s < count) next_l = load(lbase, left[s]), next_r = load(rbase, right[s]);
          const float l[kQuad] = {lv.x, lv.y, lv.z, lv.w}, r[kQuad] = {rv.x, rv.y, rv.z, rv.w};
#pragma unroll
          for (int i = 0; i < kQuad; ++i)
#pragma unroll
            for (int j = 0; j < kQuad; ++j) best[i][j] = fmaxf(best[i][j], l[i] + r[j]);
          lv = next_l, rv = next_r;
        }
      }
    } else if constexpr (kSplitUnroll > 0) {
#pragma unroll kSplitUnroll
      for (int s = 0; s < count; ++s)
        MaxPlusSplit<kAligned, kReadOnly>(a, t, left[s], right[s], b0, c0, best);
    } else {
      for (int s = 0; s < count; ++s)
        MaxPlusSplit<kAligned, kReadOnly, kOnce>(a, t, left[s], right[s], b0, c0, best);
    }
#pragma unroll
    for (int i = 0; i < kQuad; ++i)
#pragma unroll
      for (int j = 0; j < kQuad; ++j)
        if (b0 + i < t.info.y && c0 + j < t.s_c)
          sh_best[BestOffset<G, kPad>((b0 + i) * t.s_c + c0 + j) + g] = best[i][j];
  }
  __syncthreads();
}

// The rule phase of kernels 7 and 8 for one parent-of-tile pl (a warp): lanes over its rules, G
// cells at once (the G cells' maxima of one substate pair are adjacent: G / 4 vector loads), then
// a warp-wide max. Returns cell `lane`'s maximum to lanes < G, -infinity to the others.
template <int G>
__device__ __forceinline__ float WarpRuleMaxima(const PairArrays& pairs, const float* sh_best,
                                                int pl, int lane) {
  float acc[G];
#pragma unroll
  for (int g = 0; g < G; ++g) acc[g] = kNegInfF;
  const int rule_end = __ldg(pairs.pl_rule_begin + pl + 1);
  for (int r = __ldg(pairs.pl_rule_begin + pl) + lane; r < rule_end; r += 32) {
    const int key = __ldg(pairs.key + r);
    const float w = __ldg(pairs.w + r);
    const float4* best4 = reinterpret_cast<const float4*>(sh_best + key * G);
#pragma unroll
    for (int q = 0; q < G / 4; ++q) {
      const float4 v = best4[q];
      acc[4 * q + 0] = fmaxf(acc[4 * q + 0], w + v.x);
      acc[4 * q + 1] = fmaxf(acc[4 * q + 1], w + v.y);
      acc[4 * q + 2] = fmaxf(acc[4 * q + 2], w + v.z);
      acc[4 * q + 3] = fmaxf(acc[4 * q + 3], w + v.w);
    }
  }
#pragma unroll
  for (int g = 0; g < G; ++g) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      acc[g] = fmaxf(acc[g], __shfl_xor_sync(0xffffffffu, acc[g], offset));
  }
  float mine = kNegInfF;
  if (lane < G) {
#pragma unroll
    for (int g = 0; g < G; ++g)
      if (g == lane) mine = acc[g];
  }
  return mine;
}

// Kernel 7 (pair-fused-gG): a block per tile and run of groups of G cells; each block loops over
// `groups_per_block` groups, so that groups with no usable split point cost a loop iteration, not
// a block. Rules: a warp per parent state of the tile, one global atomic max per parent and cell.
template <int G>
__global__ void __launch_bounds__(kThreads)
    PairFusedKernel(LevelArgs a, PairArrays pairs, const unsigned char* present, int num_symbols,
                    int num_items, int max_splits, int max_bc, int groups_per_block) {
  extern __shared__ float shared[];
  static_assert(G % 4 == 0, "G cells are read as float4");
  float* sh_best = shared;  // [substate pair][G], max_bc * G floats
  int* sh_left = reinterpret_cast<int*>(sh_best + G * max_bc);  // G * max_splits
  int* sh_right = sh_left + G * max_splits;                     // G * max_splits
  __shared__ int sh_count[G];
  __shared__ int sh_total;

  const int pair = __ldg(pairs.class_pairs + blockIdx.y);
  const PairTile tile = LoadPairTile(pairs, pair);
  const int num_groups = (num_items + G - 1) / G;
  const int group_end = min(num_groups, int(blockIdx.x + 1) * groups_per_block);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int pl_first = __ldg(pairs.pl_begin + pair), pl_end = __ldg(pairs.pl_begin + pair + 1);

  for (int group = blockIdx.x * groups_per_block; group < group_end; ++group) {
    const int first_item = group * G;
    __syncthreads();  // the previous group is done with shared memory
    if (threadIdx.x < G) sh_count[threadIdx.x] = 0;
    if (threadIdx.x == 0) sh_total = 0;
    __syncthreads();
    GatherSplits<G>(a, tile.sym, present, num_symbols, num_items, first_item, max_splits, sh_left,
                    sh_right, sh_count, &sh_total);
    if (sh_total == 0) continue;  // uniform: every thread read it before the next barrier
    SplitMaxima<G, 0, false, false, false>(a, tile, sh_left, sh_right, sh_count, max_splits,
                                           sh_best);
    for (int pl = pl_first + warp; pl < pl_end; pl += blockDim.x / 32) {
      const float mine = WarpRuleMaxima<G>(pairs, sh_best, pl, lane);
      if (lane < G && mine > kNegInfF && first_item + lane < num_items) {
        const CellItem it = a.items[a.item_offset + first_item + lane];
        AtomicMaxFloat(a.pre + TargetCell(a, it) * a.num_states + __ldg(pairs.pl_parent + pl),
                       mine);
      }
    }
  }
}

// Kernel 8 (pair-acc-gG): the pair-fused computation with the roles of the grid swapped: a block
// takes one group of G cells and a strided share of all tiles (chunk blockIdx.y of gridDim.y), and
// accumulates its parents' maxima in shared memory ([g][state]) across those tiles; one global
// atomic max per (cell, state) with a finite score then flushes them. The pair-fused kernels issue
// a global atomic per (tile, parent, cell) instead, about 10x more, on the same few addresses.
template <int G>
__global__ void __launch_bounds__(kThreads)
    PairAccKernel(LevelArgs a, PairArrays pairs, const unsigned char* present, int num_symbols,
                  int num_items, int max_splits, int max_bc, int num_tiles) {
  static_assert(G % 4 == 0, "G cells are read as float4");
  extern __shared__ float shared[];
  float* sh_acc = shared;                      // G * num_states
  float* sh_best = sh_acc + G * a.num_states;  // [substate pair][G], max_bc * G floats
  int* sh_left = reinterpret_cast<int*>(sh_best + G * max_bc);  // G * max_splits
  int* sh_right = sh_left + G * max_splits;                     // G * max_splits
  __shared__ int sh_count[G];
  __shared__ int sh_total;

  const int first_item = blockIdx.x * G;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int i = threadIdx.x; i < G * a.num_states; i += blockDim.x) sh_acc[i] = kNegInfF;

  for (int t = blockIdx.y; t < num_tiles; t += gridDim.y) {
    const int pair = __ldg(pairs.class_pairs + t);
    const PairTile tile = LoadPairTile(pairs, pair);
    __syncthreads();  // the previous tile is done with shared memory
    if (threadIdx.x < G) sh_count[threadIdx.x] = 0;
    if (threadIdx.x == 0) sh_total = 0;
    __syncthreads();
    GatherSplits<G>(a, tile.sym, present, num_symbols, num_items, first_item, max_splits, sh_left,
                    sh_right, sh_count, &sh_total);
    if (sh_total == 0) continue;  // uniform
    SplitMaxima<G, 0, false, false, false>(a, tile, sh_left, sh_right, sh_count, max_splits,
                                           sh_best);
    const int pl_end = __ldg(pairs.pl_begin + pair + 1);
    for (int pl = __ldg(pairs.pl_begin + pair) + warp; pl < pl_end; pl += blockDim.x / 32) {
      const float mine = WarpRuleMaxima<G>(pairs, sh_best, pl, lane);
      if (lane < G && mine > kNegInfF)
        AtomicMaxFloat(sh_acc + lane * a.num_states + __ldg(pairs.pl_parent + pl), mine);
    }
  }
  __syncthreads();
  // Flush: one global atomic per (cell, state) with a finite maximum.
  for (int i = threadIdx.x; i < G * a.num_states; i += blockDim.x) {
    const float v = sh_acc[i];
    const int g = i / a.num_states, state = i % a.num_states;
    if (v > kNegInfF && first_item + g < num_items) {
      const CellItem it = a.items[a.item_offset + first_item + g];
      AtomicMaxFloat(a.pre + TargetCell(a, it) * a.num_states + state, v);
    }
  }
}

// Presence masks per cell group (viterbi.h): for the group of G cells starting at item
// group * G of a span length, bit B of left[group][B / 32] is set when symbol B is present in the
// left child cell of some split point of some cell of the group, and likewise right[] for the
// right child cells. Kernel 9 (kMask) skips a (tile, group) whose B or C bit is clear: no split
// point of any of its cells can have both children (exact). grid = groups, block = 256.
// split_table (kernel 9 with kTable; else null): per item of the span length and split point k,
// a row of SplitTableStride(words) ints: the left cell's presence bits (words), the right cell's
// (words), the left cell, the right cell; GatherSplitsTable reads it with loads that depend on
// nothing but (item, k), instead of the item, then its cells' presence bytes.
__host__ __device__ constexpr int SplitTableStride(int words) { return 2 * words + 2; }

__global__ void GroupMaskKernel(LevelArgs a, const unsigned char* __restrict__ present,
                                int num_symbols, int num_items, int group_size, int words,
                                unsigned* left_mask, unsigned* right_mask,
                                unsigned* split_table = nullptr) {
  extern __shared__ unsigned sh_mask[];  // left: words, right: words
  for (int i = threadIdx.x; i < 2 * words; i += blockDim.x) sh_mask[i] = 0;
  __syncthreads();
  const int splits = a.span - 1;
  const int first_item = blockIdx.x * group_size;
  const int cells = min(group_size, num_items - first_item);
  for (int e = threadIdx.x; e < cells * splits * words; e += blockDim.x) {
    const int word = e % words, rest = e / words;
    const int k = rest % splits, g = rest / splits;
    const CellItem it = a.items[a.item_offset + first_item + g];
    const int mid = it.start + 1 + k;
    const size_t lc = size_t(it.base) + ChartCellIndex(it.n, it.start, mid);
    const size_t rc = size_t(it.base) + ChartCellIndex(it.n, mid, it.start + a.span);
    unsigned lbits = 0, rbits = 0;
    const int first = word * 32, last = min(32, num_symbols - first);
    for (int b = 0; b < last; ++b) {
      lbits |= unsigned(present[lc * num_symbols + first + b] != 0) << b;
      rbits |= unsigned(present[rc * num_symbols + first + b] != 0) << b;
    }
    if (split_table) {
      unsigned* row = split_table + (size_t(first_item + g) * splits + k) * SplitTableStride(words);
      row[word] = lbits;
      row[words + word] = rbits;
      if (word == 0) row[2 * words] = unsigned(lc), row[2 * words + 1] = unsigned(rc);
    }
    if (lbits) atomicOr(&sh_mask[word], lbits);
    if (rbits) atomicOr(&sh_mask[words + word], rbits);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < words; i += blockDim.x) {
    left_mask[size_t(blockIdx.x) * words + i] = sh_mask[i];
    right_mask[size_t(blockIdx.x) * words + i] = sh_mask[words + i];
  }
}

__device__ __forceinline__ bool GroupMayHavePair(const unsigned* left_mask,
                                                 const unsigned* right_mask, int words, int group,
                                                 int2 sym) {
  const unsigned l = __ldg(left_mask + size_t(group) * words + (sym.x >> 5));
  const unsigned r = __ldg(right_mask + size_t(group) * words + (sym.y >> 5));
  return ((l >> (sym.x & 31)) & (r >> (sym.y & 31)) & 1u) != 0;
}

// Profiling only: (tile, group) iterations of one span length, and those the masks skip.
__global__ void SkipStatsKernel(const int2* __restrict__ symbols, int tiles, int groups,
                                const unsigned* left_mask, const unsigned* right_mask, int words,
                                unsigned long long* skipped) {
  unsigned long long mine = 0;
  for (long long e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < (long long)tiles * groups;
       e += size_t(gridDim.x) * blockDim.x)
    mine +=
        !GroupMayHavePair(left_mask, right_mask, words, int(e / tiles), __ldg(symbols + e % tiles));
  if (mine) atomicAdd(skipped, mine);
}

// Profiling only: symbols present over the cells of one span length.
__global__ void PresenceStatsKernel(LevelArgs a, const unsigned char* __restrict__ present,
                                    int num_symbols, unsigned long long* count) {
  const CellItem it = a.items[a.item_offset + blockIdx.x];
  const size_t cell = size_t(it.base) + ChartCellIndex(it.n, it.start, it.start + a.span);
  unsigned mine = 0;
  for (int s = threadIdx.x; s < num_symbols; s += blockDim.x)
    mine += present[cell * num_symbols + s];
  if (mine) atomicAdd(count, (unsigned long long)mine);
}

// One rule for kCells adjacent cells: acc[c] = max(acc[c], w + best[c]) (best[] in shared memory,
// 8- or 16-byte aligned for 2 or 4 and more cells).
template <int kCells>
__device__ __forceinline__ void RuleIntoCells(float (&acc)[kCells], float w, const float* best) {
  static_assert(kCells == 1 || kCells == 2 || kCells % 4 == 0);
  if constexpr (kCells == 1) {
    acc[0] = fmaxf(acc[0], w + best[0]);
  } else if constexpr (kCells == 2) {
    const float2 v = *reinterpret_cast<const float2*>(best);
    acc[0] = fmaxf(acc[0], w + v.x);
    acc[1] = fmaxf(acc[1], w + v.y);
  } else {
#pragma unroll
    for (int q = 0; q < kCells / 4; ++q) {
      const float4 v = reinterpret_cast<const float4*>(best)[q];
      acc[4 * q + 0] = fmaxf(acc[4 * q + 0], w + v.x);
      acc[4 * q + 1] = fmaxf(acc[4 * q + 1], w + v.y);
      acc[4 * q + 2] = fmaxf(acc[4 * q + 2], w + v.z);
      acc[4 * q + 3] = fmaxf(acc[4 * q + 3], w + v.w);
    }
  }
}

// Kernel 9 (pair-seg-gG): pair-fused-gG-wide with three fixes of per-(tile, cell group) and
// per-(tile, parent) costs that an instruction count of en_sm6s shows to dominate:
//  - the split maxima are stored to shared memory without bank conflicts of 32 ways: a warp's 32
//    threads store the same cell g of 32 pairs spaced 4 x G floats apart, i.e. all in one bank;
//    the [substate pair][G] layout gets 4 floats of padding after every 4 pairs (BestOffset), so
//    consecutive quads of pairs fall 4 banks apart (4 ways left, float4 alignment kept);
//  - the rule phase splits the warp into R rule slots x 32 / R cell slices (R = 4, 8 or 16 by the
//    parent's rule count in the tile; median 10 rules on en_sm6s): the warp-wide reduction of the
//    wide kernels (5 shuffles for each of G cells, per tile and parent) becomes log2(R) shuffles
//    of G * R / 32 values, and lanes idle on short rule lists drop from 22 of 32 to a few;
//  - each group's target cell offsets are computed once into shared memory.
// kSplitUnroll unrolls the split-point loop (loads of the next split issued before the max-plus);
// kPad = false keeps the conflicting layout (pair-seg-g8-nopad, to measure the padding alone).
template <int G, int R, bool kPad>
__device__ __forceinline__ void SegRules(const PairArrays& pairs, const float* sh_best,
                                         const long long* sh_target, float* pre, int pl,
                                         int rule_begin, int rule_end, int lane) {
  constexpr int kSlices = 32 / R;    // cell slices per warp
  constexpr int kCpl = G / kSlices;  // cells per lane
  static_assert(kCpl * kSlices == G && (kCpl == 1 || kCpl == 2 || kCpl % 4 == 0));
  const int slot = lane % R, slice = lane / R;
  float acc[kCpl];
#pragma unroll
  for (int c = 0; c < kCpl; ++c) acc[c] = kNegInfF;
  for (int r = rule_begin + slot; r < rule_end; r += R) {
    const int key = __ldg(pairs.key + r);
    const float w = __ldg(pairs.w + r);
    RuleIntoCells<kCpl>(acc, w, sh_best + BestOffset<G, kPad>(key) + slice * kCpl);
  }
  // Slots are the low lane bits, so xor offsets below R stay within a cell slice.
#pragma unroll
  for (int offset = R / 2; offset > 0; offset >>= 1)
#pragma unroll
    for (int c = 0; c < kCpl; ++c)
      acc[c] = fmaxf(acc[c], __shfl_xor_sync(0xffffffffu, acc[c], offset));
  if (slot == 0) {
    const int parent = __ldg(pairs.pl_parent + pl);
#pragma unroll
    for (int c = 0; c < kCpl; ++c) {
      const long long target = sh_target[slice * kCpl + c];
      if (acc[c] > kNegInfF && target >= 0) AtomicMaxFloat(pre + target + parent, acc[c]);
    }
  }
}

// R by the rule count (an instruction-count model: iterations of ceil(count / R) against
// log2(R) shuffles of G * R / 32 values).
template <int G, bool kPad>
__device__ __forceinline__ void SegRulesForCount(const PairArrays& pairs, const float* sh_best,
                                                 const long long* sh_target, float* pre, int pl,
                                                 int lane) {
  const int rule_begin = __ldg(pairs.pl_rule_begin + pl);
  const int rule_end = __ldg(pairs.pl_rule_begin + pl + 1);
  const int count = rule_end - rule_begin;
  if constexpr (G == 8) {
    if (count <= 12)
      SegRules<8, 4, kPad>(pairs, sh_best, sh_target, pre, pl, rule_begin, rule_end, lane);
    else if (count <= 40)
      SegRules<8, 8, kPad>(pairs, sh_best, sh_target, pre, pl, rule_begin, rule_end, lane);
    else
      SegRules<8, 16, kPad>(pairs, sh_best, sh_target, pre, pl, rule_begin, rule_end, lane);
  } else {
    static_assert(G == 16, "pair-seg: G is 8 or 16");
    if (count <= 24)
      SegRules<16, 4, kPad>(pairs, sh_best, sh_target, pre, pl, rule_begin, rule_end, lane);
    else if (count <= 96)
      SegRules<16, 8, kPad>(pairs, sh_best, sh_target, pre, pl, rule_begin, rule_end, lane);
    else
      SegRules<16, 16, kPad>(pairs, sh_best, sh_target, pre, pl, rule_begin, rule_end, lane);
  }
}

// Kernel 9's options beyond the split unroll, padding, aligned rows and masks (kExtra bits):
//  - kLaneRules (-r): the rule phase without warp reductions: the tile's rules, grouped by parent,
//    are cut into units of at most kUnitRules rules of one parent (LaneArrays, longest first), and
//    L adjacent lanes take one unit (L = 1, 2, 4 or 8 by the tile's unit count, so that small
//    tiles still use the block), each lane G / L cells: one 8-byte load per rule (the rule's
//    sh_best offset and log-prob), G / L max-plus updates, and at the end one global atomic max
//    per cell and unit. SegRules spends most of its instructions per (tile, parent): two loads of
//    the rule range, shuffles, the slot-0 atomics (median 10 rules per parent and tile).
//  - kSplitPar (-s): P adjacent lanes share one 4 x 4 block of substate pairs and cell, taking
//    every P-th split point, then combine by shuffles (P = 2, 4 or 8 while G x blocks x P fits the
//    block): a small tile's few blocks no longer run their split loops on one or two warps.
//  - kTable (-t): the split gathering reads GroupMaskKernel's split table (the cells of each split
//    point and their presence bits: loads that depend only on (cell, split)) instead of the item
//    and then its cells' presence bytes (a chain of dependent loads).
//  - kQuadPad (-q): the split maxima's substate pairs are numbered b x s_c4 + c with s_c4 = s_c
//    rounded up to 4 (bands of whole 4-row blocks), so that a thread's 4 x 4 block stores its 16
//    maxima unconditionally at 4 row bases + constant offsets, and the (cell, block) of a thread
//    comes from two multiplications instead of four integer divisions. The profile of -rst (one
//    span-10 launch) counted more instructions in the split phase's set-up and stores (1.7 G) than
//    in its split loop (0.5 G).
//  - kPipe (-w): two barriers per cell group instead of four: the split gathering of the block's
//    next group (double-buffered) runs beside the rule phase of the current one, and its
//    initialisation beside the split phase; in the profile, a third of the warps' samples waited
//    at the four barriers.
//  - kAdaptiveUnits (-a, host side only): a tile's units hold at most ceil(rules / 192) rules
//    (4 to 32) instead of 32, so that a small tile's rule phase is not one lane's long loop
//    while the block waits at the next barrier (more units, more atomics).
//  - kKeepRules (-k): the rule loads ask L1 to keep the rules (evict_last), the split loop's
//    chart loads to drop theirs first (evict_first): a block reads its tile's rules again for
//    every cell group, and the chart rows once.
constexpr int kLaneRules = 1, kSplitPar = 2, kTable = 4, kQuadPad = 8, kPipe = 16;
//  - kMultiGroup (-g, with kLaneRules and kTable): a small tile takes up to 4 of its block's cell
//    groups at once (as many as fill the block's 256 threads with 4 x 4 blocks and fit the
//    maxima in shared memory), so that its split loops, rule units and barriers are shared by
//    K groups: in the profiles of -rtq and -rtqw, over 40% of the warps' samples waited at
//    barriers (a median tile has 14 blocks: 112 threads of 256 work in the split phase).
//  - kMin5 (-5): at least 5 blocks per SM (PairSegKernelQuad's launch bounds: 48 registers).
constexpr int kAdaptiveUnits = 32, kKeepRules = 64, kMultiGroup = 128, kMin5 = 256;
//  - kRowOffsets (-o, with kMultiGroup): the split lists hold each child row's 32-bit float
//    offset in the aligned chart (cell x row_stride + the tile's first state) instead of the
//    cell, so the split loop's two addresses are one multiply-add each (the profile of -rtgaku:
//    about 30 integer instructions of 64-bit index arithmetic per two split points, beside 64
//    max-plus ones); and one warp picks the block's next groups by a ballot over 32 groups' masks
//    instead of every thread testing them one by one (10% of the stall samples). The host falls
//    back to the option-less kernel for a batch whose aligned chart has 2^32 floats or more.
//  - kPrefetchSplits (-p, with kRowOffsets): the next split point's two float4 loads are issued
//    before the current one's max-plus (the kernel's registers capped at 64: 4 blocks per SM, as
//    without it). In -rtgaku, the first add after the loads held 16% of the stall samples.
//  - kCpAsync (-c, with kRowOffsets): the same overlap through shared memory: each thread
//    stages its next two split points' rows with cp.async into a ring of two slots of its own
//    (16 KB a block), double-buffered over split points, so that no registers hold loads in
//    flight.
//  - kStageRules (-l, with kMultiGroup): a tile whose units and rules fit in the part of the
//    block's maxima area that its K groups leave unused (the area is sized for the widest tile)
//    copies them there once per block; the rule phase then reads them from shared memory instead
//    of global memory (L1 hits at best) for every group.
//  - kGroupList (-n, with kRowOffsets): the block lists the groups its masks allow 256 at a time
//    (every thread tests one group, warp ballots and counts give each allowed group its place in
//    a shared list, two barriers per 256 groups), and each iteration takes its K groups from the
//    list: no mask loads and no selection loop per iteration. In the profile of -rtgakuop the
//    first barrier of an iteration (where warp 0's selection ends) held 15% of the samples.
constexpr int kRowOffsets = 512, kPrefetchSplits = 1024, kCpAsync = 2048, kStageRules = 4096;
constexpr int kGroupList = 8192;
// -rtgak (with -u, the unary side, the previous default -rtgaku): what -o, -p, -c, -l, -n extend.
constexpr int kRtgak = kLaneRules | kTable | kMultiGroup | kAdaptiveUnits | kKeepRules;
constexpr int kMaxGroupsInFlight = 4;
constexpr int kRingSlots = 2;   // kCpAsync: split points in flight per thread
constexpr int kUnitRules = 32;  // most rules of one lane-rules unit

struct LaneArrays {
  const int4* units;            // per unit: parent state, first rule, end rule (in rules), 0
  const int* unit_begin;        // per tile: its units [unit_begin[t], unit_begin[t + 1])
  const int2* rules;            // per rule: BestOffset<8, true>(key), the log-prob's bits
  const unsigned* split_table;  // kTable: GroupMaskKernel's table of this span length
  int max_k;                    // kMultiGroup: most groups in flight (their split lists fit)
};

// GatherSplits from the split table (kTable): the same split points, cells and counts.
template <int G, bool kSync = true>
__device__ __forceinline__ void GatherSplitsTable(const LevelArgs& a, int2 sym,
                                                  const unsigned* table, int words, int num_items,
                                                  int first_item, int max_splits, int* sh_left,
                                                  int* sh_right, int* sh_count, int* sh_total) {
  const int splits = a.span - 1;
  const int stride = SplitTableStride(words);
  const int lw = sym.x >> 5, rw = words + (sym.y >> 5);
  for (int e = threadIdx.x; e < G * splits; e += blockDim.x) {
    const int g = e / splits;
    if (first_item + g >= num_items) continue;
    const unsigned* row = table + size_t(first_item * splits + e) * stride;
    const unsigned l = __ldg(row + lw), r = __ldg(row + rw);
    const int lc = int(__ldg(row + 2 * words)), rc = int(__ldg(row + 2 * words + 1));
    if ((l >> (sym.x & 31)) & (r >> (sym.y & 31)) & 1u) {
      const int slot = atomicAdd(&sh_count[g], 1);
      sh_left[g * max_splits + slot] = lc;
      sh_right[g * max_splits + slot] = rc;
      atomicAdd(sh_total, 1);
    }
  }
  if constexpr (kSync) __syncthreads();
}

// n / d for 0 <= n < 2^16 and 1 <= d < 2^15 (exact there: checked for every n < 70,000 and
// d < 1,100), with magic = ceil(2^31 / d) from DivMagic: one multiply-high.
__device__ __forceinline__ unsigned DivMagic(unsigned d) { return ((1u << 31) + d - 1) / d; }
__device__ __forceinline__ int DivBy(int n, unsigned magic) {
  return int(__umulhi(unsigned(n) << 1, magic));
}

// SplitMaxima for kQuadPad tiles (aligned rows): substate pair (b, c) at b x s_c4 + c, every
// thread's 16 maxima stored without bounds checks (rows past the band and columns past s_c are
// padding that no rule reads). magic_items, magic_quads: DivMagic(band_items), DivMagic(quads).
template <int G, bool kSync = true, bool kKeep = false>
__device__ __forceinline__ void SplitMaximaQuad(const LevelArgs& a, const PairTile& t,
                                                unsigned magic_items, unsigned magic_quads,
                                                const int* sh_left, const int* sh_right,
                                                const int* sh_count, int max_splits,
                                                float* sh_best) {
  const int s_c4 = t.quads * kQuad;
  const int row_floats = s_c4 * (G + 1);  // BestOffset of pair + s_c4 minus that of pair
  for (int e = threadIdx.x; e < G * t.band_items; e += blockDim.x) {
    const int g = DivBy(e, magic_items), rem = e - g * t.band_items;
    const int qb = DivBy(rem, magic_quads), qc = rem - qb * t.quads;
    const int b0 = qb * kQuad, c0 = qc * kQuad;
    float best[kQuad][kQuad];
#pragma unroll
    for (int i = 0; i < kQuad; ++i)
#pragma unroll
      for (int j = 0; j < kQuad; ++j) best[i][j] = kNegInfF;
    const int count = sh_count[g];
    const int* left = sh_left + g * max_splits;
    const int* right = sh_right + g * max_splits;
    const int loff = t.info.x + b0, roff = t.info.z + c0;
    for (int s = 0; s < count; ++s) {
      const float* lp = a.aligned_chart + (size_t(left[s]) * a.row_stride + loff);
      const float* rp = a.aligned_chart + (size_t(right[s]) * a.row_stride + roff);
      const float4 lv = kKeep ? LoadRowOnce(lp) : __ldg(reinterpret_cast<const float4*>(lp));
      const float4 rv = kKeep ? LoadRowOnce(rp) : __ldg(reinterpret_cast<const float4*>(rp));
      const float l[kQuad] = {lv.x, lv.y, lv.z, lv.w}, r[kQuad] = {rv.x, rv.y, rv.z, rv.w};
#pragma unroll
      for (int i = 0; i < kQuad; ++i)
#pragma unroll
        for (int j = 0; j < kQuad; ++j) best[i][j] = fmaxf(best[i][j], l[i] + r[j]);
    }
    // BestOffset<G, true>(p + j) = p (G + 1) + j G for p = (b0 + i) s_c4 + c0, a multiple of 4.
    float* dst = sh_best + (b0 * s_c4 + c0) * (G + 1) + g;
#pragma unroll
    for (int i = 0; i < kQuad; ++i)
#pragma unroll
      for (int j = 0; j < kQuad; ++j) dst[i * row_floats + j * G] = best[i][j];
  }
  if constexpr (kSync) __syncthreads();
}

// SplitMaxima (aligned rows, padded layout) with P lanes per (cell, 4 x 4 block) (kSplitPar).
// P is the same for the whole block (it depends on the tile and span only). Ends with a barrier.
template <int G>
__device__ __forceinline__ void SplitMaximaPar(const LevelArgs& a, const PairTile& t,
                                               const int* sh_left, const int* sh_right,
                                               const int* sh_count, int max_splits,
                                               float* sh_best) {
  const int units = G * t.band_items;
  int log_p = 0;
  while (log_p < 3 && (units << (log_p + 1)) <= int(blockDim.x) && (2 << log_p) <= a.span - 1)
    ++log_p;
  const int p = 1 << log_p;
  const float* lbase = a.aligned_chart + t.info.x;
  const float* rbase = a.aligned_chart + t.info.z;
  // Uniform trip count: every lane of a warp reaches the shuffles.
  for (int base = 0; base < (units << log_p); base += blockDim.x) {
    const int e = base + threadIdx.x;
    const bool active = e < (units << log_p);
    const int unit = e >> log_p, part = e & (p - 1);
    const int g = unit / t.band_items, rem = unit % t.band_items;
    const int b0 = (rem / t.quads) * kQuad, c0 = (rem % t.quads) * kQuad;
    float best[kQuad][kQuad];
#pragma unroll
    for (int i = 0; i < kQuad; ++i)
#pragma unroll
      for (int j = 0; j < kQuad; ++j) best[i][j] = kNegInfF;
    if (active) {
      const int count = sh_count[g];
      const int* left = sh_left + g * max_splits;
      const int* right = sh_right + g * max_splits;
      for (int s = part; s < count; s += p) {
        const float4 lv =
            __ldg(reinterpret_cast<const float4*>(lbase + size_t(left[s]) * a.row_stride + b0));
        const float4 rv =
            __ldg(reinterpret_cast<const float4*>(rbase + size_t(right[s]) * a.row_stride + c0));
        const float l[kQuad] = {lv.x, lv.y, lv.z, lv.w}, r[kQuad] = {rv.x, rv.y, rv.z, rv.w};
#pragma unroll
        for (int i = 0; i < kQuad; ++i)
#pragma unroll
          for (int j = 0; j < kQuad; ++j) best[i][j] = fmaxf(best[i][j], l[i] + r[j]);
      }
    }
    for (int offset = p >> 1; offset > 0; offset >>= 1)
#pragma unroll
      for (int i = 0; i < kQuad; ++i)
#pragma unroll
        for (int j = 0; j < kQuad; ++j)
          best[i][j] = fmaxf(best[i][j], __shfl_xor_sync(0xffffffffu, best[i][j], offset));
    if (active && part == 0) {
#pragma unroll
      for (int i = 0; i < kQuad; ++i)
#pragma unroll
        for (int j = 0; j < kQuad; ++j)
          if (b0 + i < t.info.y && c0 + j < t.s_c)
            sh_best[BestOffset<G, true>((b0 + i) * t.s_c + c0 + j) + g] = best[i][j];
    }
  }
  __syncthreads();
}

// The lane-rules phase (kLaneRules) with L lanes per unit, G / L cells per lane, over nk groups at
// once (kMultiGroup; else nk = 1): item = k x rule_units + unit, group k's maxima at sh_best +
// k x region, its target cells at sh_target[k G ..].
template <int G, int L, bool kKeep>
__device__ __forceinline__ void LaneRulesMulti(const LaneArrays& lanes, int unit_first,
                                               int rule_units, int items, const float* sh_best,
                                               int region, const long long* sh_target, float* pre) {
  constexpr int kCells = G / L;
  static_assert(kCells * L == G && (kCells == 1 || kCells == 2 || kCells % 4 == 0));
  const int part = threadIdx.x % L;
  for (int item = threadIdx.x / L; item < items; item += blockDim.x / L) {
    const int k = item / rule_units;
    const int4 unit = __ldg(lanes.units + unit_first + item - k * rule_units);
    const float* group_best = sh_best + k * region + part * kCells;
    float acc[kCells];
#pragma unroll
    for (int c = 0; c < kCells; ++c) acc[c] = kNegInfF;
#pragma unroll 4
    for (int r = unit.y; r < unit.z; ++r) {
      const int2 rule = kKeep ? LoadRuleKeep(lanes.rules + r) : __ldg(lanes.rules + r);
      const float w = __int_as_float(rule.y);
      RuleIntoCells<kCells>(acc, w, group_best + rule.x);
    }
#pragma unroll
    for (int c = 0; c < kCells; ++c) {
      const long long target = sh_target[k * G + part * kCells + c];
      if (acc[c] > kNegInfF && target >= 0) AtomicMaxFloat(pre + target + unit.x, acc[c]);
    }
  }
}

// LaneRulesMulti reading the tile's units and rules from shared memory (kStageRules): units[u]
// is the tile's unit u, its rules' indices relative to `rules`.
template <int G, int L>
__device__ __forceinline__ void LaneRulesStaged(const int4* units, const int2* rules,
                                                int rule_units, int items, const float* sh_best,
                                                int region, const long long* sh_target,
                                                float* pre) {
  constexpr int kCells = G / L;
  static_assert(kCells * L == G && (kCells == 1 || kCells == 2 || kCells % 4 == 0));
  const int part = threadIdx.x % L;
  for (int item = threadIdx.x / L; item < items; item += blockDim.x / L) {
    const int k = item / rule_units;
    const int4 unit = units[item - k * rule_units];
    const float* group_best = sh_best + k * region + part * kCells;
    float acc[kCells];
#pragma unroll
    for (int c = 0; c < kCells; ++c) acc[c] = kNegInfF;
#pragma unroll 4
    for (int r = unit.y; r < unit.z; ++r) {
      const int2 rule = rules[r];
      RuleIntoCells<kCells>(acc, __int_as_float(rule.y), group_best + rule.x);
    }
#pragma unroll
    for (int c = 0; c < kCells; ++c) {
      const long long target = sh_target[k * G + part * kCells + c];
      if (acc[c] > kNegInfF && target >= 0) AtomicMaxFloat(pre + target + unit.x, acc[c]);
    }
  }
}

// LaneRulesMulti for one group.
template <int G, int L, bool kKeep>
__device__ __forceinline__ void LaneRulesL(const LaneArrays& lanes, int unit_first, int unit_end,
                                           const float* sh_best, const long long* sh_target,
                                           float* pre) {
  const int units = unit_end - unit_first;
  LaneRulesMulti<G, L, kKeep>(lanes, unit_first, units, units, sh_best, 0, sh_target, pre);
}

template <int G, bool kKeep = false>
__device__ __forceinline__ void LaneRules(const LaneArrays& lanes, int pair, const float* sh_best,
                                          const long long* sh_target, float* pre) {
  static_assert(G == 8, "lane rules: G is 8");
  const int first = __ldg(lanes.unit_begin + pair), end = __ldg(lanes.unit_begin + pair + 1);
  const int units = end - first;
  if (units * 2 > int(blockDim.x))
    LaneRulesL<G, 1, kKeep>(lanes, first, end, sh_best, sh_target, pre);
  else if (units * 4 > int(blockDim.x))
    LaneRulesL<G, 2, kKeep>(lanes, first, end, sh_best, sh_target, pre);
  else if (units * 8 > int(blockDim.x))
    LaneRulesL<G, 4, kKeep>(lanes, first, end, sh_best, sh_target, pre);
  else
    LaneRulesL<G, 8, kKeep>(lanes, first, end, sh_best, sh_target, pre);
}

template <int G, int kSplitUnroll, bool kPad, bool kAligned, bool kMask, int kExtra>
__device__ __forceinline__ void PairSegBody(LevelArgs a, PairArrays pairs,
                                            const unsigned char* present, int num_symbols,
                                            int num_items, int max_splits, int max_bc,
                                            int groups_per_block, const unsigned* left_mask,
                                            const unsigned* right_mask, int mask_words,
                                            LaneArrays lanes) {
  static_assert(kExtra == 0 || (kAligned && kPad && kMask), "-r, -s, -t extend pair-seg-*-a4-m");
  static_assert((kExtra & kQuadPad) == 0 || ((kExtra & kSplitPar) == 0 && G == 8));
  static_assert((kExtra & kPipe) == 0, "kPipe: PairSegPipeBody");
  extern __shared__ float shared[];
  static_assert(G % 4 == 0, "G cells are read as float4");
  float* sh_best = shared;  // BestOffset(substate pair) + g: BestFloats(G, max_bc) floats
  int* sh_left = reinterpret_cast<int*>(sh_best + BestFloats(G, max_bc));  // G * max_splits
  int* sh_right = sh_left + G * max_splits;                                // G * max_splits
  __shared__ int sh_count[G];
  __shared__ long long sh_target[G];  // the cell's first score in pre, or -1 past the items
  __shared__ int sh_total;

  const int pair = __ldg(pairs.class_pairs + blockIdx.y);
  const PairTile tile = LoadPairTile(pairs, pair);
  const int num_groups = (num_items + G - 1) / G;
  const int group_end = min(num_groups, int(blockIdx.x + 1) * groups_per_block);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int pl_first = __ldg(pairs.pl_begin + pair), pl_end = __ldg(pairs.pl_begin + pair + 1);
  unsigned magic_items = 0, magic_quads = 0;
  if constexpr ((kExtra & kQuadPad) != 0) {
    magic_items = DivMagic(tile.band_items);
    magic_quads = DivMagic(tile.quads);
  }

  for (int group = blockIdx.x * groups_per_block; group < group_end; ++group) {
    // kMask: skip before any load or barrier when no split point of the group can hold B and C
    // (the same for every thread of the block).
    if constexpr (kMask) {
      if (!GroupMayHavePair(left_mask, right_mask, mask_words, group, tile.sym)) continue;
    }
    const int first_item = group * G;
    __syncthreads();  // the previous group is done with shared memory
    if (threadIdx.x < G) {
      sh_count[threadIdx.x] = 0;
      long long target = -1;
      if (first_item + threadIdx.x < num_items) {
        const CellItem it = a.items[a.item_offset + first_item + threadIdx.x];
        target = static_cast<long long>(TargetCell(a, it)) * a.num_states;
      }
      sh_target[threadIdx.x] = target;
    }
    if (threadIdx.x == 0) sh_total = 0;
    __syncthreads();
    if constexpr ((kExtra & kTable) != 0) {
      GatherSplitsTable<G>(a, tile.sym, lanes.split_table, mask_words, num_items, first_item,
                           max_splits, sh_left, sh_right, sh_count, &sh_total);
    } else {
      GatherSplits<G>(a, tile.sym, present, num_symbols, num_items, first_item, max_splits, sh_left,
                      sh_right, sh_count, &sh_total);
    }
    if (sh_total == 0) continue;  // uniform: every thread read it before the next barrier
    if constexpr ((kExtra & kSplitPar) != 0) {
      SplitMaximaPar<G>(a, tile, sh_left, sh_right, sh_count, max_splits, sh_best);
    } else if constexpr ((kExtra & kQuadPad) != 0) {
      SplitMaximaQuad<G>(a, tile, magic_items, magic_quads, sh_left, sh_right, sh_count, max_splits,
                         sh_best);
    } else {
      SplitMaxima<G, kSplitUnroll, kPad, kAligned, true, (kExtra & kKeepRules) != 0>(
          a, tile, sh_left, sh_right, sh_count, max_splits, sh_best);
    }
    if constexpr ((kExtra & kLaneRules) != 0) {
      LaneRules<G, (kExtra & kKeepRules) != 0>(lanes, pair, sh_best, sh_target, a.pre);
    } else {
      for (int pl = pl_first + warp; pl < pl_end; pl += blockDim.x / 32)
        SegRulesForCount<G, kPad>(pairs, sh_best, sh_target, a.pre, pl, lane);
    }
  }
}

// The split loop of kRowOffsets (-o): float4 rows at base + a 32-bit offset (aligned chart).
template <bool kKeep>
__device__ __forceinline__ float4 LoadRow(const float* p) {
  return kKeep ? LoadRowOnce(p) : __ldg(reinterpret_cast<const float4*>(p));
}
__device__ __forceinline__ void MaxPlusRows(float4 lv, float4 rv, float (&best)[kQuad][kQuad]) {
  const float l[kQuad] = {lv.x, lv.y, lv.z, lv.w}, r[kQuad] = {rv.x, rv.y, rv.z, rv.w};
#pragma unroll
  for (int i = 0; i < kQuad; ++i)
#pragma unroll
    for (int j = 0; j < kQuad; ++j) best[i][j] = fmaxf(best[i][j], l[i] + r[j]);
}

// -p: split s + 1's rows are loaded before split s's max-plus.
template <bool kKeep>
__device__ __forceinline__ void SplitLoopPrefetch(const float* lbase, const float* rbase,
                                                  const unsigned* left, const unsigned* right,
                                                  int count, float (&best)[kQuad][kQuad]) {
  if (count <= 0) return;
  float4 lv = LoadRow<kKeep>(lbase + left[0]), rv = LoadRow<kKeep>(rbase + right[0]);
  for (int s = 1; s < count; ++s) {
    const float4 next_l = LoadRow<kKeep>(lbase + left[s]);
    const float4 next_r = LoadRow<kKeep>(rbase + right[s]);
    MaxPlusRows(lv, rv, best);
    lv = next_l, rv = next_r;
  }
  MaxPlusRows(lv, rv, best);
}

// -c: cp.async of 16 bytes global -> shared, through L1 (.ca: a warp's threads share rows), and
// the group bookkeeping (sm_80+; the build targets sm_90 and later).
__device__ __forceinline__ void CopyAsync16(float4* dst, const float* src) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void CopyAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void CopyAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// -c: the thread's own ring of kRingSlots split points in shared memory (ring[(slot x 2 + side)
// x blockDim.x + thread]: a warp's 32 float4s are adjacent, no bank conflicts). Split s + 2 is
// copied into s's slot after s's max-plus has read it; every iteration commits one group (empty
// past the end), so "all but the newest group done" means split s has landed. Only this thread
// writes and reads its slots: no barrier.
template <bool kKeep>
__device__ __forceinline__ void SplitLoopRing(const float* lbase, const float* rbase,
                                              const unsigned* left, const unsigned* right,
                                              int count, float4* ring,
                                              float (&best)[kQuad][kQuad]) {
  static_assert(kRingSlots == 2);
  const int stride = blockDim.x;
  float4* mine = ring + threadIdx.x;
#pragma unroll
  for (int s = 0; s < kRingSlots; ++s) {
    if (s < count) {
      CopyAsync16(mine + (2 * s) * stride, lbase + left[s]);
      CopyAsync16(mine + (2 * s + 1) * stride, rbase + right[s]);
    }
    CopyAsyncCommit();
  }
  for (int s = 0; s < count; ++s) {
    CopyAsyncWait<kRingSlots - 1>();
    const int slot = s & 1;
    const float4 lv = mine[(2 * slot) * stride], rv = mine[(2 * slot + 1) * stride];
    MaxPlusRows(lv, rv, best);
    if (s + kRingSlots < count) {
      CopyAsync16(mine + (2 * slot) * stride, lbase + left[s + kRingSlots]);
      CopyAsync16(mine + (2 * slot + 1) * stride, rbase + right[s + kRingSlots]);
    }
    CopyAsyncCommit();
  }
  CopyAsyncWait<0>();  // nothing in flight into the ring when the next unit starts
}

// Kernel 9 with kMultiGroup: PairSegBody with up to K of the block's groups (those the masks
// allow) per iteration. Shared memory: K regions of the tile's maxima (each BestFloats(G, bc),
// rounded to 4 floats) inside the BestFloats(G, max_bc) of one group of the widest tile, and
// max_k lists of split points (LaunchPairSeg picks max_k so that 5 blocks still fit per SM).
template <int G, int kExtra>
__device__ __forceinline__ void PairSegMultiBody(LevelArgs a, PairArrays pairs, int num_items,
                                                 int max_splits, int max_bc, int groups_per_block,
                                                 const unsigned* left_mask,
                                                 const unsigned* right_mask, int mask_words,
                                                 LaneArrays lanes) {
  const int max_k = lanes.max_k;
  static_assert(G == 8 &&
                (kExtra & (kLaneRules | kTable | kMultiGroup)) ==
                    (kLaneRules | kTable | kMultiGroup) &&
                (kExtra & (kSplitPar | kQuadPad | kPipe)) == 0);
  constexpr bool kKeep = (kExtra & kKeepRules) != 0;
  constexpr bool kOffsets = (kExtra & kRowOffsets) != 0;
  constexpr bool kPrefetch = (kExtra & kPrefetchSplits) != 0;
  constexpr bool kRing = (kExtra & kCpAsync) != 0;
  static_assert(kOffsets || !(kPrefetch || kRing), "-p and -c extend -o");
  static_assert(!(kPrefetch && kRing));
  extern __shared__ float shared[];
  const int total_floats = BestFloats(G, max_bc);
  float* sh_best = shared;
  int* sh_left = reinterpret_cast<int*>(sh_best + total_floats);  // max_k x G x max_splits
  int* sh_right = sh_left + max_k * G * max_splits;               // max_k x G x max_splits
  // kCpAsync: [slot][left, right][thread] float4s after the lists (a multiple of 16 bytes).
  float4* sh_ring = reinterpret_cast<float4*>(sh_right + max_k * G * max_splits);
  __shared__ int sh_count[kMaxGroupsInFlight * G];
  __shared__ long long sh_target[kMaxGroupsInFlight * G];
  __shared__ int sh_total;
  __shared__ int sh_sel[kMaxGroupsInFlight];  // this iteration's groups
  __shared__ int sh_nk;                       // kOffsets: how many (warp 0 picks them)
  constexpr bool kList = (kExtra & kGroupList) != 0;
  static_assert(kOffsets || !kList, "-n extends -o");
  __shared__ int sh_list[kList ? kThreads : 1];  // kList: the allowed groups of 256 in a row
  __shared__ int sh_warp_allowed[kThreads / 32];

  const int pair = __ldg(pairs.class_pairs + blockIdx.y);
  const PairTile tile = LoadPairTile(pairs, pair);
  const int region = (BestFloats(G, tile.info.y * tile.s_c) + 3) & ~3;
  const int units_per_group = G * tile.band_items;
  const int k_groups =
      max(1, min(min(max_k, int(blockDim.x) / units_per_group), total_floats / region));
  const unsigned magic_items = DivMagic(tile.band_items);
  const unsigned magic_quads = DivMagic(tile.quads);
  const int unit_first = __ldg(lanes.unit_begin + pair);
  const int rule_units = __ldg(lanes.unit_begin + pair + 1) - unit_first;
  // kStageRules: the tile's units, then its rules, after the K regions (multiples of 4 floats,
  // so the int4 units are aligned); the first iteration's barriers order the copy before use.
  bool staged = false;
  int4* sh_units = reinterpret_cast<int4*>(sh_best + k_groups * region);
  int2* sh_rules = reinterpret_cast<int2*>(sh_units + rule_units);
  if constexpr ((kExtra & kStageRules) != 0) {
    const int rule_first = __ldg(pairs.pl_rule_begin + __ldg(pairs.pl_begin + pair));
    const int rule_end = __ldg(pairs.pl_rule_begin + __ldg(pairs.pl_begin + pair + 1));
    staged = k_groups * region + 4 * rule_units + 2 * (rule_end - rule_first) <= total_floats;
    if (staged) {  // uniform
      for (int u = threadIdx.x; u < rule_units; u += blockDim.x) {
        int4 unit = __ldg(lanes.units + unit_first + u);
        unit.y -= rule_first, unit.z -= rule_first;
        sh_units[u] = unit;
      }
      for (int r = threadIdx.x; r < rule_end - rule_first; r += blockDim.x)
        sh_rules[r] = __ldg(lanes.rules + rule_first + r);
    }
  }
  const int splits = a.span - 1;
  const int stride = SplitTableStride(mask_words);
  const int lw = tile.sym.x >> 5, rw = mask_words + (tile.sym.y >> 5);
  const int num_groups = (num_items + G - 1) / G;
  const int group_end = min(num_groups, int(blockIdx.x + 1) * groups_per_block);
  int next = blockIdx.x * groups_per_block;
  int list_pos = 0, list_count = 0;  // kList: this thread's copy of the list's state (uniform)
  for (;;) {
    // The next k_groups groups the masks allow (the same for every thread; thread 0 writes them
    // to sh_sel, which the previous iteration last read before its third barrier).
    int nk = 0;
    if constexpr (kList) {
      if (list_pos == list_count) {  // uniform
        if (next >= group_end) break;
        // Refill: group next + t for thread t. The first barrier also ends the previous
        // iteration's use of the list (read before its third barrier).
        const int group = next + int(threadIdx.x);
        const bool allowed = group < group_end &&
                             GroupMayHavePair(left_mask, right_mask, mask_words, group, tile.sym);
        const unsigned ballot = __ballot_sync(0xffffffffu, allowed);
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        if (lane == 0) sh_warp_allowed[warp] = __popc(ballot);
        __syncthreads();
        int before = 0;
        list_count = 0;
        for (int w = 0; w < kThreads / 32; ++w) {
          const int n = sh_warp_allowed[w];
          before += w < warp ? n : 0;
          list_count += n;
        }
        if (allowed) sh_list[before + __popc(ballot & ((1u << lane) - 1))] = group;
        __syncthreads();
        list_pos = 0;
        next += kThreads;
        continue;
      }
      nk = min(k_groups, list_count - list_pos);
      __syncthreads();  // the previous iteration is done with shared memory
    } else if constexpr (kOffsets) {
      // Warp 0 tests 32 groups at once; sh_nk, like sh_sel, was last read before the previous
      // iteration's second barrier.
      if (threadIdx.x < 32) {
        const int lane = threadIdx.x;
        while (nk < k_groups && next < group_end) {
          const int group = next + lane;
          unsigned allowed = __ballot_sync(
              0xffffffffu, group < group_end && GroupMayHavePair(left_mask, right_mask, mask_words,
                                                                 group, tile.sym));
          int after = next + 32;
          for (; allowed != 0 && nk < k_groups; allowed &= allowed - 1) {
            const int chosen = next + __ffs(allowed) - 1;
            if (lane == 0) sh_sel[nk] = chosen;
            ++nk;
            after = chosen + 1;
          }
          next = after;
        }
        if (lane == 0) sh_nk = nk;
      }
      __syncthreads();  // the previous iteration is done with shared memory; sh_nk is written
      nk = sh_nk;
      if (nk == 0) break;  // uniform
    } else {
      for (; nk < k_groups; ++nk) {
        while (next < group_end &&
               !GroupMayHavePair(left_mask, right_mask, mask_words, next, tile.sym))
          ++next;
        if (next >= group_end) break;
        if (threadIdx.x == 0) sh_sel[nk] = next;
        ++next;
      }
      if (nk == 0) break;
      __syncthreads();  // the previous iteration is done with shared memory
    }
    const int list_base = list_pos;
    auto group_of = [&](int k) {
      if constexpr (kList) {
        return sh_list[list_base + k];
      } else {
        return sh_sel[k];
      }
    };
    if constexpr (kList) list_pos += nk;  // group_of is read before the third barrier only
    if (threadIdx.x < nk * G) {
      const int item = group_of(threadIdx.x / G) * G + threadIdx.x % G;
      sh_count[threadIdx.x] = 0;
      long long target = -1;
      if (item < num_items) {
        const CellItem it = a.items[a.item_offset + item];
        target = static_cast<long long>(TargetCell(a, it)) * a.num_states;
      }
      sh_target[threadIdx.x] = target;
    }
    if (threadIdx.x == 0) sh_total = 0;
    __syncthreads();
    // Split gathering from the split table (GatherSplitsTable, cell c = k G + g).
    for (int e = threadIdx.x; e < nk * G * splits; e += blockDim.x) {
      const int c = e / splits, k = e - c * splits;
      const int item = group_of(c / G) * G + c % G;
      if (item >= num_items) continue;
      const unsigned* row = lanes.split_table + (size_t(item) * splits + k) * stride;
      const unsigned l = __ldg(row + lw), r = __ldg(row + rw);
      const int lc = int(__ldg(row + 2 * mask_words)), rc = int(__ldg(row + 2 * mask_words + 1));
      if ((l >> (tile.sym.x & 31)) & (r >> (tile.sym.y & 31)) & 1u) {
        const int slot = atomicAdd(&sh_count[c], 1);
        if constexpr (kOffsets) {  // row offsets (< 2^32: the host checks)
          sh_left[c * max_splits + slot] = int(unsigned(lc) * unsigned(a.row_stride) + tile.info.x);
          sh_right[c * max_splits + slot] =
              int(unsigned(rc) * unsigned(a.row_stride) + tile.info.z);
        } else {
          sh_left[c * max_splits + slot] = lc;
          sh_right[c * max_splits + slot] = rc;
        }
        atomicAdd(&sh_total, 1);
      }
    }
    __syncthreads();
    if (sh_total == 0) continue;  // uniform
    // Split maxima (SplitMaxima's aligned path), group k's into region k.
    for (int e = threadIdx.x; e < nk * units_per_group; e += blockDim.x) {
      const int c = DivBy(e, magic_items), rem = e - c * tile.band_items;
      const int qb = DivBy(rem, magic_quads), qc = rem - qb * tile.quads;
      const int b0 = qb * kQuad, c0 = qc * kQuad;
      float best[kQuad][kQuad];
#pragma unroll
      for (int i = 0; i < kQuad; ++i)
#pragma unroll
        for (int j = 0; j < kQuad; ++j) best[i][j] = kNegInfF;
      const int count = sh_count[c];
      const int* left = sh_left + c * max_splits;
      const int* right = sh_right + c * max_splits;
      if constexpr (kOffsets) {
        const unsigned* left_off = reinterpret_cast<const unsigned*>(left);
        const unsigned* right_off = reinterpret_cast<const unsigned*>(right);
        const float* lbase = a.aligned_chart + b0;
        const float* rbase = a.aligned_chart + c0;
        if constexpr (kRing) {
          SplitLoopRing<kKeep>(lbase, rbase, left_off, right_off, count, sh_ring, best);
        } else if constexpr (kPrefetch) {
          SplitLoopPrefetch<kKeep>(lbase, rbase, left_off, right_off, count, best);
        } else {
          for (int s = 0; s < count; ++s)
            MaxPlusRows(LoadRow<kKeep>(lbase + left_off[s]), LoadRow<kKeep>(rbase + right_off[s]),
                        best);
        }
      } else {
        for (int s = 0; s < count; ++s)
          MaxPlusSplit<true, true, kKeep>(a, tile, left[s], right[s], b0, c0, best);
      }
      float* region_best = sh_best + (c / G) * region;
      const int g = c % G;
#pragma unroll
      for (int i = 0; i < kQuad; ++i)
#pragma unroll
        for (int j = 0; j < kQuad; ++j)
          if (b0 + i < tile.info.y && c0 + j < tile.s_c)
            region_best[BestOffset<G, true>((b0 + i) * tile.s_c + c0 + j) + g] = best[i][j];
    }
    __syncthreads();
    // Rule phase: nk x rule_units items, L lanes each (LaneRules' choice of L on the total).
    const int items = nk * rule_units;
    if constexpr ((kExtra & kStageRules) != 0) {
      if (staged) {
        if (items * 2 > int(blockDim.x))
          LaneRulesStaged<G, 1>(sh_units, sh_rules, rule_units, items, sh_best, region, sh_target,
                                a.pre);
        else if (items * 4 > int(blockDim.x))
          LaneRulesStaged<G, 2>(sh_units, sh_rules, rule_units, items, sh_best, region, sh_target,
                                a.pre);
        else if (items * 8 > int(blockDim.x))
          LaneRulesStaged<G, 4>(sh_units, sh_rules, rule_units, items, sh_best, region, sh_target,
                                a.pre);
        else
          LaneRulesStaged<G, 8>(sh_units, sh_rules, rule_units, items, sh_best, region, sh_target,
                                a.pre);
        continue;
      }
    }
    if (items * 2 > int(blockDim.x))
      LaneRulesMulti<G, 1, kKeep>(lanes, unit_first, rule_units, items, sh_best, region, sh_target,
                                  a.pre);
    else if (items * 4 > int(blockDim.x))
      LaneRulesMulti<G, 2, kKeep>(lanes, unit_first, rule_units, items, sh_best, region, sh_target,
                                  a.pre);
    else if (items * 8 > int(blockDim.x))
      LaneRulesMulti<G, 4, kKeep>(lanes, unit_first, rule_units, items, sh_best, region, sh_target,
                                  a.pre);
    else
      LaneRulesMulti<G, 8, kKeep>(lanes, unit_first, rule_units, items, sh_best, region, sh_target,
                                  a.pre);
  }
}

// Kernel 9 with kPipe (and kLaneRules, kTable, kQuadPad): PairSegBody's loop over the block's
// cell groups with two barriers per group. The split lists, counts and target cells are
// double-buffered (buffer `buf` for the current group, 1 - buf for the next one):
//   phase 1: split maxima of the current group (reads its lists, writes sh_best); the next
//            group's counts and target cells are reset;
//   barrier;
//   phase 2: rule phase of the current group (reads sh_best); split gathering of the next group
//            (writes its lists);
//   barrier.
// Groups the masks skip are never visited (the next group is the next one the masks allow).
template <int G, int kExtra>
__device__ __forceinline__ void PairSegPipeBody(LevelArgs a, PairArrays pairs, int num_items,
                                                int max_splits, int max_bc, int groups_per_block,
                                                const unsigned* left_mask,
                                                const unsigned* right_mask, int mask_words,
                                                LaneArrays lanes) {
  static_assert(G == 8 && (kExtra & (kLaneRules | kTable | kQuadPad | kPipe)) ==
                              (kLaneRules | kTable | kQuadPad | kPipe));
  constexpr bool kKeep = (kExtra & kKeepRules) != 0;
  extern __shared__ float shared[];
  float* sh_best = shared;  // BestOffset(substate pair) + g: BestFloats(G, max_bc) floats
  int* sh_left = reinterpret_cast<int*>(sh_best + BestFloats(G, max_bc));  // 2 x G x max_splits
  int* sh_right = sh_left + 2 * G * max_splits;                            // 2 x G x max_splits
  __shared__ int sh_count[2][G];
  __shared__ long long sh_target[2][G];
  __shared__ int sh_total[2];

  const int pair = __ldg(pairs.class_pairs + blockIdx.y);
  const PairTile tile = LoadPairTile(pairs, pair);
  const unsigned magic_items = DivMagic(tile.band_items);
  const unsigned magic_quads = DivMagic(tile.quads);
  const int num_groups = (num_items + G - 1) / G;
  const int group_end = min(num_groups, int(blockIdx.x + 1) * groups_per_block);
  auto next_group = [&](int group) {  // the same for every thread
    while (group < group_end &&
           !GroupMayHavePair(left_mask, right_mask, mask_words, group, tile.sym))
      ++group;
    return group;
  };
  auto init = [&](int buf, int group) {
    if (threadIdx.x < G) {
      sh_count[buf][threadIdx.x] = 0;
      long long target = -1;
      if (group * G + threadIdx.x < num_items) {
        const CellItem it = a.items[a.item_offset + group * G + threadIdx.x];
        target = static_cast<long long>(TargetCell(a, it)) * a.num_states;
      }
      sh_target[buf][threadIdx.x] = target;
    }
    if (threadIdx.x == 0) sh_total[buf] = 0;
  };
  auto gather = [&](int buf, int group) {
    GatherSplitsTable<G, false>(a, tile.sym, lanes.split_table, mask_words, num_items, group * G,
                                max_splits, sh_left + buf * G * max_splits,
                                sh_right + buf * G * max_splits, sh_count[buf], &sh_total[buf]);
  };
  int cur = next_group(blockIdx.x * groups_per_block);
  if (cur >= group_end) return;  // uniform
  init(0, cur);
  __syncthreads();
  gather(0, cur);
  __syncthreads();
  for (int buf = 0; cur < group_end; buf = 1 - buf) {
    const int next = next_group(cur + 1);
    const bool work = sh_total[buf] > 0;  // uniform: written before the last barrier
    if (next < group_end) init(1 - buf, next);
    if (work)
      SplitMaximaQuad<G, false, kKeep>(
          a, tile, magic_items, magic_quads, sh_left + buf * G * max_splits,
          sh_right + buf * G * max_splits, sh_count[buf], max_splits, sh_best);
    __syncthreads();
    if (work) LaneRules<G, kKeep>(lanes, pair, sh_best, sh_target[buf], a.pre);
    if (next < group_end) gather(1 - buf, next);
    __syncthreads();
    cur = next;
  }
}

#define CKY_PAIR_SEG_PARAMS                                                                    \
  LevelArgs a, PairArrays pairs, const unsigned char *present, int num_symbols, int num_items, \
      int max_splits, int max_bc, int groups_per_block, const unsigned *left_mask,             \
      const unsigned *right_mask, int mask_words, LaneArrays lanes
#define CKY_PAIR_SEG_ARGS                                                                     \
  a, pairs, present, num_symbols, num_items, max_splits, max_bc, groups_per_block, left_mask, \
      right_mask, mask_words, lanes

template <int G, int kSplitUnroll, bool kPad, bool kAligned, bool kMask, int kExtra>
__global__ void __launch_bounds__(kThreads) PairSegKernel(CKY_PAIR_SEG_PARAMS) {
  if constexpr ((kExtra & kMultiGroup) != 0) {
    PairSegMultiBody<G, kExtra>(a, pairs, num_items, max_splits, max_bc, groups_per_block,
                                left_mask, right_mask, mask_words, lanes);
  } else {
    PairSegBody<G, kSplitUnroll, kPad, kAligned, kMask, kExtra>(CKY_PAIR_SEG_ARGS);
  }
}

// kQuadPad variants: at least 5 blocks per SM, the ordinary variants' occupancy (48 registers;
// nvcc gives these 57-58 unbounded, i.e. 4 blocks).
template <int G, int kExtra>
__global__ void __launch_bounds__(kThreads, 5) PairSegKernelQuad(CKY_PAIR_SEG_PARAMS) {
  if constexpr ((kExtra & kMultiGroup) != 0) {
    PairSegMultiBody<G, kExtra>(a, pairs, num_items, max_splits, max_bc, groups_per_block,
                                left_mask, right_mask, mask_words, lanes);
  } else if constexpr ((kExtra & kPipe) != 0) {
    PairSegPipeBody<G, kExtra>(a, pairs, num_items, max_splits, max_bc, groups_per_block, left_mask,
                               right_mask, mask_words, lanes);
  } else {
    PairSegBody<G, 1, true, true, true, kExtra>(CKY_PAIR_SEG_ARGS);
  }
}

// kPrefetchSplits variants: at most 64 registers (4 blocks per SM, as the default's 61). (-l
// without -o took 68 registers unbounded, and spilled with this bound: it is not a variant.)
template <int G, int kExtra>
__global__ void __launch_bounds__(kThreads, 4) PairSegKernelMin4(CKY_PAIR_SEG_PARAMS) {
  static_assert((kExtra & kMultiGroup) != 0);
  PairSegMultiBody<G, kExtra>(a, pairs, num_items, max_splits, max_bc, groups_per_block, left_mask,
                              right_mask, mask_words, lanes);
}

// The same with at least kMinBlocks blocks per SM: the compiler caps the registers to fit them
// (kMinBlocks 6, 7, 8: 40, 36, 32 registers). A kernel of its own: nvcc 13 compiles
// __launch_bounds__(kThreads, 1) differently from __launch_bounds__(kThreads) (72 to 80
// registers instead of 48 for pair-seg-g8-a4-m, and 3 blocks per SM instead of 5).
template <int G, int kSplitUnroll, bool kPad, bool kAligned, bool kMask, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    PairSegKernelMinBlocks(CKY_PAIR_SEG_PARAMS) {
  PairSegBody<G, kSplitUnroll, kPad, kAligned, kMask, 0>(CKY_PAIR_SEG_ARGS);
}

#undef CKY_PAIR_SEG_PARAMS
#undef CKY_PAIR_SEG_ARGS

// ---------------------------------------------------------------------------------------------
// Tree extraction on the device (ParseTrees): parser/tree_extraction.cpp's search, one block per
// sentence. Each node's candidates are tried in the CPU's order (binaries by split point, then
// rule; then unaries by rule), a block-wide chunk at a time; the first chunk with a match gives
// the smallest matching index, which is the CPU's choice. Scores are the CPU's doubles: the
// chart's floats widened, added in the same order (no multiply, so no contraction), the same
// relative-tolerance test. Anything the CPU would handle with more than that (a one-word phrasal
// node with no unary to a tag, no matching rule, the unary chain bound, full buffers) marks the
// sentence for the host.
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
};

constexpr int kExtractThreads = 256;
constexpr int kExtractStack = 512;
constexpr int kExtractPerThread = 4;      // candidates per thread per chunk
constexpr int kMaxUnaryChainDevice = 64;  // tree_extraction.cpp's kMaxUnaryChain

__device__ __forceinline__ bool ScoresMatchDevice(double x, double y, double tolerance) {
  return __ddiv_rn(fabs(__dsub_rn(x, y)), __dadd_rn(__dadd_rn(fabs(x), fabs(y)), 1e-10)) <
         tolerance;
}

__device__ __forceinline__ int4 PackNode(int state, int start, int end, float score, int kind) {
  return make_int4(state, (start & 0xffff) | (end << 16), __float_as_int(score), kind);
}

__global__ void __launch_bounds__(kExtractThreads) ExtractTreesKernel(ExtractArgs a) {
  __shared__ int4 stack[kExtractStack];  // state, start, end, unary edges above
  __shared__ int top, count, to_host, found;
  __shared__ double warp_score[kExtractThreads / 32];
  __shared__ int warp_index[kExtractThreads / 32];
  const int sentence = blockIdx.x;
  const int n = a.sentence_length[sentence];
  const size_t base = a.sentence_base[sentence];
  const int capacity = a.node_offset[sentence + 1] - a.node_offset[sentence];
  int4* out = a.nodes + a.node_offset[sentence];
  const double neg_inf = -CUDART_INF;
  auto score_at = [&](int start, int end, int state) -> double {
    return double(a.chart[(base + ChartCellIndex(n, start, end)) * size_t(a.num_states) + state]);
  };
  if (!(score_at(0, n, 0) > neg_inf)) {
    if (threadIdx.x == 0) a.node_count[sentence] = -1;
    return;
  }
  if (threadIdx.x == 0) {
    top = 1, count = 0, to_host = 0;
    stack[0] = make_int4(0, 0, n, 0);
  }
  auto emit = [&](int state, int start, int end, double score, int kind) {  // thread 0
    if (count < capacity) {
      out[count++] = PackNode(state, start, end, float(score), kind);
    } else {
      to_host = 1;
    }
  };
  auto push = [&](int4 entry) {  // thread 0
    if (top < kExtractStack) {
      stack[top++] = entry;
    } else {
      to_host = 1;
    }
  };
  // The smallest index among the block's `hit`s (INT_MAX if none) into `found`.
  auto block_min = [&](int hit) {
    if (threadIdx.x == 0) found = INT_MAX;
    __syncthreads();
    if (hit != INT_MAX) atomicMin(&found, hit);
    __syncthreads();
  };
  for (;;) {
    __syncthreads();
    if (top == 0 || to_host) break;  // uniform: read after the barrier, written only below it
    const int4 cur = stack[top - 1];
    __syncthreads();
    if (threadIdx.x == 0) --top;
    const int state = cur.x, start = cur.y, end = cur.z, chain = cur.w;
    const double best = score_at(start, end, state);
    const bool phrasal = a.phrasal[a.state_symbol[state]];
    if (end - start == 1 && !phrasal) {
      if (threadIdx.x == 0) emit(state, start, end, best, DeviceTreeNode::kPreterminal);
      continue;
    }
    if (end - start == 1) {
      // The best unary down to a POS tag; ties go to the last rule.
      double mine = neg_inf;
      int mine_u = -1;
      const int ub = a.un_begin[state], ue = a.un_begin[state + 1];
      for (int u = ub + threadIdx.x; u < ue; u += blockDim.x) {
        const int child = a.un_child[u];
        if (a.phrasal[a.state_symbol[child]]) continue;
        const double score = __dadd_rn(score_at(start, end, child), a.un_w[u]);
        if (score >= mine && score > neg_inf) mine = score, mine_u = u;
      }
      for (int offset = 16; offset > 0; offset >>= 1) {
        const double other = __shfl_xor_sync(0xffffffffu, mine, offset);
        const int other_u = __shfl_xor_sync(0xffffffffu, mine_u, offset);
        if (other_u >= 0 && (mine_u < 0 || other > mine || (other == mine && other_u > mine_u)))
          mine = other, mine_u = other_u;
      }
      if (threadIdx.x % 32 == 0)
        warp_score[threadIdx.x / 32] = mine, warp_index[threadIdx.x / 32] = mine_u;
      __syncthreads();
      if (threadIdx.x == 0) {
        double b = neg_inf;
        int bu = -1;
        for (int w = 0; w < kExtractThreads / 32; ++w) {
          const int u = warp_index[w];
          if (u >= 0 && (bu < 0 || warp_score[w] > b || (warp_score[w] == b && u > bu)))
            b = warp_score[w], bu = u;
        }
        if (bu < 0) {
          to_host = 1;  // tree_extraction.cpp's OneWordWithoutTag reads the lexical scores
        } else {
          const int tag = a.un_child[bu];
          emit(state, start, end, best, DeviceTreeNode::kUnary);
          emit(tag, start, end, score_at(start, end, tag), DeviceTreeNode::kPreterminal);
        }
      }
      continue;
    }
    // Binaries: the first (split, rule) in the CPU's order whose score matches.
    const int rb = a.bin_begin[state], rules = a.bin_begin[state + 1] - rb;
    const int total = rules * (end - start - 1);
    int match = INT_MAX;
    for (int chunk = 0; chunk < total; chunk += kExtractThreads * kExtractPerThread) {
      int hit = INT_MAX;
      for (int q = 0; q < kExtractPerThread && hit == INT_MAX; ++q) {
        const int idx = chunk + q * kExtractThreads + threadIdx.x;
        if (idx >= total) break;
        const int split = start + 1 + idx / rules, r = rb + idx % rules;
        const double score = __dadd_rn(__dadd_rn(a.bin_w[r], score_at(start, split, a.bin_left[r])),
                                       score_at(split, end, a.bin_right[r]));
        if (score > neg_inf && ScoresMatchDevice(score, best, a.tolerance)) hit = idx;
      }
      if (__syncthreads_or(hit != INT_MAX)) {
        block_min(hit);
        match = found;
        break;
      }
    }
    if (match != INT_MAX) {
      if (threadIdx.x == 0) {
        const int split = start + 1 + match / rules, r = rb + match % rules;
        emit(state, start, end, best, DeviceTreeNode::kBinary);
        push(make_int4(a.bin_right[r], split, end, chain));
        push(make_int4(a.bin_left[r], start, split, chain));
      }
      continue;
    }
    // Unaries: the first rule whose score matches.
    const int ub = a.un_begin[state], ue = a.un_begin[state + 1];
    int unary = INT_MAX;
    for (int chunk = ub; chunk < ue; chunk += kExtractThreads) {
      const int u = chunk + threadIdx.x;
      int hit = INT_MAX;
      if (u < ue) {
        const double score = __dadd_rn(a.un_w[u], score_at(start, end, a.un_child[u]));
        if (score > neg_inf && ScoresMatchDevice(score, best, a.tolerance)) hit = u;
      }
      if (__syncthreads_or(hit != INT_MAX)) {
        block_min(hit);
        unary = found;
        break;
      }
    }
    if (threadIdx.x == 0) {
      if (unary == INT_MAX || chain + 1 > kMaxUnaryChainDevice) {
        to_host = 1;  // the host fails the same way
      } else {
        emit(state, start, end, best, DeviceTreeNode::kUnary);
        push(make_int4(a.un_child[unary], start, end, chain + 1));
      }
    }
  }
  if (threadIdx.x == 0) a.node_count[sentence] = to_host ? -2 : count;
}

// ---------------------------------------------------------------------------------------------
// Host side

enum class Variant {
  kPairFused16,
  kPairFused8,
  kPairFused4,
  kPairFused16Wide,
  kPairFused8Wide,
  kPairFused8Classes,
  kPairAcc8,
  kPairAcc16,
  kPairSeg8,
  kPairSeg8Unroll2,
  kPairSeg16,
  kPairSeg8NoPad,
  kPairSeg8Aligned,
  kPairSeg16Aligned,
  kPairSeg8AlignedMask,
  kPairSeg8AlignedMask512,
  kPairSeg8AlignedMask512Min6,
  kPairSeg8AlignedMask512Min8,
  kPairSeg8AlignedMask512Min7,
  kPairSeg8AlignedMask640Min8,
  kPairSeg8AlignedMaskPrefetch,
  kPairSeg8AlignedMaskLaneRules,
  kPairSeg8AlignedMaskSplitPar,
  kPairSeg8AlignedMaskTable,
  kPairSeg8AlignedMaskLaneRulesSplitPar,
  kPairSeg8AlignedMaskLaneRulesSplitParTable,
  kPairSeg8AlignedMaskLaneRulesTable,
  kPairSeg8AlignedMaskLaneRulesTableQuad,
  kPairSeg8AlignedMaskLaneRulesTableQuadPipe,
  kPairSeg8AlignedMaskLaneRulesTableQuadPipeAdaptive,
  kPairSeg8AlignedMaskLaneRulesTableQuadPipeKeep,
  kPairSeg8AlignedMaskLaneRulesTableQuadPipeAdaptiveKeep,
  kPairSeg8AlignedMaskLaneRulesTableAdaptive,
  kPairSeg8AlignedMaskLaneRulesTableKeep,
  kPairSeg8AlignedMaskLaneRulesTableAdaptiveKeep,
  kPairSeg8AlignedMaskLaneRulesTableMulti,
  kPairSeg8AlignedMaskLaneRulesTableMultiAdaptiveKeep,
  kPairSeg8AlignedMaskLaneRulesTableMultiAdaptiveKeepMin5,
  kPairSeg8AlignedMaskLaneRulesTableUnary,
  kPairSeg8AlignedMaskLaneRulesTableMultiAdaptiveKeepUnary,
  kPairSeg8RtgakuOffsets,
  kPairSeg8RtgakuOffsetsPrefetch,
  kPairSeg8RtgakuOffsetsCpAsync,
  kPairSeg8RtgakuOffsetsMin5,
  kPairSeg8RtgakuOffsetsStaged,
  kPairSeg8RtgakuOffsetsMin5Staged,
  kPairSeg8RtgakuOffsetsPrefetchStaged,
  kPairSeg8RtgakuOffsetsPrefetchList,
  kPairSeg8RtgakuOffsetsPrefetchStagedList,
  kPairSeg8RtgakuOffsetsMin5StagedList,
  kThreadAtomicGlobal,
  kThreadAtomicShared,
  kBlockAtomicShared,
  kBlockReduce,
  kBlockReduceStaged,
  kBlockReduceSeq,
};

// The variants, numbered in this one table: the name `--kernel` takes, the Variant that
// LaunchBinary dispatches on, and the kernel (Kernel 1..9 above) it launches; cuda/README.md
// has the same table with each variant's parameters. The default first: the fastest binary pass
// measured on en_sm6s (bench/RESULTS.md).
struct VariantSpec {
  std::string name;
  Variant variant;
  int kernel;
};

const std::vector<VariantSpec>& Variants() {
  static const std::vector<VariantSpec> kVariants = {
      {"pair-seg-g8-a4-m-rtgakuopln", Variant::kPairSeg8RtgakuOffsetsPrefetchStagedList, 9},
      {"pair-seg-g8-a4-m-rtgaku", Variant::kPairSeg8AlignedMaskLaneRulesTableMultiAdaptiveKeepUnary,
       9},
      {"pair-seg-g8-a4-m", Variant::kPairSeg8AlignedMask, 9},
      {"pair-seg-g8-a4-m-b512-o8", Variant::kPairSeg8AlignedMask512Min8, 9},
      {"pair-seg-g8-a4", Variant::kPairSeg8Aligned, 9},
      {"pair-seg-g8-a4-m-b512", Variant::kPairSeg8AlignedMask512, 9},
      {"pair-seg-g8-a4-m-b512-o6", Variant::kPairSeg8AlignedMask512Min6, 9},
      {"pair-seg-g8-a4-m-b512-o7", Variant::kPairSeg8AlignedMask512Min7, 9},
      {"pair-seg-g8-a4-m-b640-o8", Variant::kPairSeg8AlignedMask640Min8, 9},
      {"pair-seg-g8-a4-m-p", Variant::kPairSeg8AlignedMaskPrefetch, 9},
      {"pair-seg-g8-a4-m-r", Variant::kPairSeg8AlignedMaskLaneRules, 9},
      {"pair-seg-g8-a4-m-s", Variant::kPairSeg8AlignedMaskSplitPar, 9},
      {"pair-seg-g8-a4-m-t", Variant::kPairSeg8AlignedMaskTable, 9},
      {"pair-seg-g8-a4-m-rs", Variant::kPairSeg8AlignedMaskLaneRulesSplitPar, 9},
      {"pair-seg-g8-a4-m-rst", Variant::kPairSeg8AlignedMaskLaneRulesSplitParTable, 9},
      {"pair-seg-g8-a4-m-rt", Variant::kPairSeg8AlignedMaskLaneRulesTable, 9},
      {"pair-seg-g8-a4-m-rtq", Variant::kPairSeg8AlignedMaskLaneRulesTableQuad, 9},
      {"pair-seg-g8-a4-m-rtqw", Variant::kPairSeg8AlignedMaskLaneRulesTableQuadPipe, 9},
      {"pair-seg-g8-a4-m-rtqwa", Variant::kPairSeg8AlignedMaskLaneRulesTableQuadPipeAdaptive, 9},
      {"pair-seg-g8-a4-m-rtqwk", Variant::kPairSeg8AlignedMaskLaneRulesTableQuadPipeKeep, 9},
      {"pair-seg-g8-a4-m-rtqwak", Variant::kPairSeg8AlignedMaskLaneRulesTableQuadPipeAdaptiveKeep,
       9},
      {"pair-seg-g8-a4-m-rta", Variant::kPairSeg8AlignedMaskLaneRulesTableAdaptive, 9},
      {"pair-seg-g8-a4-m-rtk", Variant::kPairSeg8AlignedMaskLaneRulesTableKeep, 9},
      {"pair-seg-g8-a4-m-rtak", Variant::kPairSeg8AlignedMaskLaneRulesTableAdaptiveKeep, 9},
      {"pair-seg-g8-a4-m-rtg", Variant::kPairSeg8AlignedMaskLaneRulesTableMulti, 9},
      {"pair-seg-g8-a4-m-rtgak", Variant::kPairSeg8AlignedMaskLaneRulesTableMultiAdaptiveKeep, 9},
      {"pair-seg-g8-a4-m-rtgak5", Variant::kPairSeg8AlignedMaskLaneRulesTableMultiAdaptiveKeepMin5,
       9},
      {"pair-seg-g8-a4-m-rtu", Variant::kPairSeg8AlignedMaskLaneRulesTableUnary, 9},
      {"pair-seg-g8-a4-m-rtgakuo", Variant::kPairSeg8RtgakuOffsets, 9},
      {"pair-seg-g8-a4-m-rtgakuop", Variant::kPairSeg8RtgakuOffsetsPrefetch, 9},
      {"pair-seg-g8-a4-m-rtgakuoc", Variant::kPairSeg8RtgakuOffsetsCpAsync, 9},
      {"pair-seg-g8-a4-m-rtgakuo5", Variant::kPairSeg8RtgakuOffsetsMin5, 9},
      {"pair-seg-g8-a4-m-rtgakuol", Variant::kPairSeg8RtgakuOffsetsStaged, 9},
      {"pair-seg-g8-a4-m-rtgakuo5l", Variant::kPairSeg8RtgakuOffsetsMin5Staged, 9},
      {"pair-seg-g8-a4-m-rtgakuopl", Variant::kPairSeg8RtgakuOffsetsPrefetchStaged, 9},
      {"pair-seg-g8-a4-m-rtgakuopn", Variant::kPairSeg8RtgakuOffsetsPrefetchList, 9},
      {"pair-seg-g8-a4-m-rtgakuo5ln", Variant::kPairSeg8RtgakuOffsetsMin5StagedList, 9},
      {"pair-fused-g8-wide", Variant::kPairFused8Wide, 7},
      {"pair-fused-g16-wide", Variant::kPairFused16Wide, 7},
      {"pair-fused-g16", Variant::kPairFused16, 7},
      {"pair-fused-g8", Variant::kPairFused8, 7},
      {"pair-fused-g8-classes", Variant::kPairFused8Classes, 7},
      {"pair-fused-g4", Variant::kPairFused4, 7},
      {"pair-acc-g8", Variant::kPairAcc8, 8},
      {"pair-acc-g16", Variant::kPairAcc16, 8},
      {"pair-seg-g8", Variant::kPairSeg8, 9},
      {"pair-seg-g8-u2", Variant::kPairSeg8Unroll2, 9},
      {"pair-seg-g16", Variant::kPairSeg16, 9},
      {"pair-seg-g8-nopad", Variant::kPairSeg8NoPad, 9},
      {"pair-seg-g16-a4", Variant::kPairSeg16Aligned, 9},
      {"thread-atomic-global", Variant::kThreadAtomicGlobal, 1},
      {"thread-atomic-shared", Variant::kThreadAtomicShared, 2},
      {"block-atomic-shared", Variant::kBlockAtomicShared, 3},
      {"block-reduce", Variant::kBlockReduce, 4},
      {"block-reduce-staged", Variant::kBlockReduceStaged, 5},
      {"block-reduce-seq", Variant::kBlockReduceSeq, 6},
  };
  return kVariants;
}

// The launch grid of kernels 7 and 9: x = blocks of `per_block` cell groups (about 8 waves of
// blocks in all), y = the tiles.
struct GroupGrid {
  int launched_x;
  int per_block;
};
GroupGrid GroupGridFor(int groups, int tiles, int num_sms) {
  const int blocks_x = std::max(1, std::min(groups, (num_sms * 64 + tiles - 1) / tiles));
  const int per_block = (groups + blocks_x - 1) / blocks_x;
  return {(groups + per_block - 1) / per_block, per_block};
}

struct SizeClass {
  std::vector<int> pairs;
  int max_bc = 0;
  DeviceArray<int> device_pairs;
};

int64_t NumCells(int32_t n) { return int64_t(n) * (n + 1) / 2; }

class DeviceViterbiImpl : public DeviceViterbi {
 public:
  const std::string& kernel() const override { return kernel_; }

  size_t BytesForSentence(int32_t n) const override {
    static_assert(sizeof(CellItem) == 16);
    // kTable: a span length's split table has at most as many rows as the sentence has cells.
    return BatchBytesForSentence(num_states_, num_symbols_, n) +
           (aligned_ ? size_t(NumCells(n)) * aligned_states_ * sizeof(float) : 0) +
           ((extra_ & kTable) ? size_t(NumCells(n)) * SplitTableStride(mask_words_) * 4 : 0);
  }
  size_t BatchBudget() const override { return budget_; }

  bool Init(const GrammarArrays& g, const DeviceViterbiOptions& options, std::string* error) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      cudaGetLastError();
      *error = "no CUDA device";
      return false;
    }
    kernel_ = options.kernel.empty() ? Variants().front().name : options.kernel;
    bool found = false;
    for (const VariantSpec& spec : Variants())
      if (spec.name == kernel_) variant_ = spec.variant, found = true;
    if (!found) {
      *error = "unknown CUDA kernel '" + kernel_ + "'";
      return false;
    }
    if (!FaultInjector::FromEnvironment(&faults_, error)) return false;
    num_states_ = g.num_states;
    if (size_t(num_states_) * sizeof(float) > 48 * 1024) {
      *error = "too many states for the unary kernel's shared memory";
      return false;
    }
    num_symbols_ = g.num_symbols;
    num_rules_ = static_cast<int>(g.num_binary);
    cudaDeviceGetAttribute(&max_shared_optin_, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
    cudaDeviceGetAttribute(&num_sms_, cudaDevAttrMultiProcessorCount, 0);

    std::vector<float> w(g.binary_log_prob, g.binary_log_prob + g.num_binary);
    std::vector<float> uw(g.unary_log_prob, g.unary_log_prob + g.num_unary);
    auto ints = [](const int32_t* p, int64_t n) { return std::vector<int>(p, p + n); };
    bool ok = state_symbol_.Upload(ints(g.state_symbol, g.num_states)) &&
              unary_begin_.Upload(ints(g.unary_parent_begin, g.num_states + 1)) &&
              unary_child_.Upload(ints(g.unary_child, g.num_unary)) && unary_w_.Upload(uw);
    if (g.symbol_is_phrasal) {
      // Tree extraction on the device reads the rules in double, as the CPU does.
      std::vector<double> bw(g.binary_log_prob, g.binary_log_prob + g.num_binary);
      std::vector<double> uwd(g.unary_log_prob, g.unary_log_prob + g.num_unary);
      supports_trees_ = ok && ex_bin_begin_.Upload(ints(g.binary_parent_begin, g.num_states + 1)) &&
                        ex_bin_left_.Upload(ints(g.binary_left, g.num_binary)) &&
                        ex_bin_right_.Upload(ints(g.binary_right, g.num_binary)) &&
                        ex_bin_w_.Upload(bw) && ex_un_w_.Upload(uwd) &&
                        phrasal_.Upload(std::vector<unsigned char>(
                            g.symbol_is_phrasal, g.symbol_is_phrasal + g.num_symbols));
      ok = ok && supports_trees_;
    }
    const bool paper = variant_ >= Variant::kThreadAtomicGlobal;
    if (variant_ == Variant::kPairFused16Wide || variant_ == Variant::kPairFused8Wide ||
        variant_ == Variant::kPairSeg8 || variant_ == Variant::kPairSeg8Unroll2 ||
        variant_ == Variant::kPairSeg16 || variant_ == Variant::kPairSeg8NoPad ||
        variant_ == Variant::kPairSeg8Aligned || variant_ == Variant::kPairSeg16Aligned ||
        variant_ == Variant::kPairSeg8AlignedMask ||
        variant_ == Variant::kPairSeg8AlignedMaskPrefetch)
      band_limit_ = 1024;
    switch (variant_) {
      case Variant::kPairSeg8AlignedMaskLaneRules:
        extra_ = kLaneRules;
        break;
      case Variant::kPairSeg8AlignedMaskSplitPar:
        extra_ = kSplitPar;
        break;
      case Variant::kPairSeg8AlignedMaskTable:
        extra_ = kTable;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesSplitPar:
        extra_ = kLaneRules | kSplitPar;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesSplitParTable:
        extra_ = kLaneRules | kSplitPar | kTable;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTable:
        extra_ = kLaneRules | kTable;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableQuad:
        extra_ = kLaneRules | kTable | kQuadPad;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableQuadPipe:
        extra_ = kLaneRules | kTable | kQuadPad | kPipe;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableQuadPipeAdaptive:
        extra_ = kLaneRules | kTable | kQuadPad | kPipe | kAdaptiveUnits;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableQuadPipeKeep:
        extra_ = kLaneRules | kTable | kQuadPad | kPipe | kKeepRules;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableQuadPipeAdaptiveKeep:
        extra_ = kLaneRules | kTable | kQuadPad | kPipe | kAdaptiveUnits | kKeepRules;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableAdaptive:
        extra_ = kLaneRules | kTable | kAdaptiveUnits;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableKeep:
        extra_ = kLaneRules | kTable | kKeepRules;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableAdaptiveKeep:
        extra_ = kLaneRules | kTable | kAdaptiveUnits | kKeepRules;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableMulti:
        extra_ = kLaneRules | kTable | kMultiGroup;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableMultiAdaptiveKeep:
        extra_ = kLaneRules | kTable | kMultiGroup | kAdaptiveUnits | kKeepRules;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableMultiAdaptiveKeepMin5:
        extra_ = kLaneRules | kTable | kMultiGroup | kAdaptiveUnits | kKeepRules | kMin5;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableUnary:
        extra_ = kLaneRules | kTable;
        unary_cells_ = true;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableMultiAdaptiveKeepUnary:
        extra_ = kLaneRules | kTable | kMultiGroup | kAdaptiveUnits | kKeepRules;
        unary_cells_ = true;
        break;
      default:
        break;
    }
    // The -rtgaku family of issue 17's third pass: kRtgak plus these options, the -u unary side.
    static constexpr std::pair<Variant, int> kRtgakuFamily[] = {
        {Variant::kPairSeg8RtgakuOffsets, kRowOffsets},
        {Variant::kPairSeg8RtgakuOffsetsPrefetch, kRowOffsets | kPrefetchSplits},
        {Variant::kPairSeg8RtgakuOffsetsCpAsync, kRowOffsets | kCpAsync},
        {Variant::kPairSeg8RtgakuOffsetsMin5, kRowOffsets | kMin5},
        {Variant::kPairSeg8RtgakuOffsetsStaged, kRowOffsets | kStageRules},
        {Variant::kPairSeg8RtgakuOffsetsMin5Staged, kRowOffsets | kMin5 | kStageRules},
        {Variant::kPairSeg8RtgakuOffsetsPrefetchStaged,
         kRowOffsets | kPrefetchSplits | kStageRules},
        {Variant::kPairSeg8RtgakuOffsetsPrefetchList, kRowOffsets | kPrefetchSplits | kGroupList},
        {Variant::kPairSeg8RtgakuOffsetsPrefetchStagedList,
         kRowOffsets | kPrefetchSplits | kStageRules | kGroupList},
        {Variant::kPairSeg8RtgakuOffsetsMin5StagedList,
         kRowOffsets | kMin5 | kStageRules | kGroupList},
    };
    for (const auto& [variant, more] : kRtgakuFamily)
      if (variant_ == variant) extra_ = kRtgak | more, unary_cells_ = true;
    if (extra_ != 0) band_limit_ = 1024;
    // -u stages kUnaryCells cells' binary maxima in shared memory (48 KB without opt-in).
    if (size_t(kUnaryCells) * num_states_ * sizeof(float) > 48 * 1024) unary_cells_ = false;
    const bool small_bands = variant_ == Variant::kPairSeg8AlignedMask512 ||
                             variant_ == Variant::kPairSeg8AlignedMask512Min6 ||
                             variant_ == Variant::kPairSeg8AlignedMask512Min8 ||
                             variant_ == Variant::kPairSeg8AlignedMask512Min7 ||
                             variant_ == Variant::kPairSeg8AlignedMask640Min8;
    if (variant_ == Variant::kPairSeg8Aligned || variant_ == Variant::kPairSeg16Aligned ||
        variant_ == Variant::kPairSeg8AlignedMask || small_bands ||
        variant_ == Variant::kPairSeg8AlignedMaskPrefetch || extra_ != 0)
      aligned_ = true;
    if (variant_ == Variant::kPairSeg8AlignedMask || small_bands ||
        variant_ == Variant::kPairSeg8AlignedMaskPrefetch || extra_ != 0)
      mask_group_ = 8;
    if (small_bands) band_limit_ = variant_ == Variant::kPairSeg8AlignedMask640Min8 ? 640 : 512;
    mask_words_ = (num_symbols_ + 31) / 32;
    if (variant_ == Variant::kPairFused8Classes) size_classes_ = true;

    if (paper) {
      ok = ok && parent_.Upload(ints(g.binary_parent, g.num_binary)) &&
           left_.Upload(ints(g.binary_left, g.num_binary)) &&
           right_.Upload(ints(g.binary_right, g.num_binary)) && rule_w_.Upload(w);
      // Rule chunks of kThreads (thread mapping) and their parent ranges.
      const int chunks = (num_rules_ + kThreads - 1) / kThreads;
      std::vector<int> first(chunks), span(chunks);
      for (int c = 0; c < chunks; ++c) {
        const int lo = c * kThreads, hi = std::min(num_rules_, lo + kThreads) - 1;
        first[c] = g.binary_parent[lo];
        span[c] = g.binary_parent[hi] - g.binary_parent[lo] + 1;
        max_chunk_parents_ = std::max(max_chunk_parents_, span[c]);
      }
      num_chunks_ = chunks;
      ok = ok && chunk_first_.Upload(first) && chunk_count_.Upload(span);
      // Virtual parents: a parent's rules cut into pieces of at most kThreads.
      std::vector<int> vp_parent, vp_begin, vp_end;
      for (int p = 0; p < num_states_; ++p) {
        for (int lo = g.binary_parent_begin[p]; lo < g.binary_parent_begin[p + 1]; lo += kThreads) {
          vp_parent.push_back(p);
          vp_begin.push_back(lo);
          vp_end.push_back(std::min(lo + kThreads, g.binary_parent_begin[p + 1]));
        }
      }
      num_virtual_ = static_cast<int>(vp_parent.size());
      ok = ok && vp_parent_.Upload(vp_parent) && vp_begin_.Upload(vp_begin) &&
           vp_end_.Upload(vp_end);
      if (num_chunks_ > 65535 || num_virtual_ > 65535) {
        *error = "grammar too large for the paper kernels' grid (use pair-fused)";
        return false;
      }
      if (variant_ == Variant::kBlockReduceStaged &&
          2 * size_t(num_states_) * sizeof(float) > size_t(max_shared_optin_)) {
        *error = "too many states to stage two cells in shared memory";
        return false;
      }
    } else {
      if (aligned_) {
        // Each symbol's substates start at a multiple of 4 floats in an aligned row.
        aligned_first_.assign(num_symbols_, 0);
        for (int sym = 0; sym < num_symbols_; ++sym) {
          aligned_first_[sym] = aligned_states_;
          aligned_states_ += (g.symbol_num_substates[sym] + 3) / 4 * 4;
        }
        std::vector<int> index(num_states_);
        for (int s = 0; s < num_states_; ++s) {
          const int sym = g.state_symbol[s];
          index[s] = aligned_first_[sym] + s - g.symbol_first_state[sym];
        }
        ok = ok && aligned_index_.Upload(index);
      }
      ok = ok && BuildPairs(g, w, error);
      if (!error->empty()) return false;
    }
    if (!ok) {
      *error = "could not upload the grammar to the device";
      return false;
    }
    if (options.max_batch_bytes > 0) {
      budget_ = options.max_batch_bytes;
    } else {
      size_t free_bytes = 0, total = 0;
      cudaMemGetInfo(&free_bytes, &total);
      budget_ = static_cast<size_t>(free_bytes * 0.85);
    }
    if (cudaStreamCreate(&stream_) != cudaSuccess) {
      *error = "cudaStreamCreate failed";
      return false;
    }
    return true;
  }

  ~DeviceViterbiImpl() override {
    if (stream_) cudaStreamDestroy(stream_);
  }

  void SetProfiling(bool on) override {
    profile_ = on;
    profile_ms_.fill(0);
    profile_batches_ = 0;
  }

  std::string ProfileReport() const override {
    char text[256];
    std::snprintf(text, sizeof(text),
                  "%d batches: host wall %.1f ms; device: setup %.1f, binary %.1f, unary %.1f, "
                  "copy back (charts, or the trees read on the device) %.1f ms",
                  profile_batches_, profile_ms_[0], profile_ms_[1], profile_ms_[2], profile_ms_[3],
                  profile_ms_[4]);
    return text;
  }

  BatchResult InsideBatch(const std::vector<SentenceRef>& batch, std::vector<const float*>* charts,
                          std::string* error) override {
    const auto wall_begin = std::chrono::steady_clock::now();
    BatchResult result = InsideBatchImpl(batch, charts, error);
    if (profile_ && result == BatchResult::kOk) AddProfile(wall_begin);
    return result;
  }

  bool SupportsTrees() const override { return supports_trees_; }

  BatchResult ParseTrees(const std::vector<SentenceRef>& batch, std::vector<DeviceTree>* trees,
                         std::string* error) override {
    if (!supports_trees_) return DeviceViterbi::ParseTrees(batch, trees, error);
    const auto wall_begin = std::chrono::steady_clock::now();
    BatchResult result = ParseTreesImpl(batch, trees, error);
    if (profile_ && result == BatchResult::kOk) AddProfile(wall_begin);
    return result;
  }

  void SetPresenceStats(bool on) override {
    stats_ = on;
    present_sum_.clear(), cells_sum_.clear(), skipped_sum_.clear(), iterations_sum_.clear();
  }
  std::vector<double> PresentSymbolsBySpan() const override {
    std::vector<double> out(present_sum_.size(), 0.0);
    for (size_t w = 0; w < out.size(); ++w)
      if (cells_sum_[w] > 0) out[w] = present_sum_[w] / cells_sum_[w];
    return out;
  }
  std::vector<double> SkippedGroupsBySpan() const override {
    std::vector<double> out(skipped_sum_.size(), 0.0);
    for (size_t w = 0; w < out.size(); ++w)
      if (iterations_sum_[w] > 0) out[w] = skipped_sum_[w] / iterations_sum_[w];
    return out;
  }

  void AddProfile(std::chrono::steady_clock::time_point wall_begin) {
    ++profile_batches_;
    profile_ms_[0] +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_begin)
            .count();
    const int spans = static_cast<int>(level_begin_.size()) - 2;
    float ms = 0;
    cudaEventElapsedTime(&ms, events_[0], events_[1]);
    profile_ms_[1] += ms;
    for (int w = 1; w <= spans; ++w) {
      cudaEventElapsedTime(&ms, events_[2 * w - 1], events_[2 * w]);
      profile_ms_[2] += ms;
      cudaEventElapsedTime(&ms, events_[2 * w], events_[2 * w + 1]);
      profile_ms_[3] += ms;
    }
    cudaEventElapsedTime(&ms, events_[2 * spans + 1], events_[2 * spans + 2]);
    profile_ms_[4] += ms;
  }

  void Mark(int index) {
    if (!profile_) return;
    while (static_cast<int>(events_.size()) <= index) {
      cudaEvent_t e;
      cudaEventCreate(&e);
      events_.push_back(e);
    }
    cudaEventRecord(events_[index], stream_);
  }

  // Grows a batch buffer with a quarter of headroom, so that a long run's slightly larger batches
  // do not each free and allocate again (device memory only: pinned growth costs more, RESULTS.md);
  // the exact size when the headroom does not fit.
  template <typename Buffer>
  static bool Grow(Buffer& buffer, size_t count) {
    return count <= buffer.size() || buffer.Reserve(count + count / 4) || buffer.Reserve(count);
  }

  BatchResult InsideBatchImpl(const std::vector<SentenceRef>& batch,
                              std::vector<const float*>* charts, std::string* error) {
    charts->assign(batch.size(), nullptr);
    if (batch.empty()) return BatchResult::kOk;
    BatchResult result = RunInside(batch, error);
    if (result != BatchResult::kOk) return result;
    const size_t chart_floats = size_t(batch_cells_) * num_states_;
    PinnedArray<float>& host_chart = host_chart_[next_host_chart_];
    if (!host_chart.Reserve(chart_floats)) {
      cudaStreamSynchronize(stream_);
      *error = "cudaMallocHost failed";
      return BatchResult::kOutOfMemory;
    }
    const int max_n = static_cast<int>(level_begin_.size()) - 2;
    Mark(2 * max_n + 1);
    next_host_chart_ = 1 - next_host_chart_;
    cudaMemcpyAsync(host_chart.get(), chart_.get(), chart_floats * sizeof(float),
                    cudaMemcpyDeviceToHost, stream_);
    Mark(2 * max_n + 2);
    if ((result = Finish(error)) != BatchResult::kOk) return result;
    for (size_t i = 0; i < batch.size(); ++i)
      (*charts)[i] = host_chart.get() + size_t(base_[i]) * num_states_;
    return BatchResult::kOk;
  }

  BatchResult ParseTreesImpl(const std::vector<SentenceRef>& batch, std::vector<DeviceTree>* trees,
                             std::string* error) {
    trees->assign(batch.size(), {});
    if (batch.empty()) return BatchResult::kOk;
    BatchResult result = RunInside(batch, error);
    if (result != BatchResult::kOk) return result;
    const int num_sentences = static_cast<int>(batch.size());
    std::vector<int> offset(num_sentences + 1, 0), length(num_sentences);
    for (int i = 0; i < num_sentences; ++i) {
      length[i] = batch[i].length;
      offset[i + 1] = offset[i] + 6 * batch[i].length + 32;  // nodes: see DeviceTreeNode
    }
    // One upload: base, length, offset.
    std::vector<int> meta;
    meta.reserve(3 * num_sentences + 1);
    meta.insert(meta.end(), base_.begin(), base_.end());
    meta.insert(meta.end(), length.begin(), length.end());
    meta.insert(meta.end(), offset.begin(), offset.end());
    if (!Grow(tree_meta_, meta.size()) || !Grow(node_count_, num_sentences) ||
        !Grow(nodes_, offset.back()) || !host_meta_.Reserve(meta.size() + num_sentences) ||
        !host_nodes_.Reserve(offset.back())) {
      cudaStreamSynchronize(stream_);
      *error = "could not allocate the tree buffers";
      return BatchResult::kOutOfMemory;
    }
    int* host_meta = host_meta_.get();
    std::copy(meta.begin(), meta.end(), host_meta);
    const int max_n = static_cast<int>(level_begin_.size()) - 2;
    Mark(2 * max_n + 1);
    cudaMemcpyAsync(tree_meta_.get(), host_meta, meta.size() * sizeof(int), cudaMemcpyHostToDevice,
                    stream_);
    ExtractArgs x{chart_.get(),
                  num_states_,
                  tree_meta_.get(),
                  tree_meta_.get() + num_sentences,
                  tree_meta_.get() + 2 * num_sentences,
                  node_count_.get(),
                  nodes_.get(),
                  ex_bin_begin_.get(),
                  ex_bin_left_.get(),
                  ex_bin_right_.get(),
                  ex_bin_w_.get(),
                  unary_begin_.get(),
                  unary_child_.get(),
                  ex_un_w_.get(),
                  state_symbol_.get(),
                  phrasal_.get(),
                  1e-5};
    // A sentence's tree fills only the first of its 6n + 32 node slots, and the copy below takes
    // every slot: zeroed, it reads no uninitialized device memory (compute-sanitizer initcheck).
    cudaMemsetAsync(nodes_.get(), 0, size_t(offset.back()) * sizeof(int4), stream_);
    ExtractTreesKernel<<<num_sentences, kExtractThreads, 0, stream_>>>(x);
    int* host_count = host_meta + meta.size();
    cudaMemcpyAsync(host_count, node_count_.get(), num_sentences * sizeof(int),
                    cudaMemcpyDeviceToHost, stream_);
    cudaMemcpyAsync(host_nodes_.get(), nodes_.get(), size_t(offset.back()) * sizeof(int4),
                    cudaMemcpyDeviceToHost, stream_);
    Mark(2 * max_n + 2);
    if ((result = Finish(error)) != BatchResult::kOk) return result;
    for (int i = 0; i < num_sentences; ++i) {
      DeviceTree& tree = (*trees)[i];
      const int count = host_count[i];
      if (count == -1) {
        tree.status = DeviceTree::kNoParse;
      } else if (count >= 0) {
        tree.status = DeviceTree::kTree;
        tree.nodes.resize(count);
        const int4* src = host_nodes_.get() + offset[i];
        for (int k = 0; k < count; ++k) {
          DeviceTreeNode& node = tree.nodes[k];
          node.state = src[k].x;
          node.start = static_cast<int16_t>(src[k].y & 0xffff);
          node.end = static_cast<int16_t>(src[k].y >> 16);
          std::memcpy(&node.score, &src[k].z, sizeof(float));
          node.kind = src[k].w;
        }
      } else {
        // The host extracts this one: its chart is still on the device.
        tree.status = DeviceTree::kChart;
        tree.chart.resize(size_t(NumCells(batch[i].length)) * num_states_);
        if (cudaMemcpy(tree.chart.data(), chart_.get() + size_t(base_[i]) * num_states_,
                       tree.chart.size() * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
          *error = std::string("CUDA error: ") + cudaGetErrorString(cudaGetLastError());
          return BatchResult::kFailed;
        }
      }
    }
    return BatchResult::kOk;
  }

  // Waits for the batch; on success, gathers the presence statistics when they are on.
  BatchResult Finish(std::string* error) {
    cudaError_t status = cudaStreamSynchronize(stream_);
    if (status == cudaSuccess) status = cudaGetLastError();  // a launch error of the last span
    if (status != cudaSuccess) {
      *error = std::string("CUDA error: ") + cudaGetErrorString(status);
      cudaGetLastError();
      return BatchResult::kFailed;
    }
    if (stats_) GatherStats();
    return BatchResult::kOk;
  }

  void GatherStats() {
    const int max_n = static_cast<int>(level_begin_.size()) - 2;
    DeviceArray<unsigned long long> counters;
    if (!counters.Reserve(2 * size_t(max_n + 1))) return;
    cudaMemsetAsync(counters.get(), 0, 2 * size_t(max_n + 1) * sizeof(unsigned long long), stream_);
    std::vector<unsigned long long> iterations(max_n + 1, 0);
    const int tiles = static_cast<int>(classes_[0].pairs.size());
    for (int span = 1; span <= max_n; ++span) {
      const int count = level_begin_[span + 1] - level_begin_[span];
      if (count == 0) continue;
      LevelArgs a{chart_.get(), pre_.get(),  items_.get(), level_begin_[span],
                  span,         num_states_, nullptr,      0};
      PresenceStatsKernel<<<count, 128, 0, stream_>>>(a, present_.get(), num_symbols_,
                                                      counters.get() + span);
      if (mask_group_ > 0 && span >= 2) {
        const int groups = (count + mask_group_ - 1) / mask_group_;
        const size_t at = size_t(mask_offset_[span]) * mask_words_;
        SkipStatsKernel<<<256, 256, 0, stream_>>>(pair_symbols_.get(), tiles, groups,
                                                  left_mask_.get() + at, right_mask_.get() + at,
                                                  mask_words_, counters.get() + max_n + 1 + span);
        iterations[span] = static_cast<unsigned long long>(tiles) * groups;
      }
    }
    std::vector<unsigned long long> host(2 * size_t(max_n + 1));
    cudaMemcpy(host.data(), counters.get(), host.size() * sizeof(unsigned long long),
               cudaMemcpyDeviceToHost);
    if (present_sum_.size() < size_t(max_n + 1)) {
      present_sum_.resize(max_n + 1), cells_sum_.resize(max_n + 1);
      skipped_sum_.resize(max_n + 1), iterations_sum_.resize(max_n + 1);
    }
    for (int span = 1; span <= max_n; ++span) {
      present_sum_[span] += double(host[span]);
      cells_sum_[span] += level_begin_[span + 1] - level_begin_[span];
      skipped_sum_[span] += double(host[max_n + 1 + span]);
      iterations_sum_[span] += double(iterations[span]);
    }
  }

  // The batch's layout, buffers, uploads and every span length's kernels, queued on stream_ (the
  // chart stays on the device). Sets base_ (each sentence's first cell) and batch_cells_.
  BatchResult RunInside(const std::vector<SentenceRef>& batch, std::string* error) {
    const int num_sentences = static_cast<int>(batch.size());
    base_.assign(num_sentences, 0);
    std::vector<int> word(num_sentences);
    int64_t cells = 0, words = 0;
    int max_n = 0;
    size_t bytes = 0;
    bool any_allowed = false;
    for (int i = 0; i < num_sentences; ++i) {
      base_[i] = static_cast<int>(cells);
      word[i] = static_cast<int>(words);
      cells += NumCells(batch[i].length);
      words += batch[i].length;
      max_n = std::max(max_n, batch[i].length);
      bytes += BytesForSentence(batch[i].length);
      any_allowed = any_allowed || batch[i].allowed != nullptr;
    }
    batch_cells_ = cells;
    if (bytes > budget_ || cells >= std::numeric_limits<int>::max() / 2) {
      *error = "batch needs " + std::to_string(bytes) + " device bytes, over the budget";
      return BatchResult::kOutOfMemory;
    }
    // Items per span length, ordered by start then sentence.
    std::vector<CellItem> items;
    items.reserve(cells);
    level_begin_.assign(max_n + 2, 0);
    start_begin_.assign(max_n + 2, {});
    mask_offset_.assign(max_n + 2, 0);
    for (int span = 1; span <= max_n; ++span) {
      level_begin_[span] = static_cast<int>(items.size());
      for (int start = 0; start + span <= max_n; ++start) {
        start_begin_[span].push_back(static_cast<int>(items.size()));
        for (int i = 0; i < num_sentences; ++i)
          if (start + span <= batch[i].length)
            items.push_back({base_[i], batch[i].length, start, word[i]});
      }
      start_begin_[span].push_back(static_cast<int>(items.size()));
    }
    level_begin_[max_n + 1] = static_cast<int>(items.size());
    // Group masks: the groups of every span length, one after another.
    if (mask_group_ > 0) {
      for (int span = 1; span <= max_n; ++span) {
        const int count = level_begin_[span + 1] - level_begin_[span];
        mask_offset_[span + 1] = mask_offset_[span] + (count + mask_group_ - 1) / mask_group_;
      }
    }
    const size_t mask_entries = size_t(mask_offset_[max_n + 1]) * mask_words_;
    // kTable: one span length's split table at a time (the largest).
    size_t table_entries = 0;
    if (extra_ & kTable) {
      for (int span = 2; span <= max_n; ++span)
        table_entries =
            std::max(table_entries, size_t(level_begin_[span + 1] - level_begin_[span]) *
                                        (span - 1) * SplitTableStride(mask_words_));
    }

    const size_t chart_floats = size_t(cells) * num_states_;
    aligned_floats_ = aligned_ ? size_t(cells) * aligned_states_ : 0;
    if (faults_.FailAllocation() || !Grow(chart_, chart_floats) || !Grow(pre_, chart_floats) ||
        !Grow(present_, size_t(cells) * num_symbols_) ||
        !Grow(lexical_, size_t(words) * num_states_) || !Grow(items_, items.size()) ||
        (aligned_ && !Grow(aligned_chart_, size_t(cells) * aligned_states_)) ||
        (mask_entries > 0 &&
         (!Grow(left_mask_, mask_entries) || !Grow(right_mask_, mask_entries))) ||
        (any_allowed && !Grow(allowed_, size_t(cells) * num_symbols_)) ||
        (table_entries > 0 && !Grow(split_table_, table_entries))) {
      chart_.Free(), pre_.Free(), present_.Free(), lexical_.Free(), items_.Free();
      aligned_chart_.Free(), left_mask_.Free(), right_mask_.Free(), allowed_.Free();
      split_table_.Free();
      *error = "cudaMalloc failed for a batch of " + std::to_string(num_sentences) + " sentences";
      return BatchResult::kOutOfMemory;
    }
    if (!host_lexical_.Reserve(size_t(words) * num_states_) ||
        (any_allowed && !host_allowed_.Reserve(size_t(cells) * num_symbols_))) {
      *error = "cudaMallocHost failed";
      return BatchResult::kOutOfMemory;
    }
    // The previous batch's uploads read these pinned buffers: wait for them (the stream is idle
    // after each call's synchronization anyway).
    float* lex = host_lexical_.get();
    ForEachOnHostThreads(num_sentences, size_t(words) * num_states_, [&](int i) {
      const size_t count = size_t(batch[i].length) * num_states_;
      const double* src = batch[i].lexical;
      float* dst = lex + size_t(word[i]) * num_states_;
      for (size_t k = 0; k < count; ++k) dst[k] = static_cast<float>(src[k]);
    });
    if (any_allowed) {
      unsigned char* dst = host_allowed_.get();
      for (int i = 0; i < num_sentences; ++i) {
        const size_t count = size_t(NumCells(batch[i].length)) * num_symbols_;
        if (batch[i].allowed) {
          std::memcpy(dst + size_t(base_[i]) * num_symbols_, batch[i].allowed, count);
        } else {
          std::memset(dst + size_t(base_[i]) * num_symbols_, 1, count);
        }
      }
    }
    Mark(0);
    cudaMemcpyAsync(lexical_.get(), lex, size_t(words) * num_states_ * sizeof(float),
                    cudaMemcpyHostToDevice, stream_);
    cudaMemcpyAsync(items_.get(), items.data(), items.size() * sizeof(CellItem),
                    cudaMemcpyHostToDevice, stream_);
    if (any_allowed)
      cudaMemcpyAsync(allowed_.get(), host_allowed_.get(), size_t(cells) * num_symbols_,
                      cudaMemcpyHostToDevice, stream_);
    FillKernel<<<1024, 256, 0, stream_>>>(pre_.get(), chart_floats, kNegInfF);
    cudaMemsetAsync(present_.get(), 0, size_t(cells) * num_symbols_, stream_);
    if (aligned_)  // float4 loads read the padding between symbols (unused): no uninitialized read
      cudaMemsetAsync(aligned_chart_.get(), 0, size_t(cells) * aligned_states_ * sizeof(float),
                      stream_);
    if (!faults_.empty()) {
      std::vector<int32_t> lengths;
      for (const SentenceRef& s : batch) lengths.push_back(s.length);
      if (faults_.FailLaunch(lengths))  // CKY_FAULT_INJECT: a real invalid launch (no blocks)
        FillKernel<<<0, 256, 0, stream_>>>(pre_.get(), chart_floats, kNegInfF);
    }

    for (int span = 1; span <= max_n; ++span) {
      LevelArgs a{chart_.get(),
                  pre_.get(),
                  items_.get(),
                  level_begin_[span],
                  span,
                  num_states_,
                  aligned_ ? aligned_chart_.get() : nullptr,
                  aligned_states_};
      const int count = level_begin_[span + 1] - level_begin_[span];
      Mark(2 * span - 1);  // span 1: the end of the setup
      if (span == 1) {
        LexicalKernel<<<count, 256, 0, stream_>>>(a, lexical_.get());
      } else {
        if (mask_group_ > 0) {
          const size_t at = size_t(mask_offset_[span]) * mask_words_;
          GroupMaskKernel<<<mask_offset_[span + 1] - mask_offset_[span], 256,
                            2 * mask_words_ * sizeof(unsigned), stream_>>>(
              a, present_.get(), num_symbols_, count, mask_group_, mask_words_,
              left_mask_.get() + at, right_mask_.get() + at,
              (extra_ & kTable) ? split_table_.get() : nullptr);
        }
        if (!LaunchBinary(a, count, error)) {
          cudaStreamSynchronize(stream_);  // nothing of this batch runs on into the next one
          cudaGetLastError();
          return BatchResult::kFailed;
        }
      }
      Mark(2 * span);
      // -u: kUnaryCells cells per block once the launch has enough of them for about two waves
      // of 8 blocks per SM, fewer below.
      const int per_block = unary_cells_ ? std::clamp(count / (num_sms_ * 16), 1, kUnaryCells) : 1;
      if (per_block > 1) {
        UnaryCellsKernel<<<(count + per_block - 1) / per_block, 256,
                           per_block * num_states_ * sizeof(float), stream_>>>(
            a, count, per_block, chart_.get(), unary_begin_.get(), unary_child_.get(),
            unary_w_.get(), state_symbol_.get(), present_.get(), num_symbols_,
            aligned_ ? aligned_chart_.get() : nullptr, aligned_index_.get(),
            any_allowed ? allowed_.get() : nullptr);
      } else {
        UnaryKernel<<<count, 256, num_states_ * sizeof(float), stream_>>>(
            a, chart_.get(), unary_begin_.get(), unary_child_.get(), unary_w_.get(),
            state_symbol_.get(), present_.get(), num_symbols_,
            aligned_ ? aligned_chart_.get() : nullptr, aligned_index_.get(),
            any_allowed ? allowed_.get() : nullptr);
      }
    }
    return BatchResult::kOk;
  }

 private:
  bool LaunchBinary(const LevelArgs& a, int count, std::string* error) {
    RuleArrays rules{parent_.get(), left_.get(), right_.get(), rule_w_.get(), num_rules_};
    VirtualParents vp{vp_parent_.get(), vp_begin_.get(), vp_end_.get()};
    switch (variant_) {
      case Variant::kThreadAtomicGlobal:
        ThreadAtomicGlobalKernel<<<dim3(count, num_chunks_), kThreads, 0, stream_>>>(a, rules);
        break;
      case Variant::kThreadAtomicShared:
        if (!AllowDynamicShared(ThreadAtomicSharedKernel, max_chunk_parents_ * sizeof(float),
                                max_shared_optin_, "thread-atomic-shared", error))
          return false;
        ThreadAtomicSharedKernel<<<dim3(count, num_chunks_), kThreads,
                                   max_chunk_parents_ * sizeof(float), stream_>>>(
            a, rules, chunk_first_.get(), chunk_count_.get());
        break;
      case Variant::kBlockAtomicShared:
        BlockAtomicSharedKernel<<<dim3(count, num_virtual_), kThreads, 0, stream_>>>(a, rules, vp);
        break;
      case Variant::kBlockReduce:
        BlockReduceKernel<<<dim3(count, num_virtual_), kThreads, 0, stream_>>>(a, rules, vp);
        break;
      case Variant::kBlockReduceStaged: {
        const size_t shared = 2 * size_t(num_states_) * sizeof(float);
        if (!AllowDynamicShared(BlockReduceStagedKernel, shared, max_shared_optin_,
                                "block-reduce-staged", error))
          return false;
        BlockReduceStagedKernel<<<dim3(count, num_virtual_), kThreads, shared, stream_>>>(a, rules,
                                                                                          vp);
        break;
      }
      case Variant::kBlockReduceSeq: {
        const std::vector<int>& starts = start_begin_[a.span];
        for (size_t s = 0; s + 1 < starts.size(); ++s) {
          const int n = starts[s + 1] - starts[s];
          if (n == 0) continue;
          LevelArgs one = a;
          one.item_offset = starts[s];
          BlockReduceKernel<<<dim3(n, num_virtual_), kThreads, 0, stream_>>>(one, rules, vp);
        }
        break;
      }
      case Variant::kPairAcc8:
        if (!LaunchPairAcc<8>(a, count, error)) return false;
        break;
      case Variant::kPairAcc16:
        if (!LaunchPairAcc<16>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8:
        if (!LaunchPairSeg<8, 1, true, false, false>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8Unroll2:
        if (!LaunchPairSeg<8, 2, true, false, false>(a, count, error)) return false;
        break;
      case Variant::kPairSeg16:
        if (!LaunchPairSeg<16, 1, true, false, false>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8NoPad:
        if (!LaunchPairSeg<8, 1, false, false, false>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8Aligned:
        if (!LaunchPairSeg<8, 1, true, true, false>(a, count, error)) return false;
        break;
      case Variant::kPairSeg16Aligned:
        if (!LaunchPairSeg<16, 1, true, true, false>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8AlignedMask:
      case Variant::kPairSeg8AlignedMask512:
        if (!LaunchPairSeg<8, 1, true, true, true>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8AlignedMask512Min6:
        if (!LaunchPairSeg<8, 1, true, true, true, 6>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8AlignedMask512Min8:
      case Variant::kPairSeg8AlignedMask640Min8:
        if (!LaunchPairSeg<8, 1, true, true, true, 8>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8AlignedMask512Min7:
        if (!LaunchPairSeg<8, 1, true, true, true, 7>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8AlignedMaskPrefetch:
        if (!LaunchPairSeg<8, -1, true, true, true>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRules:
        if (!LaunchPairSeg<8, 1, true, true, true, 0, kLaneRules>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8AlignedMaskSplitPar:
        if (!LaunchPairSeg<8, 1, true, true, true, 0, kSplitPar>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8AlignedMaskTable:
        if (!LaunchPairSeg<8, 1, true, true, true, 0, kTable>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesSplitPar:
        if (!LaunchPairSeg<8, 1, true, true, true, 0, kLaneRules | kSplitPar>(a, count, error))
          return false;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesSplitParTable:
        if (!LaunchPairSeg<8, 1, true, true, true, 0, kLaneRules | kSplitPar | kTable>(a, count,
                                                                                       error))
          return false;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTable:
      case Variant::kPairSeg8AlignedMaskLaneRulesTableAdaptive:  // units: host side
      case Variant::kPairSeg8AlignedMaskLaneRulesTableUnary:
        if (!LaunchPairSeg<8, 1, true, true, true, 0, kLaneRules | kTable>(a, count, error))
          return false;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableKeep:
      case Variant::kPairSeg8AlignedMaskLaneRulesTableAdaptiveKeep:
        if (!LaunchPairSeg<8, 1, true, true, true, 0, kLaneRules | kTable | kKeepRules>(a, count,
                                                                                        error))
          return false;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableMulti:
        if (!LaunchPairSeg<8, 1, true, true, true, 0, kLaneRules | kTable | kMultiGroup>(a, count,
                                                                                         error))
          return false;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableMultiAdaptiveKeep:
      case Variant::kPairSeg8AlignedMaskLaneRulesTableMultiAdaptiveKeepUnary:
        if (!LaunchPairSeg<8, 1, true, true, true, 0,
                           kLaneRules | kTable | kMultiGroup | kKeepRules>(a, count, error))
          return false;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableMultiAdaptiveKeepMin5:
        if (!LaunchPairSeg<8, 1, true, true, true, 0,
                           kLaneRules | kTable | kMultiGroup | kKeepRules | kMin5>(a, count, error))
          return false;
        break;
      case Variant::kPairSeg8RtgakuOffsets:
        if (!LaunchRtgak<kRowOffsets>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8RtgakuOffsetsPrefetch:
        if (!LaunchRtgak<kRowOffsets | kPrefetchSplits>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8RtgakuOffsetsCpAsync:
        if (!LaunchRtgak<kRowOffsets | kCpAsync>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8RtgakuOffsetsMin5:
        if (!LaunchRtgak<kRowOffsets | kMin5>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8RtgakuOffsetsStaged:
        if (!LaunchRtgak<kRowOffsets | kStageRules>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8RtgakuOffsetsMin5Staged:
        if (!LaunchRtgak<kRowOffsets | kMin5 | kStageRules>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8RtgakuOffsetsPrefetchStaged:
        if (!LaunchRtgak<kRowOffsets | kPrefetchSplits | kStageRules>(a, count, error))
          return false;
        break;
      case Variant::kPairSeg8RtgakuOffsetsPrefetchList:
        if (!LaunchRtgak<kRowOffsets | kPrefetchSplits | kGroupList>(a, count, error)) return false;
        break;
      case Variant::kPairSeg8RtgakuOffsetsPrefetchStagedList:
        if (!LaunchRtgak<kRowOffsets | kPrefetchSplits | kStageRules | kGroupList>(a, count, error))
          return false;
        break;
      case Variant::kPairSeg8RtgakuOffsetsMin5StagedList:
        if (!LaunchRtgak<kRowOffsets | kMin5 | kStageRules | kGroupList>(a, count, error))
          return false;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableQuad:
        if (!LaunchPairSeg<8, 1, true, true, true, 0, kLaneRules | kTable | kQuadPad>(a, count,
                                                                                      error))
          return false;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableQuadPipe:
      case Variant::kPairSeg8AlignedMaskLaneRulesTableQuadPipeAdaptive:  // units: host side
        if (!LaunchPairSeg<8, 1, true, true, true, 0, kLaneRules | kTable | kQuadPad | kPipe>(
                a, count, error))
          return false;
        break;
      case Variant::kPairSeg8AlignedMaskLaneRulesTableQuadPipeKeep:
      case Variant::kPairSeg8AlignedMaskLaneRulesTableQuadPipeAdaptiveKeep:
        if (!LaunchPairSeg<8, 1, true, true, true, 0,
                           kLaneRules | kTable | kQuadPad | kPipe | kKeepRules>(a, count, error))
          return false;
        break;
      case Variant::kPairFused16:
      case Variant::kPairFused16Wide:
        if (!LaunchPairFused<16>(a, count, error)) return false;
        break;
      case Variant::kPairFused8:
      case Variant::kPairFused8Wide:
      case Variant::kPairFused8Classes:
        if (!LaunchPairFused<8>(a, count, error)) return false;
        break;
      case Variant::kPairFused4:
        if (!LaunchPairFused<4>(a, count, error)) return false;
        break;
    }
    const cudaError_t launch = cudaGetLastError();
    if (launch != cudaSuccess) {
      *error = std::string("kernel launch failed: ") + cudaGetErrorString(launch);
      return false;
    }
    return true;
  }

  PairArrays PairArraysFor(const SizeClass& c) const {
    return {pair_info_.get(),     pair_symbols_.get(), pair_pl_begin_.get(), pl_parent_.get(),
            pl_rule_begin_.get(), key_.get(),          key_w_.get(),         c.device_pairs.get()};
  }

  template <int G>
  bool LaunchPairAcc(const LevelArgs& a, int count, std::string* error) {
    const int max_splits = a.span - 1;
    const int groups = (count + G - 1) / G;
    const SizeClass& c = classes_[0];  // every tile, heaviest first
    const size_t shared =
        (size_t(G) * (num_states_ + c.max_bc) + 2 * size_t(G) * max_splits) * sizeof(float);
    if (!AllowDynamicShared(PairAccKernel<G>, shared, max_shared_optin_, "pair-acc", error))
      return false;
    const PairArrays p = PairArraysFor(c);
    // Tile chunks per cell group: enough blocks for about 4 waves, as few chunks as possible (each
    // chunk flushes its own maxima).
    const int tiles = static_cast<int>(c.pairs.size());
    const int chunks = std::max(1, std::min({tiles, 256, (num_sms_ * 16 + groups - 1) / groups}));
    PairAccKernel<G><<<dim3(groups, chunks), kThreads, shared, stream_>>>(
        a, p, present_.get(), num_symbols_, count, max_splits, c.max_bc, tiles);
    return true;
  }

  // kMinBlocks > 0: PairSegKernelMinBlocks, else PairSegKernel (with the kExtra options).
  template <int G, int kSplitUnroll, bool kPad, bool kAligned, bool kMask, int kMinBlocks = 0,
            int kExtra = 0>
  bool LaunchPairSeg(const LevelArgs& a, int count, std::string* error) {
    static_assert(kMinBlocks == 0 || kExtra == 0);
    constexpr int kRowBits = kRowOffsets | kPrefetchSplits | kCpAsync | kGroupList;
    // -o: 32-bit row offsets need an aligned chart of fewer than 2^32 floats; a batch with a
    // larger one runs the kernel without -o, -p, -c, -n.
    if constexpr ((kExtra & kRowOffsets) != 0) {
      if (uint64_t(aligned_floats_) >= (uint64_t(1) << 32))
        return LaunchPairSeg<G, kSplitUnroll, kPad, kAligned, kMask, 0, kExtra & ~kRowBits>(
            a, count, error);
    }
    const auto kernel = [] {
      if constexpr (kMinBlocks > 0) {
        return &PairSegKernelMinBlocks<G, kSplitUnroll, kPad, kAligned, kMask, kMinBlocks>;
      } else if constexpr ((kExtra & (kQuadPad | kMin5)) != 0) {
        return &PairSegKernelQuad<G, kExtra>;
      } else if constexpr ((kExtra & kPrefetchSplits) != 0) {
        return &PairSegKernelMin4<G, kExtra>;
      } else {
        return &PairSegKernel<G, kSplitUnroll, kPad, kAligned, kMask, kExtra>;
      }
    }();
    const int max_splits = a.span - 1;
    const int groups = (count + G - 1) / G;
    const SizeClass& c = classes_[0];  // every tile, heaviest first
    // kPipe: double-buffered split lists; kMultiGroup: max_k groups' lists, max_k the most (4,
    // 2, 1) that keeps the block within 44 KB (5 blocks per SM) or within the one-group size.
    // kCpAsync: each thread's ring of kRingSlots split points (two float4s each) after the
    // lists, and 12 KB more in the budget (4 blocks per SM, which the registers allow anyway).
    constexpr size_t kRingBytes =
        (kExtra & kCpAsync) ? size_t(kRingSlots) * 2 * kThreads * sizeof(float4) : 0;
    const auto shared_for = [&](int lists) {
      return (size_t(BestFloats(G, c.max_bc)) + 2 * size_t(lists) * G * max_splits) *
                 sizeof(float) +
             kRingBytes;
    };
    int max_k = 1;
    if constexpr ((kExtra & kMultiGroup) != 0) {
      const size_t budget = std::max<size_t>(shared_for(1), ((kExtra & kCpAsync) ? 56 : 44) * 1024);
      for (int k : {kMaxGroupsInFlight, 2})
        if (shared_for(k) <= budget) {
          max_k = k;
          break;
        }
    }
    const size_t shared = shared_for((kExtra & kPipe) ? 2 : max_k);
    if (!AllowDynamicShared(kernel, shared, max_shared_optin_, "pair-seg", error)) return false;
    const PairArrays p = PairArraysFor(c);
    const int tiles = static_cast<int>(c.pairs.size());
    const GroupGrid grid = GroupGridFor(groups, tiles, num_sms_);
    const size_t masks = kMask ? size_t(mask_offset_[a.span]) * mask_words_ : 0;
    const LaneArrays lanes{lane_units_.get(), lane_unit_begin_.get(), lane_rules_.get(),
                           (kExtra & kTable) ? split_table_.get() : nullptr, max_k};
    kernel<<<dim3(grid.launched_x, tiles), kThreads, shared, stream_>>>(
        a, p, present_.get(), num_symbols_, count, max_splits, c.max_bc, grid.per_block,
        kMask ? left_mask_.get() + masks : nullptr, kMask ? right_mask_.get() + masks : nullptr,
        mask_words_, lanes);
    return true;
  }

  // -rtgak plus kMore (-o, -p, -c, -5, -l, -n); kAdaptiveUnits is host side only.
  template <int kMore>
  bool LaunchRtgak(const LevelArgs& a, int count, std::string* error) {
    return LaunchPairSeg<8, 1, true, true, true, 0, (kRtgak & ~kAdaptiveUnits) | kMore>(a, count,
                                                                                        error);
  }

  template <int G>
  bool LaunchPairFused(const LevelArgs& a, int count, std::string* error) {
    const int max_splits = a.span - 1;
    const int groups = (count + G - 1) / G;
    for (SizeClass& c : classes_) {
      if (c.pairs.empty()) continue;
      const size_t shared = (size_t(G) * c.max_bc + 2 * size_t(G) * max_splits) * sizeof(float);
      if (!AllowDynamicShared(PairFusedKernel<G>, shared, max_shared_optin_, "pair-fused", error))
        return false;
      const PairArrays p = PairArraysFor(c);
      const int tiles = static_cast<int>(c.pairs.size());  // of the class
      const GroupGrid grid = GroupGridFor(groups, tiles, num_sms_);
      PairFusedKernel<G><<<dim3(grid.launched_x, tiles), kThreads, shared, stream_>>>(
          a, p, present_.get(), num_symbols_, count, max_splits, c.max_bc, grid.per_block);
    }
    return true;
  }

  // Groups the rules by base child pair (symbol of left, symbol of right), cut into bands of B's
  // substates of at most kMaxTileBc substate pairs, then by parent, then key.
  bool BuildPairs(const GrammarArrays& g, const std::vector<float>& w, std::string* error) {
    std::map<std::pair<int, int>, std::vector<int64_t>> by_pair;
    for (int64_t r = 0; r < g.num_binary; ++r)
      by_pair[{g.state_symbol[g.binary_left[r]], g.state_symbol[g.binary_right[r]]}].push_back(r);
    std::vector<int4> info;
    std::vector<int2> symbols;
    std::vector<int> pl_begin{0}, pl_parent, pl_rule_begin{0}, key;
    std::vector<float> key_w;
    // One launch per span length over every tile (heaviest first), or one per size class.
    const std::vector<int> limits =
        size_classes_ ? std::vector<int>{64, 128, 256, band_limit_} : std::vector<int>{band_limit_};
    std::vector<int> tile_rules;
    // kLaneRules: units of at most kUnitRules rules of one parent, per tile longest first.
    std::vector<int4> units;
    std::vector<int> unit_begin{0};
    for (auto& [symbols_pair, all_rules] : by_pair) {
      const int b_sym = symbols_pair.first, c_sym = symbols_pair.second;
      const int b_first = g.symbol_first_state[b_sym], s_b = g.symbol_num_substates[b_sym];
      const int c_first = g.symbol_first_state[c_sym], s_c = g.symbol_num_substates[c_sym];
      if (s_c > band_limit_) {
        *error = "a symbol has more substates than the pair-fused kernels support";
        return false;
      }
      // kQuadPad: pairs numbered b x s_c4 + c (s_c rounded up to 4), bands of whole 4-row blocks.
      const bool quad = (extra_ & kQuadPad) != 0;
      const int s_c4 = (s_c + 3) / 4 * 4;
      int rows = std::max(1, band_limit_ / (quad ? s_c4 : s_c));
      if (aligned_ && rows >= 4) rows -= rows % 4;  // bands start at aligned rows
      for (int b_lo = 0; b_lo < s_b; b_lo += rows) {
        const int b_hi = std::min(s_b, b_lo + rows);
        std::vector<int64_t> rules;
        for (int64_t r : all_rules) {
          const int b = g.binary_left[r] - b_first;
          if (b >= b_lo && b < b_hi) rules.push_back(r);
        }
        if (rules.empty()) continue;
        int4 pinfo{b_first + b_lo, b_hi - b_lo, c_first, s_c};
        // Keys and rules use state numbers; only the split loop's row offsets are aligned.
        const int4 state_info = pinfo;
        if (aligned_) pinfo.x = aligned_first_[b_sym] + b_lo, pinfo.z = aligned_first_[c_sym];
        const int pair_index = static_cast<int>(info.size());
        info.push_back(pinfo);
        symbols.push_back({b_sym, c_sym});
        tile_rules.push_back(static_cast<int>(rules.size()));
        std::stable_sort(rules.begin(), rules.end(), [&](int64_t x, int64_t y) {
          return g.binary_parent[x] < g.binary_parent[y];
        });
        const int tile_key_begin = static_cast<int>(key.size());
        for (size_t i = 0; i < rules.size(); ++i) {
          const int64_t r = rules[i];
          if (i == 0 || g.binary_parent[r] != g.binary_parent[rules[i - 1]]) {
            if (i > 0) pl_rule_begin.push_back(static_cast<int>(key.size()));
            pl_parent.push_back(g.binary_parent[r]);
          }
          const int b = g.binary_left[r] - state_info.x, c = g.binary_right[r] - state_info.z;
          key.push_back(b * (quad ? s_c4 : pinfo.w) + c);
          key_w.push_back(w[r]);
        }
        pl_rule_begin.push_back(static_cast<int>(key.size()));
        pl_begin.push_back(static_cast<int>(pl_parent.size()));
        if (extra_ & kLaneRules) {
          std::vector<int4> tile_units;
          const int tile_key_end = static_cast<int>(key.size());
          const int cap =
              (extra_ & kAdaptiveUnits)
                  ? std::clamp((tile_key_end - tile_key_begin + 191) / 192, 4, kUnitRules)
                  : kUnitRules;
          for (int lo = tile_key_begin; lo < tile_key_end;) {
            const int parent = g.binary_parent[rules[lo - tile_key_begin]];
            int hi = lo;
            while (hi < tile_key_end && hi - lo < cap &&
                   g.binary_parent[rules[hi - tile_key_begin]] == parent)
              ++hi;
            tile_units.push_back({parent, lo, hi, 0});
            lo = hi;
          }
          std::stable_sort(tile_units.begin(), tile_units.end(),
                           [](const int4& x, const int4& y) { return x.z - x.y > y.z - y.y; });
          units.insert(units.end(), tile_units.begin(), tile_units.end());
          unit_begin.push_back(static_cast<int>(units.size()));
        }
        const int bc = quad ? (pinfo.y + 3) / 4 * 4 * s_c4 : pinfo.y * pinfo.w;
        for (size_t c = 0; c < limits.size(); ++c) {
          // The last class takes the rest (kQuadPad: 4 rows of a symbol over 256 substates).
          if (bc <= limits[c] || c + 1 == limits.size()) {
            classes_[c].pairs.push_back(pair_index);
            classes_[c].max_bc = std::max(classes_[c].max_bc, bc);
            break;
          }
        }
      }
    }
    for (SizeClass& c : classes_) {
      std::stable_sort(c.pairs.begin(), c.pairs.end(),
                       [&](int x, int y) { return tile_rules[x] > tile_rules[y]; });
      if (c.pairs.size() > 65535) {
        *error = "too many child pairs for one launch";
        return false;
      }
      if (!c.device_pairs.Upload(c.pairs)) return false;
    }
    if (extra_ & kLaneRules) {
      // Each rule's offset in sh_best (BestOffset<8, true>) and log-prob in one 8-byte load.
      std::vector<int2> packed(key.size());
      for (size_t r = 0; r < key.size(); ++r) {
        int bits;
        std::memcpy(&bits, &key_w[r], sizeof(bits));
        packed[r] = {key[r] * 8 + 4 * (key[r] >> 2), bits};
      }
      if (!lane_units_.Upload(units) || !lane_unit_begin_.Upload(unit_begin) ||
          !lane_rules_.Upload(packed))
        return false;
    }
    return pair_info_.Upload(info) && pair_symbols_.Upload(symbols) &&
           pair_pl_begin_.Upload(pl_begin) && pl_parent_.Upload(pl_parent) &&
           pl_rule_begin_.Upload(pl_rule_begin) && key_.Upload(key) && key_w_.Upload(key_w);
  }

  std::string kernel_;
  FaultInjector faults_;  // CKY_FAULT_INJECT, read at Init
  Variant variant_ = Variant::kPairSeg8Aligned;
  int num_states_ = 0, num_symbols_ = 0, num_rules_ = 0;
  int max_shared_optin_ = 48 * 1024;
  int num_sms_ = 132;
  bool profile_ = false;
  std::array<double, 5> profile_ms_{};  // host wall, setup, binary, unary, copy back
  int profile_batches_ = 0;
  std::vector<cudaEvent_t> events_;
  int band_limit_ = 512;            // most substate pairs in a tile of the pair-fused kernels
  bool size_classes_ = false;       // pair-fused: one launch per tile size class
  bool aligned_ = false;            // pair-seg-*-a4: tiles read aligned_chart_ with float4 loads
  int aligned_states_ = 0;          // floats per aligned_chart_ row (a multiple of 4)
  size_t aligned_floats_ = 0;       // this batch's aligned chart (kRowOffsets needs < 2^32)
  std::vector<int> aligned_first_;  // per symbol: its first position in an aligned row
  size_t budget_ = 0;
  cudaStream_t stream_ = nullptr;
  // Presence masks per cell group (kernel 9 with kMask): cells per group (0: no masks), 32-bit
  // words per mask, each span length's first group.
  int mask_group_ = 0;
  int mask_words_ = 1;
  int extra_ = 0;                      // kernel 9's kLaneRules / kSplitPar / kTable ... bits
  bool unary_cells_ = false;           // -u: UnaryCellsKernel
  DeviceArray<unsigned> split_table_;  // kTable: one span length's split table
  // kLaneRules: per tile its units, per unit (parent, rules), per rule (sh_best offset, log-prob).
  DeviceArray<int4> lane_units_;
  DeviceArray<int> lane_unit_begin_;
  DeviceArray<int2> lane_rules_;
  std::vector<int> mask_offset_;
  DeviceArray<unsigned> left_mask_, right_mask_;
  DeviceArray<unsigned char> allowed_;  // SentenceRef::allowed, the batch's cells
  PinnedArray<unsigned char> host_allowed_;
  // Presence statistics (SetPresenceStats), per span length.
  bool stats_ = false;
  std::vector<double> present_sum_, cells_sum_, skipped_sum_, iterations_sum_;
  // Device tree extraction (ParseTrees).
  bool supports_trees_ = false;
  DeviceArray<int> ex_bin_begin_, ex_bin_left_, ex_bin_right_;
  DeviceArray<double> ex_bin_w_, ex_un_w_;
  DeviceArray<unsigned char> phrasal_;
  DeviceArray<int> tree_meta_, node_count_;
  DeviceArray<int4> nodes_;
  PinnedArray<int> host_meta_;
  PinnedArray<int4> host_nodes_;
  std::vector<int> base_;  // the batch's sentences' first cells
  int64_t batch_cells_ = 0;

  DeviceArray<int> state_symbol_, unary_begin_, unary_child_;
  DeviceArray<int> aligned_index_;    // per state: its position in an aligned_chart_ row
  DeviceArray<float> aligned_chart_;  // pair-seg-*-a4 batch buffer
  DeviceArray<float> unary_w_;
  // Paper kernels.
  DeviceArray<int> parent_, left_, right_;
  DeviceArray<float> rule_w_;
  DeviceArray<int> chunk_first_, chunk_count_, vp_parent_, vp_begin_, vp_end_;
  int num_chunks_ = 0, max_chunk_parents_ = 1, num_virtual_ = 0;
  // Pair-fused kernels.
  DeviceArray<int4> pair_info_;
  DeviceArray<int2> pair_symbols_;
  DeviceArray<int> pair_pl_begin_, pl_parent_, pl_rule_begin_, key_;
  DeviceArray<float> key_w_;
  std::array<SizeClass, 4> classes_;
  // Batch buffers.
  DeviceArray<float> chart_, pre_, lexical_;
  DeviceArray<unsigned char> present_;
  DeviceArray<CellItem> items_;
  PinnedArray<float> host_lexical_;
  PinnedArray<float>
      host_chart_[2];  // alternate calls: a caller may read one while we fill the other
  int next_host_chart_ = 0;
  std::vector<int> level_begin_;
  std::vector<std::vector<int>> start_begin_;
};

}  // namespace

std::vector<std::string> ViterbiKernelNames() {
  std::vector<std::string> names;
  for (const VariantSpec& spec : Variants()) names.push_back(spec.name);
  return names;
}

std::unique_ptr<DeviceViterbi> DeviceViterbi::Create(const GrammarArrays& grammar,
                                                     const DeviceViterbiOptions& options,
                                                     std::string* error) {
  error->clear();
  auto impl = std::make_unique<DeviceViterbiImpl>();
  if (!impl->Init(grammar, options, error)) {
    if (error->empty()) *error = "could not set up the CUDA Viterbi backend";
    return nullptr;
  }
  return impl;
}

}  // namespace cky::cuda
