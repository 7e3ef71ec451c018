// Sum-product inside/outside and max-rule passes on a CUDA device: kernels, then the batch dispatch
// (DeviceInsideOutsideImpl). cuda/inside_outside/inside_outside.h describes the mapping.
//
// Copied from cuda/viterbi.cu (to be shared once the layout branch has landed): CellIndex,
// DeviceArray, PinnedArray, and the pair-fused kernel's structure (tiles of child pairs cut into
// bands, groups of G cells, presence-flag split skipping, 4 x 4 register blocking, a warp per
// parent state), here in doubles with sums instead of maxima.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "cuda/common/device_helpers.cuh"
#include "cuda/common/host_parallel.h"
#include "cuda/inside_outside/inside_outside.h"
#include "cuda/inside_outside/sum_layouts.h"

namespace cky::cuda {
namespace {

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

// ---------------------------------------------------------------------------------------------
// Pair-sum: the binary sums of one span length, inside or one outside direction.

enum Mode { kInside = 0, kOutLeft = 1, kOutRight = 2 };

struct PairArrays {
  const int4* info;          // per tile: first X state of the band, band rows, Y's first state, sY
  const int2* symbols;       // per tile: X, Y symbols (presence flags)
  const int* tiles;          // tile order of the launch (heaviest first)
  const int* pl_begin;       // per tile: its target states [pl_begin[t], pl_begin[t + 1])
  const int* pl_target;      // per target-of-tile: the target state
  const int* pl_rule_begin;  // per target-of-tile: its rules in key/w
  const int* key;            // per rule: x * sY + y (x relative to the band)
  const double* w;           // per rule: probability
};

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

// kG target cells per group. Dynamic shared memory: kStride * max_bc doubles (S), then kG *
// max_partners (factor double, X cell int, Y cell int). kRules: 1 = the first rule phase (a warp
// per target state, lanes over its rules, the G cells' sums reduced by warp shuffles: 5 shuffles of
// 2 words per cell and target, which bounded the kernel: targets have 15 rules on average on
// en_sm6s, so most lanes idled); 2 = a thread per (target state, cell): 32 / kG targets a warp,
// each thread sums its target's rules for its cell sequentially (no reduction; targets of a tile
// are ordered by rule count so that a warp's threads run about as long); 3 = 2 with S's rows padded
// to kG + 1 doubles a substate pair (the S stores of a warp, same cell and substate pairs 4 apart,
// hit one bank 20 times over, ncu).
template <int kG, int kMode, int kRules>
__global__ void __launch_bounds__(kThreads)
    PairSumKernel(Charts c, const CellItem* items, int item_offset, int span, PairArrays pairs,
                  int num_items, int max_partners, int max_bc, int groups_per_block) {
  constexpr int kStride = kRules >= 3 ? kG + 1 : kG;  // doubles a substate pair in S
  extern __shared__ double shared[];
  double* sh_s = shared;                           // [substate pair][G (+ 1)]
  double* sh_f = sh_s + size_t(kStride) * max_bc;  // [G][partner]
  int* sh_x = reinterpret_cast<int*>(sh_f + kG * max_partners);
  int* sh_y = sh_x + kG * max_partners;
  __shared__ int sh_count[kG];
  __shared__ int sh_total;

  // Inside: X and Y read the inside chart; outside: X is the parent's outpre, Y the sibling's in.
  const double* xchart = kMode == kInside ? c.in : c.out;
  const double* xscale = kMode == kInside ? c.in_scale : c.out_scale;
  const unsigned char* xpresent = kMode == kInside ? c.present_in : c.present_out;

  const int tile = __ldg(pairs.tiles + blockIdx.y);
  const int4 info = __ldg(pairs.info + tile);
  const int2 sym = __ldg(pairs.symbols + tile);
  const int s_y = info.w;
  const int quads = (s_y + kQuad - 1) / kQuad;
  const int band_items = ((info.y + kQuad - 1) / kQuad) * quads;
  const int num_groups = (num_items + kG - 1) / kG;
  const int group_end = min(num_groups, int(blockIdx.x + 1) * groups_per_block);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int pl_first = __ldg(pairs.pl_begin + tile), pl_end = __ldg(pairs.pl_begin + tile + 1);

  for (int group = blockIdx.x * groups_per_block; group < group_end; ++group) {
    if (c.group_present) {
      // Masked dispatch 2: the next group, of up to 32, whose partner cells hold the tile's X and
      // Y symbols (the same ballot in every warp: uniform over the block).
      const int probe = group + lane;
      const unsigned char* flags = c.group_present + size_t(probe) * 2 * c.num_symbols;
      const bool live = probe < group_end && flags[sym.x] && flags[c.num_symbols + sym.y];
      const unsigned ballot = __ballot_sync(0xffffffffu, live);
      if (!ballot) {
        group += 31;
        continue;
      }
      group += __ffs(ballot) - 1;
    }
    const int first_item = group * kG;
    __syncthreads();
    if (threadIdx.x < kG) sh_count[threadIdx.x] = 0;
    if (threadIdx.x == 0) sh_total = 0;
    __syncthreads();

    for (int e = threadIdx.x; e < kG * max_partners; e += blockDim.x) {
      const int g = e / max_partners, k = e % max_partners;
      if (first_item + g >= num_items) continue;
      const CellItem it = items[item_offset + first_item + g];
      if (k >= NumPartners<kMode>(it, span)) continue;
      int xc, yc;
      Partner<kMode>(it, span, k, &xc, &yc);
      if (!xpresent[size_t(xc) * c.num_symbols + sym.x] ||
          !c.present_in[size_t(yc) * c.num_symbols + sym.y])
        continue;
      const int target = it.base + ChartCellIndex(it.n, it.start, it.start + span);
      const double f = exp(xscale[xc] + c.in_scale[yc] - c.ref_scale[target]);
      if (!(f > 0)) continue;
      const int slot = atomicAdd(&sh_count[g], 1);
      sh_f[g * max_partners + slot] = f;
      sh_x[g * max_partners + slot] = xc;
      sh_y[g * max_partners + slot] = yc;
      atomicAdd(&sh_total, 1);
    }
    __syncthreads();
    if (sh_total == 0) continue;

    // S[x][y] per cell of the group: sum over partners of (f X_x) * Y_y.
    if constexpr (kRules == 5) {
      // FP64 tensor cores: per cell, S = X^T Y with X = partners x band rows (scaled by f), Y =
      // partners x s_Y: a warp per (cell, 8 x 8 tile of S), one m8n8k4 DMMA per 4 partners. PTX
      // fragments (mma.m8n8k4 .f64): A[m][k] and B[k][n] one double a lane, m = n = lane / 4,
      // k = lane % 4; D two doubles a lane, row lane / 4, columns 2 (lane % 4) + {0, 1}.
      const int tiles_x = (info.y + 7) / 8, tiles_y = (s_y + 7) / 8;
      const int per_cell = tiles_x * tiles_y;
      const int row = lane / 4, kq = lane % 4;
      for (int e = warp; e < kG * per_cell; e += blockDim.x / 32) {
        const int g = e / per_cell, rem = e % per_cell;
        const int x0 = (rem / tiles_y) * 8, y0 = (rem % tiles_y) * 8;
        const bool x_in = x0 + row < info.y, y_in = y0 + row < s_y;
        const int count = sh_count[g];
        double d0 = 0, d1 = 0;
        for (int s0 = 0; s0 < count; s0 += 4) {
          const int s = s0 + kq;
          double a = 0, b = 0;
          if (s < count) {
            const int slot = g * max_partners + s;
            if (x_in)
              a = sh_f[slot] * xchart[size_t(sh_x[slot]) * c.num_states + info.x + x0 + row];
            if (y_in) b = c.in[size_t(sh_y[slot]) * c.num_states + info.z + y0 + row];
          }
          asm volatile(
              "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
              : "+d"(d0), "+d"(d1)
              : "d"(a), "d"(b));
        }
        const int x = x0 + row, y = y0 + 2 * kq;
        if (x < info.y && y < s_y) sh_s[(x * s_y + y) * kStride + g] = d0;
        if (x < info.y && y + 1 < s_y) sh_s[(x * s_y + y + 1) * kStride + g] = d1;
      }
    } else {
      for (int e = threadIdx.x; e < kG * band_items; e += blockDim.x) {
        const int g = e / band_items, rem = e % band_items;
        const int x0 = (rem / quads) * kQuad, y0 = (rem % quads) * kQuad;
        double sum[kQuad][kQuad];
#pragma unroll
        for (int i = 0; i < kQuad; ++i)
#pragma unroll
          for (int j = 0; j < kQuad; ++j) sum[i][j] = 0;
        const int count = sh_count[g];
        for (int s = 0; s < count; ++s) {
          const double f = sh_f[g * max_partners + s];
          const double* xrow = xchart + size_t(sh_x[g * max_partners + s]) * c.num_states + info.x;
          const double* yrow = c.in + size_t(sh_y[g * max_partners + s]) * c.num_states + info.z;
          double xv[kQuad], yv[kQuad];
#pragma unroll
          for (int q = 0; q < kQuad; ++q) {
            xv[q] = x0 + q < info.y ? f * xrow[x0 + q] : 0.0;
            yv[q] = y0 + q < s_y ? yrow[y0 + q] : 0.0;
          }
#pragma unroll
          for (int i = 0; i < kQuad; ++i)
#pragma unroll
            for (int j = 0; j < kQuad; ++j) sum[i][j] = fma(xv[i], yv[j], sum[i][j]);
        }
#pragma unroll
        for (int i = 0; i < kQuad; ++i)
#pragma unroll
          for (int j = 0; j < kQuad; ++j)
            if (x0 + i < info.y && y0 + j < s_y)
              sh_s[((x0 + i) * s_y + y0 + j) * kStride + g] = sum[i][j];
      }
    }
    __syncthreads();

    if constexpr (kRules >= 2) {
      // Rules: a thread per (target state, cell of the group).
      constexpr int kSlots = 32 / kG;
      const int g = lane % kG;
      const bool live = first_item + g < num_items;
      int target = 0;
      if (live) {
        const CellItem it = items[item_offset + first_item + g];
        target = it.base + ChartCellIndex(it.n, it.start, it.start + span);
      }
      for (int pl = pl_first + warp * kSlots + lane / kG; pl < pl_end;
           pl += (blockDim.x / 32) * kSlots) {
        if (!live) continue;
        const int t = __ldg(pairs.pl_target + pl);
        // Outside flows only to a child whose inside is positive (parser/inside_outside_cpu.h).
        if (kMode != kInside && !(c.in[size_t(target) * c.num_states + t] > 0)) continue;
        // A pruned target's sum would be zeroed by the unary kernel: skip its rules.
        if (kMode == kInside && c.allowed && !c.allowed[size_t(target) * c.num_states + t])
          continue;
        double acc = 0;
        const int rule_end = __ldg(pairs.pl_rule_begin + pl + 1);
        for (int r = __ldg(pairs.pl_rule_begin + pl); r < rule_end; ++r)
          acc = fma(__ldg(pairs.w + r), sh_s[__ldg(pairs.key + r) * kStride + g], acc);
        if (acc > 0) atomicAdd(c.acc + size_t(target) * c.num_states + t, acc);
      }
    } else {
      // Rules: a warp per target state of the tile, lanes over its rules, the G cells at once.
      for (int pl = pl_first + warp; pl < pl_end; pl += blockDim.x / 32) {
        if (kMode != kInside) {
          // Outside flows only to a child whose inside is positive (parser/inside_outside_cpu.h, as
          // Berkeley's parser): skip a target state whose inside is zero in every cell of the
          // group.
          const int t = __ldg(pairs.pl_target + pl);
          bool used = false;
          if (!used && lane < kG && first_item + lane < num_items) {
            const CellItem it = items[item_offset + first_item + lane];
            const int target = it.base + ChartCellIndex(it.n, it.start, it.start + span);
            used = c.in[size_t(target) * c.num_states + t] > 0;
          }
          if (!__any_sync(0xffffffffu, used)) continue;
        }
        double acc[kG];
#pragma unroll
        for (int g = 0; g < kG; ++g) acc[g] = 0;
        const int rule_end = __ldg(pairs.pl_rule_begin + pl + 1);
        for (int r = __ldg(pairs.pl_rule_begin + pl) + lane; r < rule_end; r += 32) {
          const int key = __ldg(pairs.key + r);
          const double w = __ldg(pairs.w + r);
          const double2* s2 = reinterpret_cast<const double2*>(sh_s + key * kG);
#pragma unroll
          for (int q = 0; q < kG / 2; ++q) {
            const double2 v = s2[q];
            acc[2 * q] = fma(w, v.x, acc[2 * q]);
            acc[2 * q + 1] = fma(w, v.y, acc[2 * q + 1]);
          }
        }
#pragma unroll
        for (int g = 0; g < kG; ++g) {
#pragma unroll
          for (int offset = 16; offset > 0; offset >>= 1)
            acc[g] += __shfl_xor_sync(0xffffffffu, acc[g], offset);
        }
        if (lane < kG) {
          double mine = 0;
#pragma unroll
          for (int g = 0; g < kG; ++g)
            if (g == lane) mine = acc[g];
          if (mine > 0 && first_item + lane < num_items) {
            const CellItem it = items[item_offset + first_item + lane];
            const int target = it.base + ChartCellIndex(it.n, it.start, it.start + span);
            const int t = __ldg(pairs.pl_target + pl);
            if (kMode == kInside || c.in[size_t(target) * c.num_states + t] > 0) {
              atomicAdd(c.acc + size_t(target) * c.num_states + t, mine);
            }
          }
        }
      }
    }
  }
}

// Masked dispatch 2: Charts::group_present of one pair-sum launch (mode kMode, groups of kG target
// cells of span `span`), into `out` (zeroed by the caller): a block per group, a warp per (cell,
// partner), lanes over the symbols. Concurrent stores write the same 1 (global memory).
template <int kMode>
__global__ void GroupPresenceKernel(Charts c, const CellItem* items, int item_offset, int span,
                                    int num_items, int group_cells, int max_partners,
                                    unsigned char* out) {
  const unsigned char* xpresent = kMode == kInside ? c.present_in : c.present_out;
  unsigned char* x_out = out + size_t(blockIdx.x) * 2 * c.num_symbols;
  unsigned char* y_out = x_out + c.num_symbols;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int job = warp; job < group_cells * max_partners; job += blockDim.x / 32) {
    const int item = blockIdx.x * group_cells + job / max_partners, k = job % max_partners;
    if (item >= num_items) break;
    const CellItem it = items[item_offset + item];
    if (k >= NumPartners<kMode>(it, span)) continue;
    int xc, yc;
    Partner<kMode>(it, span, k, &xc, &yc);
    const unsigned char* x = xpresent + size_t(xc) * c.num_symbols;
    const unsigned char* y = c.present_in + size_t(yc) * c.num_symbols;
    for (int s = lane; s < c.num_symbols; s += 32) {
      if (x[s]) x_out[s] = 1;
      if (y[s]) y_out[s] = 1;
    }
  }
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
  const unsigned char* allowed =
      !outside && c.allowed ? c.allowed + size_t(cell) * c.num_states : nullptr;
  double* values = (outside ? c.out : c.in) + size_t(cell) * c.num_states;
  if (c.dead_cells) {
    // Masked dispatch 2: a cell without partners (reference scale -infinity) or, inside, without
    // an allowed state ends empty whatever its sums: all zero, scale -infinity, no presence flag.
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
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  double local_max = 0;
  for (int s = warp; s < c.num_states; s += blockDim.x / 32) {
    if (c.dead_cells && allowed && !allowed[s]) {  // zeroed below: skip its unary rules
      if (lane == 0) values[s] = 0.0;
      continue;
    }
    double sum = 0;
    const int end = __ldg(begin + s + 1);
    for (int u = __ldg(begin + s) + lane; u < end; u += 32)
      sum = fma(__ldg(prob + u), sh_acc[__ldg(other + u)], sum);
    for (int offset = 16; offset > 0; offset >>= 1)
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    sum += sh_acc[s];
    if (allowed && !allowed[s]) sum = 0;
    if (lane == 0) values[s] = sum;
    local_max = fmax(local_max, sum);
  }
  if (lane == 0) sh_max[warp] = local_max;
  __syncthreads();
  double m = 0;
  for (int w = 0; w < blockDim.x / 32; ++w) m = fmax(m, sh_max[w]);
  const double ref = c.ref_scale[cell];
  const bool empty = !(m > 0) || ref == kNegInfD;
  const double inv = empty ? 0.0 : 1.0 / m;
  unsigned char* present = (outside ? c.present_out : c.present_in) + size_t(cell) * c.num_symbols;
  // Each warp rescales the states it wrote (no barrier needed between its write and its read).
  for (int s = warp; s < c.num_states; s += blockDim.x / 32) {
    if (lane == 0) {
      const double v = values[s] * inv;
      values[s] = v;
      if (v > 0) present[__ldg(state_symbol + s)] = 1;
    }
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

// ---------------------------------------------------------------------------------------------
// Max-rule (maxc) pass.

struct MaxRuleArrays {
  // Base binary rules, grouped by parent symbol in grammar order; per base rule: B, C, its
  // substate rules: dense (w < 0: p[a][b * sC + c] at dense[z ..]) or sparse ([z, w) in
  // mr_key/mr_w).
  const int4* base;     // {B, C, begin, end}
  const int* mr_key;    // per substate rule: (a << 16) | (b * q_stride + c)
  const double* mr_w;   // probability
  const double* dense;  // dense base rules' probabilities, [a][b][c] (0 where no rule)
  const int4* chunk;    // {parent symbol A, first base rule, end base rule, unused}
  // Base unary pairs (A, C) in grammar order, grouped by A: [pair_begin[A], pair_begin[A + 1]).
  const int* pair_begin;       // num_symbols + 1
  const int2* pair_symbols;    // {A, C}
  const int* pair_rule_begin;  // per pair: its substate rules [.., ..) in pu_*
  const int* pu_parent;        // state
  const int* pu_child;         // state
  const double* pu_w;          // probability
  const int* symbol_first_state;
  const int* symbol_num_substates;
  // Max-rule binary kernels 7, 9, 11, 13, 14: per base rule its distinct (b, c) substate pairs
  // ("entries") [entry_begin[rule], entry_begin[rule + 1]), sorted by (b, c); per entry (b << 16) |
  // c and its parent substates [entry_rule_begin[e], entry_rule_begin[e + 1]) in entry_a / entry_w.
  const int* entry_begin;
  const int* entry_bc;
  const int* entry_rule_begin;
  const int* entry_a;
  const double* entry_w;
  // Variants 13 and 14: the order in which a warp chunk's warps take its base rules (a permutation
  // of each chunk's range, most entries first); null: grammar order.
  const int* warp_order;
};

struct MaxcChart {
  double* score;  // [cell][symbol]
  int4* info;     // [cell][symbol]: split, left, right, unary child
};

// Span 1: score(T) = log sum_t outpre(T_t) P(word | T_t) / P(w). A block per cell, a warp per
// symbol.
__global__ void MaxcLexicalKernel(Charts c, MaxcChart m, MaxRuleArrays r, const CellItem* items,
                                  int item_offset, const double* lexical) {
  const CellItem it = items[item_offset + blockIdx.x];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + 1);
  const double* row = lexical + size_t(it.word + it.start) * c.num_states;
  const double* out = c.out + size_t(cell) * c.num_states;
  const double log_pw = c.log_likelihood[it.sentence];
  const double out_scale = c.out_scale[cell];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int a = warp; a < c.num_symbols; a += blockDim.x / 32) {
    const int first = __ldg(r.symbol_first_state + a), count = __ldg(r.symbol_num_substates + a);
    double mx = kNegInfD;
    for (int t = lane; t < count; t += 32)
      if (out[first + t] > 0) mx = fmax(mx, row[first + t]);
    for (int offset = 16; offset > 0; offset >>= 1)
      mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, offset));
    double sum = 0;
    if (mx > kNegInfD)
      for (int t = lane; t < count; t += 32)
        if (out[first + t] > 0) sum += out[first + t] * exp(row[first + t] - mx);
    for (int offset = 16; offset > 0; offset >>= 1)
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) {
      const bool ok = sum > 0 && log_pw > kNegInfD;
      m.score[size_t(cell) * c.num_symbols + a] =
          ok ? log(sum) + mx + out_scale - log_pw : kNegInfD;
      m.info[size_t(cell) * c.num_symbols + a] = make_int4(-1, -1, -1, -1);
    }
  }
}

struct Candidate {
  double score;
  int rule;   // base rule index
  int split;  // split point (absolute position)
};

// Does candidate x come before y: the larger score; ties to the smaller rule, then the smaller
// split (the first best in grammar order, as parser/max_rule.cpp).
__device__ __forceinline__ bool Better(const Candidate& x, const Candidate& y) {
  return x.score > y.score ||
         (x.score == y.score && x.rule >= 0 &&
          (y.rule < 0 || x.rule < y.rule || (x.rule == y.rule && x.split < y.split)));
}

// Block reduction of the threads' candidates into *out: the largest score; ties to the smaller
// rule, then the smaller split. Warp shuffles first, then the warp winners. Every thread calls it.
__device__ void StoreBlockBest(Candidate best, Candidate* out) {
  const auto better = [](const Candidate& x, const Candidate& y) { return Better(x, y); };
  for (int offset = 16; offset > 0; offset >>= 1) {
    Candidate other;
    other.score = __shfl_xor_sync(0xffffffffu, best.score, offset);
    other.rule = __shfl_xor_sync(0xffffffffu, best.rule, offset);
    other.split = __shfl_xor_sync(0xffffffffu, best.split, offset);
    if (better(other, best)) best = other;
  }
  __shared__ Candidate sh_best[kThreads / 32];
  if (threadIdx.x % 32 == 0) sh_best[threadIdx.x / 32] = best;
  __syncthreads();
  if (threadIdx.x == 0) {
    Candidate top = sh_best[0];
    for (int w = 1; w < blockDim.x / 32; ++w)
      if (better(sh_best[w], top)) top = sh_best[w];
    *out = top;
  }
}

// A max-rule binary block: a cell of the launch's span and a chunk of one parent symbol's base
// rules ({parent symbol, first base rule, end base rule}), and where its best candidate goes.
struct MaxcBlock {
  CellItem it;
  int cell;
  int4 chunk;
  Candidate* slot;
};

// The start of a max-rule binary block: false, with the block's candidate stored as none, when the
// parent symbol has no outpre in the cell or the sentence no parse (uniform over the block); else
// the parent's outpre values are copied to sh_out (the caller synchronizes before reading them).
// The block's chunk is chunk_list[blockIdx.y] (variants 9, 11, 13 and 14: the launch's share of the
// chunks), or blockIdx.y when chunk_list is null.
__device__ bool MaxcBlockStart(const Charts& c, const MaxRuleArrays& r, const CellItem* items,
                               int item_offset, int span, Candidate* candidates, int num_chunks,
                               const int* chunk_list, double* sh_out, MaxcBlock* b) {
  const int chunk = chunk_list ? __ldg(chunk_list + blockIdx.y) : int(blockIdx.y);
  b->it = items[item_offset + blockIdx.x];
  b->cell = b->it.base + ChartCellIndex(b->it.n, b->it.start, b->it.start + span);
  b->chunk = __ldg(r.chunk + chunk);
  b->slot = candidates + size_t(blockIdx.x) * num_chunks + chunk;
  const int a_sym = b->chunk.x;
  if (!c.present_out[size_t(b->cell) * c.num_symbols + a_sym] ||
      !(c.log_likelihood[b->it.sentence] > kNegInfD)) {
    if (threadIdx.x == 0) *b->slot = Candidate{kNegInfD, -1, -1};
    return false;
  }
  const int a_first = __ldg(r.symbol_first_state + a_sym);
  const int s_a = __ldg(r.symbol_num_substates + a_sym);
  const double* out = c.out + size_t(b->cell) * c.num_states + a_first;
  for (int a = threadIdx.x; a < s_a; a += blockDim.x) sh_out[a] = out[a];
  return true;
}

// A block per (cell, chunk of one parent symbol's base rules). Dynamic shared: max_q doubles (Q),
// span doubles (per-split candidates), the parent symbol's outpre values.
// kEntryQ (variants 9, 11, 13 and 14, the chunks of big base rules): a sparse base rule's Q is
// built from its entries (a thread per distinct (b, c), summing its parent substates in registers)
// instead of shared-memory atomics per substate rule (compare-and-swap loops for doubles).
template <bool kEntryQ>
__global__ void __launch_bounds__(kThreads)
    MaxcBinaryKernel(Charts c, MaxcChart m, MaxRuleArrays r, const CellItem* items, int item_offset,
                     int span, int max_q, int max_substates, Candidate* candidates, int num_chunks,
                     const int* chunk_list) {
  extern __shared__ double shared[];
  double* sh_q = shared;                     // Q[b][c], rows of stride s_c | 1
  double* sh_out = sh_q + max_q;             // the parent symbol's outpre values
  double* sh_rows = sh_out + max_substates;  // [split][b]: in_L(b) sum_c Q[b][c] in_R(c)
  int* sh_valid = reinterpret_cast<int*>(sh_rows + size_t(span) * max_substates);  // [split]
  MaxcBlock block;
  if (!MaxcBlockStart(c, r, items, item_offset, span, candidates, num_chunks, chunk_list, sh_out,
                      &block))
    return;  // uniform over the block
  const CellItem& it = block.it;
  const int cell = block.cell;
  const int4 chunk = block.chunk;
  const int a_sym = chunk.x;
  // Each thread keeps the first best (rule, split) of the splits k = threadIdx.x (+ blockDim.x..),
  // visiting rules in order: the first maximum in (rule, split) order among its candidates.
  Candidate best{kNegInfD, -1, -1};
  {
    const int s_a = __ldg(r.symbol_num_substates + a_sym);
    const double cell_term = c.out_scale[cell] - c.log_likelihood[it.sentence];
    const int splits = span - 1;
    for (int br = chunk.y; br < chunk.z; ++br) {
      const int4 base = __ldg(r.base + br);
      const int b_first = __ldg(r.symbol_first_state + base.x);
      const int s_b = __ldg(r.symbol_num_substates + base.x);
      const int c_first = __ldg(r.symbol_first_state + base.y);
      const int s_c = __ldg(r.symbol_num_substates + base.y);
      const int stride = s_c | 1;
      // Usable splits: both children have a max-rule score.
      bool any = false;
      for (int k = threadIdx.x; k < splits; k += blockDim.x) {
        const int mid = it.start + 1 + k;
        const int lc = it.base + ChartCellIndex(it.n, it.start, mid);
        const int rc = it.base + ChartCellIndex(it.n, mid, it.start + span);
        const bool ok = m.score[size_t(lc) * c.num_symbols + base.x] > kNegInfD &&
                        m.score[size_t(rc) * c.num_symbols + base.y] > kNegInfD;
        sh_valid[k] = ok;
        any |= ok;
      }
      if (!__syncthreads_or(any)) continue;
      if (base.w < 0) {
        // Dense: a thread per (b, c), coalesced reads of p[a][b][c] over a.
        const int bc = s_b * s_c;
        const double* p = r.dense + base.z;
        for (int e = threadIdx.x; e < bc; e += blockDim.x) {
          double q = 0;
          for (int a = 0; a < s_a; ++a) q = fma(sh_out[a], __ldg(p + size_t(a) * bc + e), q);
          sh_q[(e / s_c) * stride + e % s_c] = q;
        }
      } else {
        for (int e = threadIdx.x; e < s_b * stride; e += blockDim.x) sh_q[e] = 0;
        __syncthreads();
        if (kEntryQ) {
          const int e_end = __ldg(r.entry_begin + br + 1);
          for (int e = __ldg(r.entry_begin + br) + threadIdx.x; e < e_end; e += blockDim.x) {
            const int key = __ldg(r.entry_bc + e);
            const int j_end = __ldg(r.entry_rule_begin + e + 1);
            double q = 0;
            for (int j = __ldg(r.entry_rule_begin + e); j < j_end; ++j)
              q = fma(sh_out[__ldg(r.entry_a + j)], __ldg(r.entry_w + j), q);
            sh_q[(key >> 16) * stride + (key & 0xffff)] = q;
          }
        } else {
          for (int u = base.z + threadIdx.x; u < base.w; u += blockDim.x) {
            const int key = __ldg(r.mr_key + u);
            const double o = sh_out[key >> 16];
            if (o > 0) atomicAdd(sh_q + (key & 0xffff), o * __ldg(r.mr_w + u));
          }
        }
      }
      __syncthreads();
      // A thread per (split, b): in_L(b) * sum_c Q[b][c] in_R(c).
      for (int e = threadIdx.x; e < splits * s_b; e += blockDim.x) {
        const int k = e / s_b, b = e - k * s_b;
        double v = 0;
        if (sh_valid[k]) {
          const int mid = it.start + 1 + k;
          const double l =
              c.in[size_t(it.base + ChartCellIndex(it.n, it.start, mid)) * c.num_states + b_first +
                   b];
          if (l != 0) {
            const double* right =
                c.in + size_t(it.base + ChartCellIndex(it.n, mid, it.start + span)) * c.num_states +
                c_first;
            const double* q = sh_q + b * stride;
            double row = 0;
            for (int cc = 0; cc < s_c; ++cc) row = fma(q[cc], right[cc], row);
            v = l * row;
          }
        }
        sh_rows[e] = v;
      }
      __syncthreads();
      // A thread per split: the sum over b, the candidate, the thread's running best.
      for (int k = threadIdx.x; k < splits; k += blockDim.x) {
        if (!sh_valid[k]) continue;
        double sum = 0;
        for (int b = 0; b < s_b; ++b) sum += sh_rows[k * s_b + b];
        if (!(sum > 0)) continue;
        const int mid = it.start + 1 + k;
        const int lc = it.base + ChartCellIndex(it.n, it.start, mid);
        const int rc = it.base + ChartCellIndex(it.n, mid, it.start + span);
        const double g = m.score[size_t(lc) * c.num_symbols + base.x] +
                         m.score[size_t(rc) * c.num_symbols + base.y] + log(sum) + cell_term +
                         c.in_scale[lc] + c.in_scale[rc];
        if (g > best.score) best = {g, br, mid};
      }
      // The next rule's first barrier (__syncthreads_or) orders these reads before new writes.
    }
  }
  StoreBlockBest(best, block.slot);
}

// Variant 7 (kR = 4): a warp per base rule, no block barrier between rules. Measured slower than
// variant 2 on en_sm6s (14.4 s against 11.1; kR = 8 21.2 s; 4 usable splits a step 14.5 s:
// bench/RESULTS.md), kept as the base of the next step named there (big rules over all warps).
// Variant 2 ran three block-wide phases of little work per (cell, base rule), each behind a
// barrier, and its per-split products ran over all s_B x s_C substate pairs of Q although on
// en_sm6s only 27% of them are a rule's (646,296 distinct (b, c) of 2,387,041). Here a block per
// (cell, chunk of one parent symbol's base rules) as before, and each warp takes the chunk's next
// base rule from a shared counter. Per rule and group of 32 splits: a lane per split flags the
// usable ones (both children with a max-rule score: a ballot); then per pass over kR x 32 of the
// rule's entries (distinct (b, c)), each lane computes q = sum_a outpre(A_a) p(a, b, c) for kR
// entries in registers and, for every usable split k, sums q in_L(b) in_R(c) over its entries; a
// warp reduction gives lane k % 32 its split's sum. The lane of a split keeps its candidate; the
// block reduction (StoreBlockBest) keeps the first best (rule, split) as the other variants.
// Dynamic shared: the parent symbol's outpre values.
// Variants 9, 11, 13 and 14 launch it over the chunks of small base rules only (chunk_list; 13 and
// 14 in r.warp_order, blocks of 64 threads for 13 and 14).
template <int kR>
__global__ void __launch_bounds__(kThreads)
    MaxcBinaryEntryKernel(Charts c, MaxcChart m, MaxRuleArrays r, const CellItem* items,
                          int item_offset, int span, Candidate* candidates, int num_chunks,
                          const int* chunk_list) {
  extern __shared__ double sh_out[];
  __shared__ int sh_next;
  MaxcBlock block;
  if (!MaxcBlockStart(c, r, items, item_offset, span, candidates, num_chunks, chunk_list, sh_out,
                      &block))
    return;  // uniform over the block
  const CellItem& it = block.it;
  const int cell = block.cell;
  const int4 chunk = block.chunk;
  Candidate best{kNegInfD, -1, -1};
  {
    if (threadIdx.x == 0) sh_next = chunk.y;
    __syncthreads();
    const double cell_term = c.out_scale[cell] - c.log_likelihood[it.sentence];
    const int splits = span - 1;
    const int lane = threadIdx.x % 32;
    constexpr unsigned kAll = 0xffffffffu;
    for (;;) {
      int br = 0;
      if (lane == 0) br = atomicAdd(&sh_next, 1);
      br = __shfl_sync(kAll, br, 0);
      if (br >= chunk.z) break;
      if (r.warp_order) br = __ldg(r.warp_order + br);
      const int4 base = __ldg(r.base + br);
      const int b_first = __ldg(r.symbol_first_state + base.x);
      const int c_first = __ldg(r.symbol_first_state + base.y);
      const int e_begin = __ldg(r.entry_begin + br), e_end = __ldg(r.entry_begin + br + 1);
      for (int k0 = 0; k0 < splits; k0 += 32) {
        const int k = k0 + lane;
        int lc = 0, rc = 0;
        double ml = kNegInfD, mr = kNegInfD;
        if (k < splits) {
          const int mid = it.start + 1 + k;
          lc = it.base + ChartCellIndex(it.n, it.start, mid);
          rc = it.base + ChartCellIndex(it.n, mid, it.start + span);
          ml = m.score[size_t(lc) * c.num_symbols + base.x];
          if (ml > kNegInfD) mr = m.score[size_t(rc) * c.num_symbols + base.y];
        }
        const bool ok = ml > kNegInfD && mr > kNegInfD;
        const unsigned usable = __ballot_sync(kAll, ok);
        if (usable == 0) continue;
        double acc = 0;  // lane k % 32: split k's sum
        for (int e0 = e_begin; e0 < e_end; e0 += 32 * kR) {
          const int passes = min(kR, (e_end - e0 + 31) / 32);  // warp-uniform
          double q[kR];
          int ob[kR], oc[kR];
#pragma unroll
          for (int i = 0; i < kR; ++i) {
            q[i] = 0, ob[i] = 0, oc[i] = 0;
            const int e = e0 + i * 32 + lane;
            if (i < passes && e < e_end) {
              const int key = __ldg(r.entry_bc + e);
              ob[i] = key >> 16;
              oc[i] = key & 0xffff;
              const int j_end = __ldg(r.entry_rule_begin + e + 1);
              double sum = 0;
              for (int j = __ldg(r.entry_rule_begin + e); j < j_end; ++j)
                sum = fma(sh_out[__ldg(r.entry_a + j)], __ldg(r.entry_w + j), sum);
              q[i] = sum;
            }
          }
          for (unsigned bits = usable; bits != 0; bits &= bits - 1) {
            const int kk = __ffs(bits) - 1;
            const int lck = __shfl_sync(kAll, lc, kk), rck = __shfl_sync(kAll, rc, kk);
            const double* left = c.in + size_t(lck) * c.num_states + b_first;
            const double* right = c.in + size_t(rck) * c.num_states + c_first;
            double s = 0;
#pragma unroll
            for (int i = 0; i < kR; ++i)
              if (i < passes) s = fma(q[i] * __ldg(left + ob[i]), __ldg(right + oc[i]), s);
#pragma unroll
            for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(kAll, s, offset);
            if (lane == kk) acc += s;
          }
        }
        if (ok && acc > 0) {
          const Candidate cand{ml + mr + log(acc) + cell_term + c.in_scale[lc] + c.in_scale[rc], br,
                               it.start + 1 + k};
          if (Better(cand, best)) best = cand;
        }
      }
    }
  }
  StoreBlockBest(best, block.slot);
}

// The first version (option max_rule_kernel = 1): a warp per split point, lanes over b, and
// thread 0 scanning the splits of each rule in order.
// A block per (cell, chunk of one parent symbol's base rules). Dynamic shared: max_q doubles (Q),
// span doubles (per-split candidates), the parent symbol's outpre values.
__global__ void __launch_bounds__(kThreads)
    MaxcBinaryWarpKernel(Charts c, MaxcChart m, MaxRuleArrays r, const CellItem* items,
                         int item_offset, int span, int max_q, Candidate* candidates,
                         int num_chunks) {
  extern __shared__ double shared[];
  double* sh_q = shared;
  double* sh_cand = shared + max_q;
  double* sh_out = sh_cand + span;  // the parent symbol's outpre values
  const CellItem it = items[item_offset + blockIdx.x];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  const int4 chunk = __ldg(r.chunk + blockIdx.y);
  const int a_sym = chunk.x;
  Candidate best{kNegInfD, -1, -1};
  const double log_pw = c.log_likelihood[it.sentence];
  if (c.present_out[size_t(cell) * c.num_symbols + a_sym] && log_pw > kNegInfD) {
    const int a_first = __ldg(r.symbol_first_state + a_sym);
    const int s_a = __ldg(r.symbol_num_substates + a_sym);
    const double* out = c.out + size_t(cell) * c.num_states + a_first;
    for (int a = threadIdx.x; a < s_a; a += blockDim.x) sh_out[a] = out[a];
    const double cell_term = c.out_scale[cell] - log_pw;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int splits = span - 1;
    for (int br = chunk.y; br < chunk.z; ++br) {
      const int4 base = __ldg(r.base + br);
      const int b_first = __ldg(r.symbol_first_state + base.x);
      const int s_b = __ldg(r.symbol_num_substates + base.x);
      const int c_first = __ldg(r.symbol_first_state + base.y);
      const int s_c = __ldg(r.symbol_num_substates + base.y);
      const int stride = s_c | 1;
      // Is any split usable (both children with a max-rule score)?
      bool any = false;
      for (int k = threadIdx.x; k < splits; k += blockDim.x) {
        const int mid = it.start + 1 + k;
        const int lc = it.base + ChartCellIndex(it.n, it.start, mid);
        const int rc = it.base + ChartCellIndex(it.n, mid, it.start + span);
        any |= m.score[size_t(lc) * c.num_symbols + base.x] > kNegInfD &&
               m.score[size_t(rc) * c.num_symbols + base.y] > kNegInfD;
      }
      if (!__syncthreads_or(any)) continue;
      if (base.w < 0) {
        // Dense: a thread per (b, c), coalesced reads of p[a][b][c] over a.
        const int bc = s_b * s_c;
        const double* p = r.dense + base.z;
        for (int e = threadIdx.x; e < bc; e += blockDim.x) {
          double q = 0;
          for (int a = 0; a < s_a; ++a) q = fma(sh_out[a], __ldg(p + size_t(a) * bc + e), q);
          sh_q[(e / s_c) * stride + e % s_c] = q;
        }
      } else {
        for (int e = threadIdx.x; e < s_b * stride; e += blockDim.x) sh_q[e] = 0;
        __syncthreads();
        for (int u = base.z + threadIdx.x; u < base.w; u += blockDim.x) {
          const int key = __ldg(r.mr_key + u);
          const double o = sh_out[key >> 16];
          if (o > 0) atomicAdd(sh_q + (key & 0xffff), o * __ldg(r.mr_w + u));
        }
      }
      __syncthreads();
      for (int k = warp; k < splits; k += blockDim.x / 32) {
        const int mid = it.start + 1 + k;
        const int lc = it.base + ChartCellIndex(it.n, it.start, mid);
        const int rc = it.base + ChartCellIndex(it.n, mid, it.start + span);
        const double ml = m.score[size_t(lc) * c.num_symbols + base.x];
        const double mr = m.score[size_t(rc) * c.num_symbols + base.y];
        double g = kNegInfD;
        if (ml > kNegInfD && mr > kNegInfD) {
          const double* left = c.in + size_t(lc) * c.num_states + b_first;
          const double* right = c.in + size_t(rc) * c.num_states + c_first;
          double sum = 0;
          for (int b = lane; b < s_b; b += 32) {
            const double l = left[b];
            if (l == 0) continue;
            const double* q = sh_q + b * stride;
            double row = 0;
            for (int cc = 0; cc < s_c; ++cc) row = fma(q[cc], right[cc], row);
            sum = fma(l, row, sum);
          }
          for (int offset = 16; offset > 0; offset >>= 1)
            sum += __shfl_xor_sync(0xffffffffu, sum, offset);
          if (sum > 0) g = ml + mr + log(sum) + cell_term + c.in_scale[lc] + c.in_scale[rc];
        }
        if (lane == 0) sh_cand[k] = g;
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        for (int k = 0; k < splits; ++k) {
          if (sh_cand[k] > best.score) best = {sh_cand[k], br, it.start + 1 + k};
        }
      }
      __syncthreads();
    }
  }
  if (threadIdx.x == 0) candidates[size_t(blockIdx.x) * num_chunks + blockIdx.y] = best;
}

// Per (cell, symbol): the first best chunk of the symbol (chunks are in grammar order).
__global__ void MaxcMergeKernel(Charts c, MaxcChart m, MaxRuleArrays r, const CellItem* items,
                                int item_offset, int count, int span, const Candidate* candidates,
                                int num_chunks, const int* symbol_chunk_begin) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= count * c.num_symbols) return;
  const int item = e / c.num_symbols, a = e % c.num_symbols;
  const CellItem it = items[item_offset + item];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  Candidate best{kNegInfD, -1, -1};
  for (int k = symbol_chunk_begin[a]; k < symbol_chunk_begin[a + 1]; ++k) {
    const Candidate cand = candidates[size_t(item) * num_chunks + k];
    if (cand.score > best.score) best = cand;
  }
  m.score[size_t(cell) * c.num_symbols + a] = best.score;
  int4 info = make_int4(-1, -1, -1, -1);
  if (best.rule >= 0) {
    const int4 base = __ldg(r.base + best.rule);
    info = make_int4(best.split, base.x, base.y, -1);
  }
  m.info[size_t(cell) * c.num_symbols + a] = info;
}

// The max-rule unary layer of one cell: score(A) = max(score(A), max_{A -> C} log sum_{a,c}
// outpre(A_a) p(A_a -> C_c) in(C_c) / P(w) + score(C)), children read before the layer. A block
// per cell; dynamic shared: num_symbols doubles (pre-unary scores) + num_pairs doubles.
__global__ void MaxcUnaryKernel(Charts c, MaxcChart m, MaxRuleArrays r, const CellItem* items,
                                int item_offset, int span, int num_pairs) {
  extern __shared__ double shared[];
  double* sh_pre = shared;
  double* sh_pair = shared + c.num_symbols;
  const CellItem it = items[item_offset + blockIdx.x];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  const double log_pw = c.log_likelihood[it.sentence];
  for (int a = threadIdx.x; a < c.num_symbols; a += blockDim.x)
    sh_pre[a] = m.score[size_t(cell) * c.num_symbols + a];
  __syncthreads();
  const double* out = c.out + size_t(cell) * c.num_states;
  const double* in = c.in + size_t(cell) * c.num_states;
  const double cell_term = c.out_scale[cell] + c.in_scale[cell] - log_pw;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int p = warp; p < num_pairs; p += blockDim.x / 32) {
    const int2 pair = __ldg(r.pair_symbols + p);
    double g = kNegInfD;
    if (sh_pre[pair.y] > kNegInfD && log_pw > kNegInfD &&
        c.present_out[size_t(cell) * c.num_symbols + pair.x]) {
      double sum = 0;
      const int end = __ldg(r.pair_rule_begin + p + 1);
      for (int u = __ldg(r.pair_rule_begin + p) + lane; u < end; u += 32)
        sum = fma(out[__ldg(r.pu_parent + u)] * __ldg(r.pu_w + u), in[__ldg(r.pu_child + u)], sum);
      for (int offset = 16; offset > 0; offset >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
      if (sum > 0) g = log(sum) + cell_term + sh_pre[pair.y];
    }
    if (lane == 0) sh_pair[p] = g;
  }
  __syncthreads();
  for (int a = threadIdx.x; a < c.num_symbols; a += blockDim.x) {
    double best = sh_pre[a];
    int child = -1;
    for (int p = __ldg(r.pair_begin + a); p < __ldg(r.pair_begin + a + 1); ++p) {
      if (sh_pair[p] > best) best = sh_pair[p], child = __ldg(r.pair_symbols + p).y;
    }
    if (child >= 0) {
      m.score[size_t(cell) * c.num_symbols + a] = best;
      m.info[size_t(cell) * c.num_symbols + a].w = child;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Host side.

int64_t NumCells(int32_t n) { return int64_t(n) * (n + 1) / 2; }

// One pair-sum rule layout (inside, outside-left or outside-right).
struct PairLayout {
  DeviceArray<int4> info;
  DeviceArray<int2> symbols;
  DeviceArray<int> tiles, pl_begin, pl_target, pl_rule_begin, key;
  DeviceArray<double> w;
  int num_tiles = 0;
  int max_bc = 0;
  PairArrays view() const {
    return {info.get(),      symbols.get(),       tiles.get(), pl_begin.get(),
            pl_target.get(), pl_rule_begin.get(), key.get(),   w.get()};
  }
};

// The layouts' host twins of int4 and int2 (sum_layouts.h) as the device types.
template <typename Device, typename Host>
std::vector<Device> AsDevice(const std::vector<Host>& host) {
  static_assert(sizeof(Device) == sizeof(Host));
  std::vector<Device> out(host.size());
  if (!host.empty()) std::memcpy(out.data(), host.data(), host.size() * sizeof(Host));
  return out;
}

class DeviceInsideOutsideImpl : public DeviceInsideOutside {
 public:
  size_t BytesForSentence(int32_t n) const override {
    const size_t cells = size_t(NumCells(n));
    return cells * (size_t(num_states_) * sizeof(double) * 3 + 4 * sizeof(double) +
                    size_t(num_symbols_) * (2 + sizeof(double) + sizeof(int4)) + sizeof(CellItem)) +
           size_t(n) * (size_t(num_states_) * sizeof(double) + num_chunks_ * sizeof(Candidate) +
                        2 * num_symbols_);
  }
  size_t BatchBudget() const override { return budget_; }
  int32_t MaxLength() const override {
    const int64_t optin = max_shared_optin_;
    // Max-rule binary kernel: Q, outpre, [split][b] rows, split flags.
    const int64_t maxc = (optin - int64_t(max_q_ + max_substates_) * 8) / (max_substates_ * 8 + 4);
    // Pair-sum kernel: kG cells' S tile, then 16 bytes per partner and cell.
    int64_t pair = std::numeric_limits<int32_t>::max();
    for (const PairLayout& l : layouts_) {
      pair = std::min<int64_t>(
          pair,
          (optin - int64_t(cells_per_group_ + 1) * l.max_bc * 8) / (cells_per_group_ * 16) + 1);
    }
    return static_cast<int32_t>(std::max<int64_t>(1, std::min(maxc, pair)));
  }

  bool Init(const SumGrammarArrays& g, const DeviceInsideOutsideOptions& options,
            std::string* error) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      cudaGetLastError();
      *error = "no CUDA device";
      return false;
    }
    num_states_ = g.num_states;
    num_symbols_ = g.num_symbols;
    cells_per_group_ = options.cells_per_group == 16 ? 16 : 8;
    const int mk = options.max_rule_kernel;
    max_rule_kernel_ = mk == 1 || mk == 2 || mk == 7 || mk == 9 || mk == 11 || mk == 14 ? mk : 13;
    pair_sum_kernel_ =
        options.pair_sum_kernel >= 1 && options.pair_sum_kernel <= 3 ? options.pair_sum_kernel : 5;
    masked_dispatch_ = options.masked_dispatch == 1 ? 1 : 2;
    cudaDeviceGetAttribute(&max_shared_optin_, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
    if (!AllowDynamicShared(UnaryNormalizeKernel, size_t(num_states_) * sizeof(double),
                            max_shared_optin_, "unary", error)) {
      return false;
    }
    cudaDeviceGetAttribute(&num_sms_, cudaDevAttrMultiProcessorCount, 0);
    for (int s = 0; s < num_symbols_; ++s) {
      if (g.symbol_num_substates[s] > kBandLimit) {
        *error = "a symbol has more substates than the sum-product kernels support";
        return false;
      }
    }
    auto ints = [](const int32_t* p, int64_t n) { return std::vector<int>(p, p + n); };
    bool ok = state_symbol_.Upload(ints(g.state_symbol, g.num_states)) &&
              first_state_.Upload(ints(g.symbol_first_state, g.num_symbols)) &&
              num_substates_.Upload(ints(g.symbol_num_substates, g.num_symbols));

    // Sum unaries by parent (inside) and by child (outside).
    {
      std::vector<int> by_parent_begin(num_states_ + 1, 0), by_child_begin(num_states_ + 1, 0);
      for (int64_t u = 0; u < g.num_sum_unary; ++u) {
        ++by_parent_begin[g.sum_unary_parent[u] + 1];
        ++by_child_begin[g.sum_unary_child[u] + 1];
      }
      for (int s = 0; s < num_states_; ++s) {
        by_parent_begin[s + 1] += by_parent_begin[s];
        by_child_begin[s + 1] += by_child_begin[s];
      }
      std::vector<int> child(g.num_sum_unary), parent(g.num_sum_unary);
      std::vector<double> pw(g.num_sum_unary), cw(g.num_sum_unary);
      std::vector<int> pos_p(by_parent_begin.begin(), by_parent_begin.end() - 1);
      std::vector<int> pos_c(by_child_begin.begin(), by_child_begin.end() - 1);
      for (int64_t u = 0; u < g.num_sum_unary; ++u) {
        const double p = std::exp(g.sum_unary_log_prob[u]);
        const int i = pos_p[g.sum_unary_parent[u]]++;
        child[i] = g.sum_unary_child[u];
        pw[i] = p;
        const int j = pos_c[g.sum_unary_child[u]]++;
        parent[j] = g.sum_unary_parent[u];
        cw[j] = p;
      }
      ok = ok && up_begin_.Upload(by_parent_begin) && up_child_.Upload(child) && up_w_.Upload(pw) &&
           uc_begin_.Upload(by_child_begin) && uc_parent_.Upload(parent) && uc_w_.Upload(cw);
    }

    // The three pair-sum layouts and the max-rule layout, built on host threads side by side
    // (1.3 s one after the other on en_sm6s on the development machine).
    std::array<PairSumLayout, 3> pair_sums;
    MaxRuleLayout max_rule;
    bool max_rule_fits = false;
    {
      std::vector<std::thread> builders;
      const PairSumPass passes[3] = {PairSumPass::kInside, PairSumPass::kOutLeft,
                                     PairSumPass::kOutRight};
      for (int k = 0; k < 3; ++k)
        builders.emplace_back([&, k] { pair_sums[k] = BuildPairSumLayout(g, passes[k]); });
      builders.emplace_back(
          [&] { max_rule_fits = BuildMaxRuleLayout(g, max_rule_kernel_, &max_rule); });
      for (std::thread& t : builders) t.join();
    }
    ok = ok && UploadLayout(pair_sums[0], &layouts_[kInside]) &&
         UploadLayout(pair_sums[1], &layouts_[kOutLeft]) &&
         UploadLayout(pair_sums[2], &layouts_[kOutRight]);
    ok = ok && max_rule_fits && UploadMaxRule(max_rule);
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

  ~DeviceInsideOutsideImpl() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    for (cudaEvent_t e : kind_events_) cudaEventDestroy(e);
    if (stream_) cudaStreamDestroy(stream_);
  }

  void SetProfiling(bool on) override {
    profile_ = on;
    profile_ms_.fill(0);
    kind_ms_.fill(0);
    profile_batches_ = 0;
  }

  std::string ProfileReport() const override {
    char text[512];
    std::snprintf(text, sizeof(text),
                  "%d batches: host wall %.1f ms; device: setup %.1f, inside %.1f, outside %.1f, "
                  "max-rule %.1f, copy back %.1f ms; kernels: pair-sum inside %.1f, pair-sum "
                  "outside %.1f, unary+normalize %.1f, max-rule binary %.1f, merge %.1f, unary "
                  "%.1f, other %.1f ms",
                  profile_batches_, profile_ms_[0], profile_ms_[1], profile_ms_[2], profile_ms_[3],
                  profile_ms_[4], profile_ms_[5], kind_ms_[kKindPairInside],
                  kind_ms_[kKindPairOutside], kind_ms_[kKindUnary], kind_ms_[kKindMaxcBinary],
                  kind_ms_[kKindMaxcMerge], kind_ms_[kKindMaxcUnary], kind_ms_[kKindOther]);
    return text;
  }

  IoBatchResult MaxRuleBatch(const std::vector<IoSentence>& batch, bool keep_charts,
                             std::vector<IoResult>* results, std::string* error) override {
    return MaskedMaxRuleBatch(batch, nullptr, keep_charts, results, error);
  }

  IoBatchResult MaskedMaxRuleBatch(const std::vector<IoSentence>& batch,
                                   const uint8_t* device_allowed, bool keep_charts,
                                   std::vector<IoResult>* results, std::string* error) override {
    const auto wall_begin = std::chrono::steady_clock::now();
    const IoBatchResult result = Run(batch, device_allowed, keep_charts, results, error);
    if (profile_ && result == IoBatchResult::kOk) {
      ++profile_batches_;
      profile_ms_[0] +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_begin)
              .count();
      for (int k = 0; k < 5; ++k) {
        float ms = 0;
        cudaEventElapsedTime(&ms, events_[k], events_[k + 1]);
        profile_ms_[k + 1] += ms;
      }
      for (size_t k = 0; k + 1 < kind_of_.size(); ++k) {
        float ms = 0;
        cudaEventElapsedTime(&ms, kind_events_[k], kind_events_[k + 1]);
        kind_ms_[kind_of_[k]] += ms;
      }
    }
    return result;
  }

 private:
  enum KernelKind {
    kKindPairInside,
    kKindPairOutside,
    kKindUnary,
    kKindMaxcBinary,
    kKindMaxcMerge,
    kKindMaxcUnary,
    kKindOther,
    kNumKinds
  };
  // Profiling: the launches from here to the next Kind() call are of `kind`.
  void Kind(KernelKind kind) {
    if (!profile_) return;
    if (kind_of_.size() == kind_events_.size()) {
      cudaEvent_t e;
      cudaEventCreate(&e);
      kind_events_.push_back(e);
    }
    cudaEventRecord(kind_events_[kind_of_.size()], stream_);
    kind_of_.push_back(kind);
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

  IoBatchResult Run(const std::vector<IoSentence>& batch, const uint8_t* device_allowed,
                    bool keep_charts, std::vector<IoResult>* results, std::string* error) {
    results->assign(batch.size(), IoResult{});
    kind_of_.clear();
    if (batch.empty()) return IoBatchResult::kOk;
    const int num_sentences = static_cast<int>(batch.size());
    std::vector<int> base(num_sentences), word(num_sentences), top(num_sentences);
    int64_t cells = 0, words = 0;
    int max_n = 0;
    size_t bytes = 0;
    for (int i = 0; i < num_sentences; ++i) {
      base[i] = static_cast<int>(cells);
      word[i] = static_cast<int>(words);
      top[i] = base[i] + ChartCellIndex(batch[i].length, 0, batch[i].length);
      cells += NumCells(batch[i].length);
      words += batch[i].length;
      max_n = std::max(max_n, batch[i].length);
      bytes += BytesForSentence(batch[i].length);
    }
    if (bytes > budget_) {
      *error = "batch needs " + std::to_string(bytes) + " device bytes, over the budget";
      return IoBatchResult::kOutOfMemory;
    }
    if (cells >= std::numeric_limits<int>::max() / 2) {
      *error = "batch has too many cells";
      return IoBatchResult::kOutOfMemory;
    }
    std::vector<CellItem> items;
    items.reserve(cells);
    std::vector<int> level_begin(max_n + 2, 0);
    int max_level = 0;
    for (int span = 1; span <= max_n; ++span) {
      level_begin[span] = static_cast<int>(items.size());
      for (int start = 0; start + span <= max_n; ++start)
        for (int i = 0; i < num_sentences; ++i)
          if (start + span <= batch[i].length)
            items.push_back({base[i], batch[i].length, start, word[i], i, 0});
      max_level = std::max(max_level, static_cast<int>(items.size()) - level_begin[span]);
    }
    level_begin[max_n + 1] = static_cast<int>(items.size());

    const size_t chart = size_t(cells) * num_states_;
    const size_t maxc = size_t(cells) * num_symbols_;
    if (!in_.Reserve(chart) || !out_.Reserve(chart) || !acc_.Reserve(chart) ||
        !scales_.Reserve(3 * size_t(cells)) || !present_.Reserve(2 * maxc) ||
        !log_likelihood_.Reserve(num_sentences) || !top_.Reserve(num_sentences) ||
        !lexical_.Reserve(size_t(words) * num_states_) || !items_.Reserve(items.size()) ||
        !maxc_score_.Reserve(maxc) || !maxc_info_.Reserve(maxc) ||
        !candidates_.Reserve(size_t(max_level) * num_chunks_)) {
      in_.Free(), out_.Free(), acc_.Free(), scales_.Free(), present_.Free(), lexical_.Free();
      items_.Free(), maxc_score_.Free(), maxc_info_.Free(), candidates_.Free();
      *error = "cudaMalloc failed for a batch of " + std::to_string(num_sentences) + " sentences";
      return IoBatchResult::kOutOfMemory;
    }
    HostBuffers& host = host_[next_host_];
    next_host_ = 1 - next_host_;
    if (!host.score.Reserve(maxc) || !host.info.Reserve(maxc) ||
        !host.log_likelihood.Reserve(num_sentences) ||
        (keep_charts && (!host.in.Reserve(chart) || !host.out.Reserve(chart) ||
                         !host.scales.Reserve(2 * size_t(cells))))) {
      *error = "cudaMallocHost failed";
      return IoBatchResult::kOutOfMemory;
    }

    // Masked dispatch 2 (only with a mask: the exact passes stay as they were measured).
    const bool compact = device_allowed != nullptr && masked_dispatch_ == 2;
    if (compact && !group_present_.Reserve(size_t(max_level + 7) / 8 * 2 * num_symbols_)) {
      *error = "cudaMalloc failed for the pair-sum group flags";
      return IoBatchResult::kOutOfMemory;
    }
    Charts c{in_.get(),
             scales_.get(),
             out_.get(),
             scales_.get() + cells,
             acc_.get(),
             scales_.get() + 2 * cells,
             present_.get(),
             present_.get() + maxc,
             log_likelihood_.get(),
             num_states_,
             num_symbols_,
             device_allowed};
    c.dead_cells = compact;
    MaxcChart m{maxc_score_.get(), maxc_info_.get()};

    Mark(0);
    // Lexical rows: pageable memory is fine (one copy a batch; the device waits for it).
    std::vector<double> lex(size_t(words) * num_states_);
    ForEachOnHostThreads(num_sentences, lex.size(), [&](int i) {
      std::copy(batch[i].lexical, batch[i].lexical + size_t(batch[i].length) * num_states_,
                lex.begin() + size_t(word[i]) * num_states_);
    });
    cudaMemcpyAsync(lexical_.get(), lex.data(), lex.size() * sizeof(double), cudaMemcpyHostToDevice,
                    stream_);
    cudaMemcpyAsync(items_.get(), items.data(), items.size() * sizeof(CellItem),
                    cudaMemcpyHostToDevice, stream_);
    cudaMemcpyAsync(top_.get(), top.data(), top.size() * sizeof(int), cudaMemcpyHostToDevice,
                    stream_);
    cudaMemsetAsync(acc_.get(), 0, chart * sizeof(double), stream_);
    cudaMemsetAsync(present_.get(), 0, 2 * maxc, stream_);
    Mark(1);

    // Inside.
    for (int span = 1; span <= max_n; ++span) {
      const int offset = level_begin[span], count = level_begin[span + 1] - offset;
      Kind(kKindOther);
      if (span == 1) {
        LexicalKernel<<<count, kThreads, 0, stream_>>>(c, items_.get(), offset, lexical_.get());
      } else {
        RefScaleKernel<<<(count + 127) / 128, 128, 0, stream_>>>(c, items_.get(), offset, count,
                                                                 span, 0);
        Kind(kKindPairInside);
        if (!LaunchPairSum<kInside>(c, offset, count, span, span - 1, error))
          return IoBatchResult::kFailed;
      }
      Kind(kKindUnary);
      UnaryNormalizeKernel<<<count, kThreads, num_states_ * sizeof(double), stream_>>>(
          c, items_.get(), offset, span, up_begin_.get(), up_child_.get(), up_w_.get(),
          state_symbol_.get(), 0);
    }
    Kind(kKindOther);
    LikelihoodKernel<<<(num_sentences + 127) / 128, 128, 0, stream_>>>(c, top_.get(),
                                                                       num_sentences);
    Mark(2);

    // Outside.
    cudaMemsetAsync(acc_.get(), 0, chart * sizeof(double), stream_);
    for (int span = max_n; span >= 1; --span) {
      const int offset = level_begin[span], count = level_begin[span + 1] - offset;
      Kind(kKindOther);
      RefScaleKernel<<<(count + 127) / 128, 128, 0, stream_>>>(c, items_.get(), offset, count, span,
                                                               1);
      Kind(kKindPairOutside);
      if (span < max_n) {
        if (!LaunchPairSum<kOutLeft>(c, offset, count, span, max_n - span, error) ||
            !LaunchPairSum<kOutRight>(c, offset, count, span, max_n - span, error))
          return IoBatchResult::kFailed;
      }
      Kind(kKindUnary);
      UnaryNormalizeKernel<<<count, kThreads, num_states_ * sizeof(double), stream_>>>(
          c, items_.get(), offset, span, uc_begin_.get(), uc_parent_.get(), uc_w_.get(),
          state_symbol_.get(), 1);
    }
    Mark(3);

    // Max-rule.
    const MaxRuleArrays r = MaxRuleView();
    if (!AllowDynamicShared(MaxcUnaryKernel, (num_symbols_ + num_pairs_) * sizeof(double),
                            max_shared_optin_, "max-rule unary", error)) {
      return IoBatchResult::kFailed;
    }
    for (int span = 1; span <= max_n; ++span) {
      const int offset = level_begin[span], count = level_begin[span + 1] - offset;
      if (span == 1) {
        Kind(kKindOther);
        MaxcLexicalKernel<<<count, kThreads, 0, stream_>>>(c, m, r, items_.get(), offset,
                                                           lexical_.get());
      } else {
        const size_t shared =
            (size_t(max_q_) + max_substates_ + size_t(span) * max_substates_) * sizeof(double) +
            span * sizeof(int);
        // AllowDynamicShared counts the kernels' static shared bytes too (a 134-word sentence
        // of gum_sm5.gr failed with "invalid argument" when only the dynamic bytes were).
        Kind(kKindMaxcBinary);
        const size_t entry_shared = size_t(max_substates_) * sizeof(double);
        if (max_rule_kernel_ == 7) {
          if (num_chunks_ > 0)
            MaxcBinaryEntryKernel<4><<<dim3(count, num_chunks_), kThreads, entry_shared, stream_>>>(
                c, m, r, items_.get(), offset, span, candidates_.get(), num_chunks_, nullptr);
        } else if (max_rule_kernel_ >= 9) {
          // The chunks of big base rules as variant 2 (Q from entries), the others as variant 7.
          if (!AllowDynamicShared(MaxcBinaryKernel<true>, shared, max_shared_optin_, "max-rule",
                                  error))
            return IoBatchResult::kFailed;
          const int big = static_cast<int>(block_chunks_.size());
          const int small = static_cast<int>(warp_chunks_.size());
          if (big > 0)
            MaxcBinaryKernel<true><<<dim3(count, big), kThreads, shared, stream_>>>(
                c, m, r, items_.get(), offset, span, max_q_, max_substates_, candidates_.get(),
                num_chunks_, block_chunks_.get());
          if (small > 0)
            MaxcBinaryEntryKernel<4><<<dim3(count, small), warp_block_, entry_shared, stream_>>>(
                c, m, r, items_.get(), offset, span, candidates_.get(), num_chunks_,
                warp_chunks_.get());
        } else if (max_rule_kernel_ == 1) {
          if (!AllowDynamicShared(MaxcBinaryWarpKernel, shared, max_shared_optin_, "max-rule",
                                  error))
            return IoBatchResult::kFailed;
          if (num_chunks_ > 0)
            MaxcBinaryWarpKernel<<<dim3(count, num_chunks_), kThreads, shared, stream_>>>(
                c, m, r, items_.get(), offset, span, max_q_, candidates_.get(), num_chunks_);
        } else {
          if (!AllowDynamicShared(MaxcBinaryKernel<false>, shared, max_shared_optin_, "max-rule",
                                  error))
            return IoBatchResult::kFailed;
          if (num_chunks_ > 0)
            MaxcBinaryKernel<false><<<dim3(count, num_chunks_), kThreads, shared, stream_>>>(
                c, m, r, items_.get(), offset, span, max_q_, max_substates_, candidates_.get(),
                num_chunks_, nullptr);
        }
        const int threads = count * num_symbols_;
        Kind(kKindMaxcMerge);
        MaxcMergeKernel<<<(threads + 255) / 256, 256, 0, stream_>>>(
            c, m, r, items_.get(), offset, count, span, candidates_.get(), num_chunks_,
            symbol_chunk_begin_.get());
      }
      Kind(kKindMaxcUnary);
      MaxcUnaryKernel<<<count, kThreads, (num_symbols_ + num_pairs_) * sizeof(double), stream_>>>(
          c, m, r, items_.get(), offset, span, num_pairs_);
    }
    Kind(kKindOther);
    Mark(4);

    cudaMemcpyAsync(host.score.get(), maxc_score_.get(), maxc * sizeof(double),
                    cudaMemcpyDeviceToHost, stream_);
    cudaMemcpyAsync(host.info.get(), maxc_info_.get(), maxc * sizeof(int4), cudaMemcpyDeviceToHost,
                    stream_);
    cudaMemcpyAsync(host.log_likelihood.get(), log_likelihood_.get(),
                    num_sentences * sizeof(double), cudaMemcpyDeviceToHost, stream_);
    if (keep_charts) {
      cudaMemcpyAsync(host.in.get(), in_.get(), chart * sizeof(double), cudaMemcpyDeviceToHost,
                      stream_);
      cudaMemcpyAsync(host.out.get(), out_.get(), chart * sizeof(double), cudaMemcpyDeviceToHost,
                      stream_);
      cudaMemcpyAsync(host.scales.get(), scales_.get(), 2 * size_t(cells) * sizeof(double),
                      cudaMemcpyDeviceToHost, stream_);
    }
    Mark(5);
    const cudaError_t status = cudaStreamSynchronize(stream_);
    const cudaError_t last = cudaGetLastError();
    if (status != cudaSuccess || last != cudaSuccess) {
      *error =
          std::string("CUDA error: ") + cudaGetErrorString(status != cudaSuccess ? status : last);
      return IoBatchResult::kFailed;
    }
    for (int i = 0; i < num_sentences; ++i) {
      IoResult& res = (*results)[i];
      res.log_likelihood = host.log_likelihood.get()[i];
      res.score = host.score.get() + size_t(base[i]) * num_symbols_;
      res.split_left_right_unary =
          reinterpret_cast<const int32_t*>(host.info.get() + size_t(base[i]) * num_symbols_);
      if (keep_charts) {
        res.inside = host.in.get() + size_t(base[i]) * num_states_;
        res.outside = host.out.get() + size_t(base[i]) * num_states_;
        res.inside_scale = host.scales.get() + base[i];
        res.outside_scale = host.scales.get() + cells + base[i];
      }
    }
    return IoBatchResult::kOk;
  }

  template <int kMode>
  bool LaunchPairSum(const Charts& c, int offset, int count, int span, int max_partners,
                     std::string* error) {
    if (pair_sum_kernel_ == 1) {
      return cells_per_group_ == 16
                 ? LaunchPairSumG<16, kMode, 1>(c, offset, count, span, max_partners, error)
                 : LaunchPairSumG<8, kMode, 1>(c, offset, count, span, max_partners, error);
    }
    if (pair_sum_kernel_ == 5) {
      return cells_per_group_ == 16
                 ? LaunchPairSumG<16, kMode, 5>(c, offset, count, span, max_partners, error)
                 : LaunchPairSumG<8, kMode, 5>(c, offset, count, span, max_partners, error);
    }
    if (pair_sum_kernel_ == 3) {
      return cells_per_group_ == 16
                 ? LaunchPairSumG<16, kMode, 3>(c, offset, count, span, max_partners, error)
                 : LaunchPairSumG<8, kMode, 3>(c, offset, count, span, max_partners, error);
    }
    return cells_per_group_ == 16
               ? LaunchPairSumG<16, kMode, 2>(c, offset, count, span, max_partners, error)
               : LaunchPairSumG<8, kMode, 2>(c, offset, count, span, max_partners, error);
  }

  template <int kG, int kMode, int kRules>
  bool LaunchPairSumG(const Charts& c, int offset, int count, int span, int max_partners,
                      std::string* error) {
    const PairLayout& layout = layouts_[kMode];
    if (layout.num_tiles == 0 || max_partners <= 0) return true;
    const size_t shared = size_t(kRules >= 3 ? kG + 1 : kG) * layout.max_bc * sizeof(double) +
                          size_t(kG) * max_partners * 16;
    if (!AllowDynamicShared(PairSumKernel<kG, kMode, kRules>, shared, max_shared_optin_, "pair-sum",
                            error))
      return false;
    const int groups = (count + kG - 1) / kG;
    const int tiles = layout.num_tiles;
    const int blocks_x = std::max(1, std::min(groups, (num_sms_ * 64 + tiles - 1) / tiles));
    const int per_block = (groups + blocks_x - 1) / blocks_x;
    const int launched_x = (groups + per_block - 1) / per_block;
    Charts cg = c;
    if (c.dead_cells) {  // masked dispatch 2: the groups' partner symbols first
      const size_t flags = size_t(groups) * 2 * num_symbols_;  // reserved by Run
      cudaMemsetAsync(group_present_.get(), 0, flags, stream_);
      GroupPresenceKernel<kMode><<<groups, kThreads, 0, stream_>>>(
          c, items_.get(), offset, span, count, kG, max_partners, group_present_.get());
      cg.group_present = group_present_.get();
    }
    PairSumKernel<kG, kMode, kRules><<<dim3(launched_x, tiles), kThreads, shared, stream_>>>(
        cg, items_.get(), offset, span, layout.view(), count, max_partners, layout.max_bc,
        per_block);
    const cudaError_t launch = cudaGetLastError();
    if (launch != cudaSuccess) {
      *error = std::string("kernel launch failed: ") + cudaGetErrorString(launch);
      return false;
    }
    return true;
  }

  bool UploadLayout(const PairSumLayout& layout, PairLayout* out) {
    out->num_tiles = static_cast<int>(layout.tiles.size());
    out->max_bc = layout.max_bc;
    if (out->num_tiles > 65535) return false;
    return out->info.Upload(AsDevice<int4>(layout.info)) &&
           out->symbols.Upload(AsDevice<int2>(layout.symbols)) && out->tiles.Upload(layout.tiles) &&
           out->pl_begin.Upload(layout.pl_begin) && out->pl_target.Upload(layout.pl_target) &&
           out->pl_rule_begin.Upload(layout.pl_rule_begin) && out->key.Upload(layout.key) &&
           out->w.Upload(layout.w);
  }

  bool UploadMaxRule(const MaxRuleLayout& m) {
    max_q_ = m.max_q;
    max_substates_ = m.max_substates;
    warp_block_ = m.warp_block;
    num_chunks_ = static_cast<int>(m.chunks.size());
    num_pairs_ = static_cast<int>(m.pair_symbols.size());
    const bool hybrid = max_rule_kernel_ >= 9;
    return mr_base_.Upload(AsDevice<int4>(m.base)) && mr_key_.Upload(m.keys) && mr_w_.Upload(m.w) &&
           mr_dense_.Upload(m.dense) && mr_chunk_.Upload(AsDevice<int4>(m.chunks)) &&
           symbol_chunk_begin_.Upload(m.chunk_begin) && pair_begin_.Upload(m.pair_begin) &&
           pair_symbols_.Upload(AsDevice<int2>(m.pair_symbols)) &&
           pair_rule_begin_.Upload(m.pair_rule_begin) && pu_parent_.Upload(m.pu_parent) &&
           pu_child_.Upload(m.pu_child) && pu_w_.Upload(m.pu_w) &&
           block_chunks_.Upload(m.block_chunks) && warp_chunks_.Upload(m.warp_chunks) &&
           warp_order_.Upload(m.warp_order) &&
           ((max_rule_kernel_ != 7 && !hybrid) ||
            (entry_begin_.Upload(m.entry_begin) && entry_bc_.Upload(m.entry_bc) &&
             entry_rule_begin_.Upload(m.entry_rule_begin) && entry_a_.Upload(m.entry_a) &&
             entry_w_.Upload(m.entry_w)));
  }

  MaxRuleArrays MaxRuleView() const {
    return {mr_base_.get(),
            mr_key_.get(),
            mr_w_.get(),
            mr_dense_.get(),
            mr_chunk_.get(),
            pair_begin_.get(),
            pair_symbols_.get(),
            pair_rule_begin_.get(),
            pu_parent_.get(),
            pu_child_.get(),
            pu_w_.get(),
            first_state_.get(),
            num_substates_.get(),
            entry_begin_.get(),
            entry_bc_.get(),
            entry_rule_begin_.get(),
            entry_a_.get(),
            entry_w_.get(),
            warp_order_.size() ? warp_order_.get() : nullptr};
  }

  struct HostBuffers {
    PinnedArray<double> score;
    PinnedArray<int4> info;
    PinnedArray<double> log_likelihood;
    PinnedArray<double> in, out, scales;
  };

  int num_states_ = 0, num_symbols_ = 0;
  int max_shared_optin_ = 48 * 1024;
  int num_sms_ = 132;
  size_t budget_ = 0;
  cudaStream_t stream_ = nullptr;
  bool profile_ = false;
  std::array<double, 6> profile_ms_{};  // host wall, setup, inside, outside, max-rule, copy back
  std::array<double, kNumKinds> kind_ms_{};
  std::vector<cudaEvent_t> kind_events_;
  std::vector<int> kind_of_;  // this batch's Kind() calls
  int profile_batches_ = 0;
  std::vector<cudaEvent_t> events_;

  DeviceArray<int> state_symbol_, first_state_, num_substates_;
  DeviceArray<int> up_begin_, up_child_, uc_begin_, uc_parent_;
  DeviceArray<double> up_w_, uc_w_;
  std::array<PairLayout, 3> layouts_;
  // Max-rule.
  DeviceArray<int4> mr_base_, mr_chunk_;
  DeviceArray<int> mr_key_, symbol_chunk_begin_, pair_begin_, pair_rule_begin_, pu_parent_,
      pu_child_;
  DeviceArray<double> mr_w_, pu_w_, mr_dense_;
  DeviceArray<int> entry_begin_, entry_bc_, entry_rule_begin_,
      entry_a_;  // kernels 7, 9, 11, 13, 14
  DeviceArray<double> entry_w_;
  DeviceArray<int> block_chunks_,
      warp_chunks_;              // kernels 9, 11, 13, 14: chunks of big / small rules
  DeviceArray<int> warp_order_;  // kernels 13, 14 (MaxRuleArrays::warp_order)
  int warp_block_ = kThreads;    // threads a block of warp chunks (kernels 9, 11, 13, 14)
  DeviceArray<int2> pair_symbols_;
  int num_chunks_ = 0, num_pairs_ = 0, max_q_ = 1, max_substates_ = 1;
  int cells_per_group_ = 8;   // pair-sum kernel: 8 or 16
  int max_rule_kernel_ = 13;  // max-rule binary kernel variant (options.max_rule_kernel)
  int pair_sum_kernel_ = 5;   // pair-sum kernel variant (options.pair_sum_kernel)
  int masked_dispatch_ = 2;   // options.masked_dispatch
  // Batch buffers.
  DeviceArray<double> in_, out_, acc_, scales_, log_likelihood_, lexical_, maxc_score_;
  DeviceArray<unsigned char> present_;
  DeviceArray<int> top_;
  DeviceArray<CellItem> items_;
  DeviceArray<int4> maxc_info_;
  DeviceArray<Candidate> candidates_;
  DeviceArray<unsigned char> group_present_;  // masked dispatch 2: pair-sum group flags
  HostBuffers host_[2];
  int next_host_ = 0;
};

}  // namespace

std::unique_ptr<DeviceInsideOutside> DeviceInsideOutside::Create(
    const SumGrammarArrays& grammar, const DeviceInsideOutsideOptions& options,
    std::string* error) {
  error->clear();
  auto impl = std::make_unique<DeviceInsideOutsideImpl>();
  if (!impl->Init(grammar, options, error)) {
    if (error->empty()) *error = "could not set up the CUDA inside-outside backend";
    return nullptr;
  }
  return impl;
}

}  // namespace cky::cuda
