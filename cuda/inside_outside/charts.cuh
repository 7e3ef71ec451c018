// The chart layout of the sum-product passes and their per-cell kernels (scales, lexical rows, the
// unary layer with normalization, log P(w)); inside_outside.cu's pair-sum and max-rule kernels
// read and write through it. For cuda/inside_outside/'s .cu files (product_max_rule.cu through
// max_rule_kernels.cuh).
#pragma once

#include <cuda_runtime.h>

#include <limits>

#include "cuda/common/device_helpers.cuh"

namespace cky::cuda::io {
// Each .cu file that includes this gets its own copy of the kernels (internal linkage).
namespace {

// *address = max(*address, value) in one native atomic, for doubles that are never NaN: non-negative
// doubles order like signed 64-bit integers and negative ones in reverse like unsigned ones
// (-infinity, the initial value, included); -0.0 is made +0.0 first.
__device__ __forceinline__ void AtomicMaxDouble(double* address, double value) {
  value = __dadd_rn(value, 0.0);
  if (value >= 0) {
    atomicMax(reinterpret_cast<long long*>(address), __double_as_longlong(value));
  } else {
    atomicMin(reinterpret_cast<unsigned long long*>(address),
              static_cast<unsigned long long>(__double_as_longlong(value)));
  }
}

constexpr int kThreads = 256;
constexpr int kQuad = 4;  // register blocking: 4 x 4 substate pairs per thread
constexpr double kNegInfD = -std::numeric_limits<double>::infinity();

// One cell of one span length.
struct CellItem {
  int base;      // batch-wide index of the sentence's first cell
  int n;         // sentence length
  int start;     // start of the span
  int word;      // batch-wide index of the sentence's first word (lexical rows)
  int sentence;  // index in the batch
  int pad;
};

struct Charts {
  double* in;                  // [cell][state] inside values
  double* in_scale;            // [cell]
  double* out;                 // [cell][state] outpre values
  double* out_scale;           // [cell]
  double* acc;                 // [cell][state] binary sums being accumulated (inside, then outside)
  double* ref_scale;           // [cell] the reference scale M of the sums in acc
  unsigned char* present_in;   // [cell][symbol]: some substate has a nonzero inside value
  unsigned char* present_out;  // [cell][symbol]: some substate has a nonzero outpre value
  double* log_likelihood;      // [sentence]
  int num_states;
  int num_symbols;
  // [cell][state], 1 = usable (coarse-to-fine pruning, MaskedMaxRuleBatch); null: every item.
  // Inside values of other items are zeroed below and above the unary layer (as
  // parser/inside_outside_cpu.h's FastInsideOutside), so the presence flags skip them as partners.
  const unsigned char* allowed = nullptr;
  // Masked dispatch 2 (DeviceInsideOutsideOptions::masked_dispatch; set only with `allowed`):
  // dead_cells: the unary + normalize kernel writes a cell without any usable item as empty at
  // once, and skips the rules of pruned states. group_present: per group of the pair-sum launch,
  // [group][0][symbol] = 1 when the symbol is present in some X partner cell of the group's cells,
  // [group][1][symbol] the same for Y partner cells (GroupPresenceKernel); the pair-sum kernel
  // skips a (tile, group) whose X or Y symbol is absent there without reading the partners' flags.
  bool dead_cells = false;
  const unsigned char* group_present = nullptr;
};

enum Mode { kInside = 0, kOutLeft = 1, kOutRight = 2 };

// The partner cells of target item `it` (span `span`), partner k: X cell, Y cell.
template <int kMode>
__device__ __forceinline__ int NumPartners(const CellItem& it, int span) {
  if (kMode == kInside) return span - 1;
  if (kMode == kOutLeft) return it.n - (it.start + span);
  return it.start;
}

template <int kMode>
__device__ __forceinline__ void Partner(const CellItem& it, int span, int k, int* xc, int* yc) {
  const int end = it.start + span;
  if (kMode == kInside) {  // left [start, mid), right [mid, end)
    const int mid = it.start + 1 + k;
    *xc = it.base + ChartCellIndex(it.n, it.start, mid);
    *yc = it.base + ChartCellIndex(it.n, mid, end);
  } else if (kMode == kOutLeft) {  // parent [start, j), right sibling [end, j)
    const int j = end + 1 + k;
    *xc = it.base + ChartCellIndex(it.n, it.start, j);
    *yc = it.base + ChartCellIndex(it.n, end, j);
  } else {  // parent [i, end), left sibling [i, start)
    const int i = k;
    *xc = it.base + ChartCellIndex(it.n, i, end);
    *yc = it.base + ChartCellIndex(it.n, i, it.start);
  }
}

// The reference scale of each target cell: the largest sum of partner scales (both outside
// directions for the outside pass); the top cell's outside is seeded here (outpost(ROOT_0) = 1
// when the sentence has a parse).
__global__ void RefScaleKernel(Charts c, const CellItem* items, int item_offset, int count,
                               int span, int outside) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= count) return;
  const CellItem it = items[item_offset + e];
  const int target = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  double best = kNegInfD;
  if (!outside) {
    for (int k = 0; k < NumPartners<kInside>(it, span); ++k) {
      int xc, yc;
      Partner<kInside>(it, span, k, &xc, &yc);
      best = fmax(best, c.in_scale[xc] + c.in_scale[yc]);
    }
  } else if (span == it.n) {
    const bool parsed = c.in[size_t(target) * c.num_states] > 0;  // ROOT_0 is state 0
    best = parsed ? 0.0 : kNegInfD;
    if (parsed) c.acc[size_t(target) * c.num_states] = 1.0;
  } else if (c.in_scale[target] > kNegInfD) {
    // A cell whose inside is all zero gets no outside (parser/inside_outside.cpp skips sending to
    // it; only its zero-inside states would differ).
    for (int k = 0; k < NumPartners<kOutLeft>(it, span); ++k) {
      int xc, yc;
      Partner<kOutLeft>(it, span, k, &xc, &yc);
      best = fmax(best, c.out_scale[xc] + c.in_scale[yc]);
    }
    for (int k = 0; k < NumPartners<kOutRight>(it, span); ++k) {
      int xc, yc;
      Partner<kOutRight>(it, span, k, &xc, &yc);
      best = fmax(best, c.out_scale[xc] + c.in_scale[yc]);
    }
  }
  c.ref_scale[target] = best;
}

// Span 1 of the inside pass: acc = exp(lexical - M), M = the cell's largest lexical log-score.
__global__ void LexicalKernel(Charts c, const CellItem* items, int item_offset,
                              const double* lexical) {
  const CellItem it = items[item_offset + blockIdx.x];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + 1);
  const double* row = lexical + size_t(it.word + it.start) * c.num_states;
  __shared__ double sh_max[kThreads / 32];
  double m = kNegInfD;
  for (int s = threadIdx.x; s < c.num_states; s += blockDim.x) m = fmax(m, row[s]);
  for (int offset = 16; offset > 0; offset >>= 1)
    m = fmax(m, __shfl_xor_sync(0xffffffffu, m, offset));
  if (threadIdx.x % 32 == 0) sh_max[threadIdx.x / 32] = m;
  __syncthreads();
  m = kNegInfD;
  for (int w = 0; w < blockDim.x / 32; ++w) m = fmax(m, sh_max[w]);
  for (int s = threadIdx.x; s < c.num_states; s += blockDim.x)
    c.acc[size_t(cell) * c.num_states + s] = m > kNegInfD ? exp(row[s] - m) : 0.0;
  if (threadIdx.x == 0) c.ref_scale[cell] = m;
}

// The unary layer of one cell, then normalization: values = (acc + sum_u p_u acc[other]) / max,
// scale = ref_scale + log(max); presence flags. Inside: `begin/other` are the sum unaries by
// parent (other = child); outside: by child (other = parent). A block per cell; dynamic shared:
// num_states doubles.
__global__ void UnaryNormalizeKernel(Charts c, const CellItem* items, int item_offset, int span,
                                     const int* __restrict__ begin, const int* __restrict__ other,
                                     const double* __restrict__ prob,
                                     const int* __restrict__ state_symbol, int outside) {
  extern __shared__ double sh_acc[];
  __shared__ double sh_max[kThreads / 32];
  const CellItem it = items[item_offset + blockIdx.x];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  const double* acc = c.acc + size_t(cell) * c.num_states;
  // Pruned items are zero inside and outside (parser/inside_outside_cpu.h's FastInsideOutside).
  const unsigned char* allowed = c.allowed ? c.allowed + size_t(cell) * c.num_states : nullptr;
  double* values = (outside ? c.out : c.in) + size_t(cell) * c.num_states;
  if (c.dead_cells) {
    // Masked dispatch 2: a cell without partners (reference scale -infinity) or without an allowed
    // state ends empty whatever its sums: all zero, scale -infinity, no presence flag.
    bool live = c.ref_scale[cell] > kNegInfD;
    if (live && allowed) {
      bool any = false;
      for (int s = threadIdx.x; s < c.num_states; s += blockDim.x) any = any || allowed[s];
      live = __syncthreads_or(any);
    }
    if (!live) {  // uniform over the block
      for (int s = threadIdx.x; s < c.num_states; s += blockDim.x) values[s] = 0.0;
      if (threadIdx.x == 0) (outside ? c.out_scale : c.in_scale)[cell] = kNegInfD;
      return;
    }
  }
  for (int s = threadIdx.x; s < c.num_states; s += blockDim.x)
    sh_acc[s] = !allowed || allowed[s] ? acc[s] : 0.0;
  __syncthreads();
  // A lane per state, 32 consecutive states a warp: a state without unary rules (or pruned) is
  // its lane's own; the warp then sums each of its states' unary rules together (lanes over the
  // rules, as a warp per state did: the same additions in the same order).
  constexpr unsigned kAll = 0xffffffffu;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  double local_max = 0;
  for (int s = threadIdx.x; s - lane < c.num_states; s += blockDim.x) {
    const bool here = s < c.num_states;
    const bool pruned = here && allowed && !allowed[s];
    int first = 0, end = 0;
    if (here && !pruned) first = __ldg(begin + s), end = __ldg(begin + s + 1);
    double mine = 0;
    for (unsigned todo = __ballot_sync(kAll, first < end); todo != 0; todo &= todo - 1) {
      const int k = __ffs(todo) - 1;
      const int f = __shfl_sync(kAll, first, k), e = __shfl_sync(kAll, end, k);
      double sum = 0;
      for (int u = f + lane; u < e; u += 32)
        sum = fma(__ldg(prob + u), sh_acc[__ldg(other + u)], sum);
      for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(kAll, sum, offset);
      if (lane == k) mine = sum;
    }
    if (here) {
      const double v = pruned ? 0.0 : mine + sh_acc[s];
      values[s] = v;
      local_max = fmax(local_max, v);
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1)
    local_max = fmax(local_max, __shfl_xor_sync(kAll, local_max, offset));
  if (lane == 0) sh_max[warp] = local_max;
  __syncthreads();
  double m = 0;
  for (int w = 0; w < blockDim.x / 32; ++w) m = fmax(m, sh_max[w]);
  const double ref = c.ref_scale[cell];
  const bool empty = !(m > 0) || ref == kNegInfD;
  const double inv = empty ? 0.0 : 1.0 / m;
  unsigned char* present = (outside ? c.present_out : c.present_in) + size_t(cell) * c.num_symbols;
  // Each thread rescales the states it wrote (no barrier needed between its write and its read).
  for (int s = threadIdx.x; s < c.num_states; s += blockDim.x) {
    const double v = values[s] * inv;
    values[s] = v;
    if (v > 0) present[__ldg(state_symbol + s)] = 1;
  }
  if (threadIdx.x == 0) {
    (outside ? c.out_scale : c.in_scale)[cell] = empty ? kNegInfD : ref + log(m);
  }
}

// log P(w) of each sentence: in(ROOT_0) over the whole sentence.
__global__ void LikelihoodKernel(Charts c, const int* sentence_top, int num_sentences) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= num_sentences) return;
  const int top = sentence_top[i];
  const double v = c.in[size_t(top) * c.num_states];
  c.log_likelihood[i] = v > 0 ? log(v) + c.in_scale[top] : kNegInfD;
}

}  // namespace
}  // namespace cky::cuda::io
