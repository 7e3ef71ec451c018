// The pair-sum kernels: the binary sums of one span length, inside or one outside direction
// (cuda/inside_outside/inside_outside.h describes the mapping), and masked dispatch 3's work lists.
// With kMax the same kernels run in the max-plus semiring over log scores (no scales), for the
// pre-parses of cuda/pruning/pruned_viterbi.cu (pruning kernels 4): S[x][y] = max over partners of
// X_x + Y_y, each rule's candidate w + S[x][y] (w its log-probability) taken into the target by an
// atomic maximum, so a candidate adds rule + (X + Y). For the parser's .cu files only.
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cuda/inside_outside/charts.cuh"
#include "cuda/inside_outside/sum_layouts.h"

namespace cky::cuda::io {
// Each .cu file that includes this gets its own copy of the kernels (internal linkage).
namespace {

struct PairArrays {
  const int4* info;          // per tile: first X state of the band, band rows, Y's first state, sY
  const int2* symbols;       // per tile: X, Y symbols (presence flags)
  const int* tiles;          // tile order of the launch (heaviest first)
  const int* pl_begin;       // per tile: its target states [pl_begin[t], pl_begin[t + 1])
  const int* pl_target;      // per target-of-tile: the target state
  const int* pl_rule_begin;  // per target-of-tile: its rules in key/w
  const int* key;            // per rule: x * sY + y (x relative to the band); sparse: the index
                             // of that pair in the tile's used_key list
  const double* w;           // per rule: probability (kMax: log-probability)
  const int* used_begin;     // null, or per tile its first used pair (PairSumLayout's sparse tiles)
  const int* used_key;       // sparse tiles: the pairs x * sY + y their rules use
};

// floor(a / b) for 0 <= a < 2^22 and b >= 1, given inv_b = 1.0f / b: (a + 0.5) / b lies at least
// 0.5 / b from an integer, more than the float product's error.
__device__ __forceinline__ int SmallQuotient(int a, float inv_b) {
  return __float2int_rz((float(a) + 0.5f) * inv_b);
}

// D += A B for one m8n8k4 FP64 tensor-core product of a warp (PairSumGroup gives the fragments).
__device__ __forceinline__ void Dmma884(double& d0, double& d1, double a, double b) {
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
               : "+d"(d0), "+d"(d1)
               : "d"(a), "d"(b));
}

// max(a, b) for scores that are never NaN (log scores: finite or -infinity): a compare and a
// select, where fmax's NaN rules cost five instructions on doubles.
__device__ __forceinline__ double MaxOf(double a, double b) { return b > a ? b : a; }

// The shared memory of one group (PairSumKernel's layout).
struct PairSumShared {
  double* sh_s;  // [substate pair][G (+ 1)]
  double* sh_f;  // [G][partner]
  int* sh_x;
  int* sh_y;
  int* sh_count;  // [G]
  int* sh_total;
};

template <int kG, int kRules>
__device__ __forceinline__ PairSumShared CarvePairSumShared(double* shared, int max_bc,
                                                            int max_partners, int* counts,
                                                            int* total) {
  constexpr int kStride = kRules >= 3 ? kG + 1 : kG;  // doubles a substate pair in S
  PairSumShared m;
  m.sh_s = shared;
  m.sh_f = m.sh_s + size_t(kStride) * max_bc;
  m.sh_x = reinterpret_cast<int*>(m.sh_f + kG * max_partners);
  m.sh_y = m.sh_x + kG * max_partners;
  m.sh_count = counts;
  m.sh_total = total;
  return m;
}

// One (tile, group of up to kG target cells) of a pair-sum launch: the group's cells are the
// span's items item_of(0 .. num_cells - 1). Uniform over the block (barriers inside).
template <int kG, int kMode, int kRules, bool kMax = false, typename ItemOf>
__device__ __forceinline__ void PairSumGroup(const Charts& c, const CellItem* items,
                                             int item_offset, int span, const PairArrays& pairs,
                                             int tile, ItemOf item_of, int num_cells,
                                             int max_partners, const PairSumShared& m) {
  constexpr int kStride = kRules >= 3 ? kG + 1 : kG;  // doubles a substate pair in S
  static_assert(!kMax || kRules == 2 || kRules == 3, "max-plus runs the register-blocked S phase");
  constexpr double kZero = kMax ? kNegInfD : 0.0;  // the semiring's zero
  // Register blocking of the S phase without tensor cores: kQuad x kQuad substate pairs a thread
  // (variants 1 to 3); the max-plus instances 2 x 2, so that a small tile's group still keeps most
  // of the block's threads busy (with 4 x 4 they waited at the barrier after it).
  constexpr int kQ = kMax ? 2 : kQuad;
  double* sh_s = m.sh_s;
  double* sh_f = m.sh_f;
  int* sh_x = m.sh_x;
  int* sh_y = m.sh_y;
  int* sh_count = m.sh_count;
  int& sh_total = *m.sh_total;
  // Inside: X and Y read the inside chart; outside: X is the parent's outpre, Y the sibling's in.
  const double* xchart = kMode == kInside ? c.in : c.out;
  const double* xscale = kMode == kInside ? c.in_scale : c.out_scale;
  const unsigned char* xpresent = kMode == kInside ? c.present_in : c.present_out;
  const int4 info = __ldg(pairs.info + tile);
  const int2 sym = __ldg(pairs.symbols + tile);
  const int s_y = info.w;
  const int quads = (s_y + kQ - 1) / kQ;
  const int band_items = ((info.y + kQ - 1) / kQ) * quads;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int pl_first = __ldg(pairs.pl_begin + tile), pl_end = __ldg(pairs.pl_begin + tile + 1);
  __syncthreads();
  if (threadIdx.x < kG) sh_count[threadIdx.x] = 0;
  if (threadIdx.x == 0) sh_total = 0;
  __syncthreads();

  for (int e = threadIdx.x; e < kG * max_partners; e += blockDim.x) {
    const int g = e / max_partners, k = e % max_partners;
    if (g >= num_cells) continue;
    const CellItem it = items[item_offset + item_of(g)];
    if (k >= NumPartners<kMode>(it, span)) continue;
    int xc, yc;
    Partner<kMode>(it, span, k, &xc, &yc);
    if (!xpresent[size_t(xc) * c.num_symbols + sym.x] ||
        !c.present_in[size_t(yc) * c.num_symbols + sym.y])
      continue;
    double f = 1;  // max-plus: log scores, no scales
    if constexpr (!kMax) {
      const int target = it.base + ChartCellIndex(it.n, it.start, it.start + span);
      f = exp(xscale[xc] + c.in_scale[yc] - c.ref_scale[target]);
      if (!(f > 0)) continue;
    }
    const int slot = atomicAdd(&sh_count[g], 1);
    sh_f[g * max_partners + slot] = f;
    sh_x[g * max_partners + slot] = xc;
    sh_y[g * max_partners + slot] = yc;
    atomicAdd(&sh_total, 1);
  }
  __syncthreads();
  if (sh_total == 0) return;

  // S[x][y] per cell of the group: sum over partners of (f X_x) * Y_y.
  if constexpr (kRules == 5 && !kMax) {
    // FP64 tensor cores: per cell, S = X^T Y with X = partners x band rows (scaled by f), Y =
    // partners x s_Y, one m8n8k4 DMMA per 4 partners and 8 x 8 piece of S. PTX fragments
    // (mma.m8n8k4 .f64): A[m][k] and B[k][n] one double a lane, m = n = lane / 4, k = lane % 4; D
    // two doubles a lane, row lane / 4, columns 2 (lane % 4) + {0, 1}. A warp task is one 8 x 8
    // piece of S for a run of `chunk` cells of the group. Where the cells have few partners (a DMMA
    // or two a cell: most spans of a pruned chart), the task's set-up (the piece's place, its rows'
    // bounds) is most of its work: then one task serves a run of cells, as long as each warp of the
    // block still gets a task; else a task is one cell.
    const int tiles_x = (info.y + 7) / 8, tiles_y = (s_y + 7) / 8;
    const int per_cell = tiles_x * tiles_y;
    const int row = lane / 4, kq = lane % 4;
    const int warps = blockDim.x / 32;
    int chunk = 1;
    if (sh_total <= 8 * num_cells) {
      chunk = kG;
      while (chunk > 1 && (kG / chunk) * per_cell < warps) chunk /= 2;
    }
    const int runs = kG / chunk;  // powers of two
    const int runs_shift = __ffs(runs) - 1;
    const float inv_tiles_y = 1.0f / tiles_y;
    for (int e = warp; e < runs * per_cell; e += warps) {
      const int piece = e >> runs_shift, first = (e & (runs - 1)) * chunk;
      const int tx = SmallQuotient(piece, inv_tiles_y);
      const int x0 = tx * 8, y0 = (piece - tx * tiles_y) * 8;
      const bool x_in = x0 + row < info.y, y_in = y0 + row < s_y;
      const double* xcol = xchart + info.x + x0 + row;
      const double* ycol = c.in + info.z + y0 + row;
      const int x = x0 + row, y = y0 + 2 * kq;
      const bool store0 = x < info.y && y < s_y, store1 = x < info.y && y + 1 < s_y;
      const int last = min(first + chunk, num_cells);
      // Two cells at a time, so that each step's chart reads of both are in flight together.
      for (int g = first; g < last; g += 2) {
        const int h = g + 1 < last ? g + 1 : g;  // an odd run's last cell pairs with itself
        const int count_g = sh_count[g], count_h = h != g ? sh_count[h] : 0;
        double d0 = 0, d1 = 0, e0 = 0, e1 = 0;
        // This lane's A and B elements of a cell's partner s (zero past its partners).
        const auto operands = [&](int cell, int count, int s, double& a, double& b) {
          a = 0, b = 0;
          if (s < count) {
            const int slot = cell * max_partners + s;
            if (x_in) a = sh_f[slot] * xcol[size_t(sh_x[slot]) * c.num_states];
            if (y_in) b = ycol[size_t(sh_y[slot]) * c.num_states];
          }
        };
        for (int s0 = 0; s0 < max(count_g, count_h); s0 += 4) {
          double a, b, a2, b2;
          operands(g, count_g, s0 + kq, a, b);
          operands(h, count_h, s0 + kq, a2, b2);
          if (s0 < count_g) Dmma884(d0, d1, a, b);
          if (s0 < count_h) Dmma884(e0, e1, a2, b2);
        }
        if (store0) sh_s[(x * s_y + y) * kStride + g] = d0;
        if (store1) sh_s[(x * s_y + y + 1) * kStride + g] = d1;
        if (h != g && store0) sh_s[(x * s_y + y) * kStride + h] = e0;
        if (h != g && store1) sh_s[(x * s_y + y + 1) * kStride + h] = e1;
      }
    }
  } else if (const int used_first = pairs.used_begin ? __ldg(pairs.used_begin + tile) : 0,
             used = pairs.used_begin ? __ldg(pairs.used_begin + tile + 1) - used_first : 0;
             used > 0) {
    // A sparse tile: S only at the substate pairs its rules use (S's row u: used pair u), a thread
    // per (cell, used pair) over the cell's partners.
    const float inv_used = 1.0f / used, inv_s_y = 1.0f / s_y;
    for (int e = threadIdx.x; e < kG * used; e += blockDim.x) {
      const int g = SmallQuotient(e, inv_used), u = e - g * used;
      const int pair = __ldg(pairs.used_key + used_first + u);
      const int x = SmallQuotient(pair, inv_s_y), y = pair - x * s_y;
      double sum = kZero;
      const int count = sh_count[g];
      for (int s = 0; s < count; ++s) {
        const double xv = xchart[size_t(sh_x[g * max_partners + s]) * c.num_states + info.x + x];
        const double yv = c.in[size_t(sh_y[g * max_partners + s]) * c.num_states + info.z + y];
        if constexpr (kMax) {
          sum = MaxOf(sum, xv + yv);
        } else {
          sum = fma(sh_f[g * max_partners + s] * xv, yv, sum);
        }
      }
      sh_s[u * kStride + g] = sum;
    }
  } else {
    // Quotients by float reciprocals (exact for these small numbers, below 2^22): an integer
    // division cost as much as a partner's work.
    const float inv_band = 1.0f / band_items, inv_quads = 1.0f / quads;
    for (int e = threadIdx.x; e < kG * band_items; e += blockDim.x) {
      const int g = SmallQuotient(e, inv_band), rem = e - g * band_items;
      const int qx = SmallQuotient(rem, inv_quads);
      const int x0 = qx * kQ, y0 = (rem - qx * quads) * kQ;
      double sum[kQ][kQ];
#pragma unroll
      for (int i = 0; i < kQ; ++i)
#pragma unroll
        for (int j = 0; j < kQ; ++j) sum[i][j] = kZero;
      const int count = sh_count[g];
      for (int s = 0; s < count; ++s) {
        const double f = sh_f[g * max_partners + s];
        const double* xrow = xchart + size_t(sh_x[g * max_partners + s]) * c.num_states + info.x;
        const double* yrow = c.in + size_t(sh_y[g * max_partners + s]) * c.num_states + info.z;
        double xv[kQ], yv[kQ];
#pragma unroll
        for (int q = 0; q < kQ; ++q) {
          if constexpr (kMax) {
            xv[q] = x0 + q < info.y ? xrow[x0 + q] : kNegInfD;
          } else {
            xv[q] = x0 + q < info.y ? f * xrow[x0 + q] : 0.0;
          }
          yv[q] = y0 + q < s_y ? yrow[y0 + q] : kZero;
        }
#pragma unroll
        for (int i = 0; i < kQ; ++i)
#pragma unroll
          for (int j = 0; j < kQ; ++j) {
            if constexpr (kMax) {
              sum[i][j] = MaxOf(sum[i][j], xv[i] + yv[j]);
            } else {
              sum[i][j] = fma(xv[i], yv[j], sum[i][j]);
            }
          }
      }
#pragma unroll
      for (int i = 0; i < kQ; ++i)
#pragma unroll
        for (int j = 0; j < kQ; ++j)
          if (x0 + i < info.y && y0 + j < s_y)
            sh_s[((x0 + i) * s_y + y0 + j) * kStride + g] = sum[i][j];
    }
  }
  __syncthreads();

  if constexpr (kRules >= 2) {
    // Rules: a thread per (target state, cell of the group).
    constexpr int kSlots = 32 / kG;
    const int g = lane % kG;
    const bool live = g < num_cells;
    int target = 0;
    if (live) {
      const CellItem it = items[item_offset + item_of(g)];
      target = it.base + ChartCellIndex(it.n, it.start, it.start + span);
    }
    for (int pl = pl_first + warp * kSlots + lane / kG; pl < pl_end;
         pl += (blockDim.x / 32) * kSlots) {
      if (!live) continue;
      const int t = __ldg(pairs.pl_target + pl);
      // Outside flows only to a child whose inside is positive (parser/inside_outside_cpu.h;
      // max-plus: finite).
      if (kMode != kInside && !(c.in[size_t(target) * c.num_states + t] > kZero)) continue;
      // A pruned target's sum would be zeroed by the unary kernel: skip its rules.
      if (kMode == kInside && c.allowed && !c.allowed[size_t(target) * c.num_states + t]) continue;
      double acc = kZero;
      const int rule_end = __ldg(pairs.pl_rule_begin + pl + 1);
      for (int r = __ldg(pairs.pl_rule_begin + pl); r < rule_end; ++r) {
        const double s = sh_s[__ldg(pairs.key + r) * kStride + g];
        if constexpr (kMax) {
          acc = MaxOf(acc, __ldg(pairs.w + r) + s);
        } else {
          acc = fma(__ldg(pairs.w + r), s, acc);
        }
      }
      if (acc > kZero) {
        if constexpr (kMax) {
          AtomicMaxDouble(c.acc + size_t(target) * c.num_states + t, acc);
        } else {
          atomicAdd(c.acc + size_t(target) * c.num_states + t, acc);
        }
      }
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
        if (!used && lane < kG && lane < num_cells) {
          const CellItem it = items[item_offset + item_of(lane)];
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
        if (mine > 0 && lane < num_cells) {
          const CellItem it = items[item_offset + item_of(lane)];
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
__device__ __forceinline__ void PairSumGroups(const Charts& c, const CellItem* items,
                                              int item_offset, int span, const PairArrays& pairs,
                                              int num_items, int max_partners, int max_bc,
                                              int groups_per_block) {
  extern __shared__ double shared[];
  __shared__ int sh_count[kG];
  __shared__ int sh_total;
  const PairSumShared m =
      CarvePairSumShared<kG, kRules>(shared, max_bc, max_partners, sh_count, &sh_total);
  const int tile = __ldg(pairs.tiles + blockIdx.y);
  const int2 sym = __ldg(pairs.symbols + tile);
  const int num_groups = (num_items + kG - 1) / kG;
  const int group_end = min(num_groups, int(blockIdx.x + 1) * groups_per_block);
  const int lane = threadIdx.x % 32;
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
    PairSumGroup<kG, kMode, kRules>(
        c, items, item_offset, span, pairs, tile, [first_item](int g) { return first_item + g; },
        min(kG, num_items - first_item), max_partners, m);
  }
}

// Variants 1 to 3.
template <int kG, int kMode, int kRules>
__global__ void __launch_bounds__(kThreads)
    PairSumKernel(Charts c, const CellItem* items, int item_offset, int span, PairArrays pairs,
                  int num_items, int max_partners, int max_bc, int groups_per_block) {
  PairSumGroups<kG, kMode, kRules>(c, items, item_offset, span, pairs, num_items, max_partners,
                                   max_bc, groups_per_block);
}

// Variant 5 (tensor cores): the unmasked passes' kernel, left free (64 registers; held to 48 as
// the list kernel below, the exact passes ran 5% slower).
template <int kG, int kMode>
__global__ void __launch_bounds__(kThreads)
    PairSumTensorKernel(Charts c, const CellItem* items, int item_offset, int span,
                        PairArrays pairs, int num_items, int max_partners, int max_bc,
                        int groups_per_block) {
  PairSumGroups<kG, kMode, 5>(c, items, item_offset, span, pairs, num_items, max_partners, max_bc,
                              groups_per_block);
}

// The pair-sum kernel of variant kRules.
template <int kG, int kMode, int kRules>
constexpr auto PairSumKernelOf() {
  if constexpr (kRules == 5) {
    return PairSumTensorKernel<kG, kMode>;
  } else {
    return PairSumKernel<kG, kMode, kRules>;
  }
}

// Masked dispatch 3: the symbol pairs (X, Y) of a pair-sum layout and, per launch, the span's
// target cells each pair is live for (ListLivePairsKernel), in lists per pair; the launch's work is
// every (tile, group of up to kG of its pair's live cells), tiles in launch order.
struct LiveLists {
  const int* pair_of_tile;  // per tile: its symbol pair
  const int* pair_count;    // per pair: its live target cells
  const int* cells;         // pair p's list from p * stride: item indices from the span's first
  int stride;               // the launch's target cells (no pair is live for more)
  const int* group_begin;   // per tile in launch order: its first group; [num_tiles]: the total
  int num_tiles;
};

// Dispatch 3's pair-sum launch: blocks take the groups of every tile's live cells in turn (a
// block's groups may belong to several tiles).
template <int kG, int kMode, int kRules, bool kMax>
__device__ __forceinline__ void PairSumList(const Charts& c, const CellItem* items, int item_offset,
                                            int span, const PairArrays& pairs,
                                            const LiveLists& lists, int max_partners, int max_bc) {
  extern __shared__ double shared[];
  __shared__ int sh_count[kG];
  __shared__ int sh_total;
  const PairSumShared m =
      CarvePairSumShared<kG, kRules>(shared, max_bc, max_partners, sh_count, &sh_total);
  const int total = lists.group_begin[lists.num_tiles];
  for (int group = blockIdx.x; group < total; group += gridDim.x) {
    // The last tile whose first group is <= group, in [lo, hi]: each warp searches on its own,
    // its lanes probing 32 evenly spaced tiles a round (3 dependent loads for 30,000 tiles; a
    // binary search by every thread took 15, and a sixth of the kernel's instructions).
    int lo = 0, hi = lists.num_tiles - 1;  // group_begin[lo] <= group throughout
    while (lo < hi) {
      const int step = (hi - lo + 32) / 32;  // ceil((hi - lo + 1) / 32)
      const int probe = lo + (threadIdx.x % 32) * step;
      const unsigned below = __ballot_sync(
          0xffffffffu, probe <= hi && __ldg(lists.group_begin + probe) <= group);
      lo += (__popc(below) - 1) * step;  // group_begin is nondecreasing: the true lanes lead
      hi = min(hi, lo + step - 1);
    }
    const int tile = __ldg(pairs.tiles + lo);
    const int pair = lists.pair_of_tile[tile];
    const int first = (group - lists.group_begin[lo]) * kG;
    const int* cells = lists.cells + size_t(pair) * lists.stride + first;
    PairSumGroup<kG, kMode, kRules, kMax>(
        c, items, item_offset, span, pairs, tile, [cells](int g) { return cells[g]; },
        min(kG, lists.pair_count[pair] - first), max_partners, m);
  }
}

// The sum-product instances (the passes).
template <int kG, int kMode, int kRules>
__global__ void __launch_bounds__(kThreads)
    PairSumListKernel(Charts c, const CellItem* items, int item_offset, int span, PairArrays pairs,
                      LiveLists lists, int max_partners, int max_bc) {
  PairSumList<kG, kMode, kRules, false>(c, items, item_offset, span, pairs, lists, max_partners,
                                        max_bc);
}
// Variant 5 (tensor cores) over masked dispatch 3's lists, held to 48 registers (a few bytes
// spill) so that 5 blocks fit an SM, as many as its shared memory allows: with the 64 it takes
// free, the pruned passes ran slower.
template <int kG, int kMode>
__global__ void __launch_bounds__(kThreads, 5)
    PairSumTensorListKernel(Charts c, const CellItem* items, int item_offset, int span,
                            PairArrays pairs, LiveLists lists, int max_partners, int max_bc) {
  PairSumList<kG, kMode, 5, false>(c, items, item_offset, span, pairs, lists, max_partners, max_bc);
}

// The max-plus instances (the pre-parses and pruned Viterbi's fine pass), held to 48 registers
// (no spills), 5 blocks an SM where shared memory allows: they are latency-bound (each group's
// partner gathering, S phase and rules are chains of dependent loads), and each step up in
// resident warps made them faster (80 registers, 3 blocks an SM; 64, 4; bench/RESULTS-LOG.md).
template <int kG, int kMode, int kRules>
__global__ void __launch_bounds__(kThreads, 5)
    PairMaxListKernel(Charts c, const CellItem* items, int item_offset, int span, PairArrays pairs,
                      LiveLists lists, int max_partners, int max_bc) {
  PairSumList<kG, kMode, kRules, true>(c, items, item_offset, span, pairs, lists, max_partners,
                                       max_bc);
}

// Dispatch 3: per target cell of the span (a block each), the symbol pairs (X, Y) live for it: X
// present in the X partner cell and Y in the Y partner cell of one partner (split point, or parent
// and sibling), and one of the pair's target symbols usable in the cell (inside: an allowed
// state; outside: a positive inside value, as the pair-sum's rule phase requires), each cell
// written into its live pairs' lists (pair p's from cells[p * gridDim.x], pair_count[p] its
// length: zeroed by the caller). Dynamic shared memory: (num_symbols + 1) x words 32-bit words.
constexpr int kMaxSymbolWords = kMaxPairSymbols / 32;  // dispatch 3: at most 256 symbols

template <int kMode, bool kMax = false>
__global__ void __launch_bounds__(kThreads)
    ListLivePairsKernel(Charts c, const CellItem* items, int item_offset, int span,
                        const int2* pair_symbols, const unsigned* pair_targets, int num_pairs,
                        const int* state_symbol, int* pair_count, int* cells) {
  extern __shared__ unsigned sh_live[];  // [X][words]: the Y symbols live with X; then targets
  const int words = (c.num_symbols + 31) / 32;
  unsigned* targets = sh_live + c.num_symbols * words;
  const CellItem it = items[item_offset + blockIdx.x];
  const int target = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  for (int i = threadIdx.x; i < (c.num_symbols + 1) * words; i += blockDim.x) sh_live[i] = 0;
  __syncthreads();
  bool any = false;
  if (kMode == kInside && !c.allowed) {  // every parent allowed (a first pre-parse level)
    for (int x = threadIdx.x; x < c.num_symbols; x += blockDim.x) {
      atomicOr(targets + x / 32, 1u << (x % 32));
      any = true;
    }
  } else if (kMode == kInside) {
    const unsigned char* allowed = c.allowed + size_t(target) * c.num_states;
    for (int s = threadIdx.x; s < c.num_states; s += blockDim.x) {
      if (allowed[s]) {
        const int x = __ldg(state_symbol + s);
        atomicOr(targets + x / 32, 1u << (x % 32));
        any = true;
      }
    }
  } else if (kMax || c.in_scale[target] > kNegInfD) {
    const unsigned char* present = c.present_in + size_t(target) * c.num_symbols;
    for (int x = threadIdx.x; x < c.num_symbols; x += blockDim.x) {
      if (present[x]) {
        atomicOr(targets + x / 32, 1u << (x % 32));
        any = true;
      }
    }
  }
  if (!__syncthreads_or(any)) return;
  const unsigned char* xpresent = kMode == kInside ? c.present_in : c.present_out;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int k = warp; k < NumPartners<kMode>(it, span); k += kThreads / 32) {
    int xc, yc;
    Partner<kMode>(it, span, k, &xc, &yc);
    unsigned ybits[kMaxSymbolWords];
#pragma unroll
    for (int w = 0; w < kMaxSymbolWords; ++w) {
      const int y = w * 32 + lane;
      ybits[w] = w < words
                     ? __ballot_sync(0xffffffffu, y < c.num_symbols &&
                                                      c.present_in[size_t(yc) * c.num_symbols + y])
                     : 0u;
    }
    for (int x = lane; x < c.num_symbols; x += 32) {
      if (!xpresent[size_t(xc) * c.num_symbols + x]) continue;
#pragma unroll
      for (int w = 0; w < kMaxSymbolWords; ++w)
        if (w < words && ybits[w]) atomicOr(sh_live + x * words + w, ybits[w]);
    }
  }
  __syncthreads();
  for (int p = threadIdx.x; p < num_pairs; p += blockDim.x) {
    const int2 xy = __ldg(pair_symbols + p);
    if (!((sh_live[xy.x * words + xy.y / 32] >> (xy.y % 32)) & 1u)) continue;
    bool usable = false;
    for (int w = 0; w < words; ++w)
      usable = usable || (__ldg(pair_targets + p * words + w) & targets[w]);
    if (!usable) continue;
    cells[size_t(p) * gridDim.x + atomicAdd(pair_count + p, 1)] = blockIdx.x;
  }
}

// Dispatch 3, after ListLivePairsKernel: per tile in launch order its first group of kG cells
// (group_begin[num_tiles]: the total). One block.
__global__ void __launch_bounds__(1024)
    ScanLiveListsKernel(const int* pair_count, const int* tiles, const int* pair_of_tile,
                        int num_tiles, int group_cells, int* group_begin) {
  __shared__ int sh_sum[1024];
  auto scan = [&](int n, auto value, auto write) {
    const int per = (n + blockDim.x - 1) / blockDim.x;
    const int first = threadIdx.x * per, last = min(n, first + per);
    int local = 0;
    for (int i = first; i < last; ++i) local += value(i);
    sh_sum[threadIdx.x] = local;
    __syncthreads();
    for (int offset = 1; offset < blockDim.x; offset *= 2) {  // inclusive Hillis-Steele
      const int add = threadIdx.x >= offset ? sh_sum[threadIdx.x - offset] : 0;
      __syncthreads();
      sh_sum[threadIdx.x] += add;
      __syncthreads();
    }
    int running = sh_sum[threadIdx.x] - local;
    for (int i = first; i < last; ++i) {
      write(i, running);
      running += value(i);
    }
    if (threadIdx.x == blockDim.x - 1) write(n, sh_sum[threadIdx.x]);
    __syncthreads();
  };
  scan(
      num_tiles,
      [&](int i) { return (pair_count[pair_of_tile[tiles[i]]] + group_cells - 1) / group_cells; },
      [&](int i, int v) { group_begin[i] = v; });
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

// ---------------------------------------------------------------------------------------------
// Host side: the layouts on the device and masked dispatch 3's launches.

// One pair-sum rule layout (inside, outside-left or outside-right).
struct PairLayout {
  DeviceArray<int4> info;
  DeviceArray<int2> symbols;
  DeviceArray<int> tiles, pl_begin, pl_target, pl_rule_begin, key;
  DeviceArray<double> w;
  DeviceArray<int> used_begin, used_key;  // empty without sparse tiles
  int num_tiles = 0;
  int max_bc = 0;
  PairArrays view() const {
    return {info.get(),          symbols.get(), tiles.get(), pl_begin.get(),   pl_target.get(),
            pl_rule_begin.get(), key.get(),     w.get(),     used_begin.get(), used_key.get()};
  }
};

// Masked dispatch 3's view of one pair-sum layout: its symbol pairs, which tiles (bands) belong
// to each, and each pair's target symbols (bits).
struct LiveLayout {
  DeviceArray<int> pair_of_tile;
  DeviceArray<int2> pair_symbols;
  DeviceArray<unsigned> pair_targets;  // [pair][symbol words]
  int num_pairs = 0;
  int num_tiles = 0;
};

inline bool UploadPairLayout(const PairSumLayout& layout, PairLayout* out) {
  out->num_tiles = static_cast<int>(layout.tiles.size());
  out->max_bc = layout.max_bc;
  if (out->num_tiles > 65535) return false;
  return out->info.Upload(AsDevice<int4>(layout.info)) &&
         out->symbols.Upload(AsDevice<int2>(layout.symbols)) && out->tiles.Upload(layout.tiles) &&
         out->pl_begin.Upload(layout.pl_begin) && out->pl_target.Upload(layout.pl_target) &&
         out->pl_rule_begin.Upload(layout.pl_rule_begin) && out->key.Upload(layout.key) &&
         out->w.Upload(layout.w) && out->used_begin.Upload(layout.used_begin) &&
         out->used_key.Upload(layout.used_key);
}

inline bool UploadLiveLayout(const PairSumLayout& layout, const int32_t* state_symbol,
                             int num_symbols, LiveLayout* out) {
  const int words = (num_symbols + 31) / 32;
  std::vector<int> pair_of_tile(layout.symbols.size());
  std::vector<LayoutInt2> pairs;
  std::vector<unsigned> targets;
  std::map<std::pair<int, int>, int> pair_of;  // (X, Y) -> pair
  for (size_t t = 0; t < layout.symbols.size(); ++t) {
    const auto [found, added] = pair_of.try_emplace({layout.symbols[t].x, layout.symbols[t].y},
                                                    static_cast<int>(pairs.size()));
    const int pair = found->second;
    if (added) {
      pairs.push_back(layout.symbols[t]);
      targets.resize(targets.size() + words, 0u);
    }
    pair_of_tile[t] = pair;
    for (int pl = layout.pl_begin[t]; pl < layout.pl_begin[t + 1]; ++pl) {
      const int x = state_symbol[layout.pl_target[pl]];
      targets[size_t(pair) * words + x / 32] |= 1u << (x % 32);
    }
  }
  out->num_pairs = static_cast<int>(pairs.size());
  out->num_tiles = static_cast<int>(layout.symbols.size());
  return out->pair_of_tile.Upload(pair_of_tile) &&
         out->pair_symbols.Upload(AsDevice<int2>(pairs)) && out->pair_targets.Upload(targets);
}

template <size_t N>
int MaxLivePairs(const std::array<LiveLayout, N>& live) {
  int most = 0;
  for (const LiveLayout& l : live) most = std::max(most, l.num_pairs);
  return most;
}
template <size_t N>
int MaxTiles(const std::array<PairLayout, N>& layouts) {
  int most = 0;
  for (const PairLayout& l : layouts) most = std::max(most, l.num_tiles);
  return most;
}

// Masked dispatch 3's batch buffers: per pair its live cells' count; the lists (a launch's
// target cells' room for each pair); per tile (launch order) its first group.
struct LiveBuffers {
  DeviceArray<int> count, cells, groups;
  // Room for launches of up to `max_cells` target cells over layouts of at most `pairs` symbol
  // pairs and `tiles` tiles.
  bool Reserve(int pairs, int tiles, int max_cells) {
    return cells.Reserve(size_t(pairs) * max_cells) && count.Reserve(pairs) &&
           groups.Reserve(size_t(tiles) + 1);
  }
};

// Masked dispatch 3's launch for `count` target cells of span `span` (items[offset ..]): the live
// (pair, cell)s listed per pair (list, then the tiles' groups counted), then the pair kernel over
// every tile's groups of them, on `stream`. False, with *error, when a launch fails.
template <int kG, int kMode, int kRules, bool kMax>
bool LaunchPairList(const Charts& c, const CellItem* items, int offset, int count, int span,
                    int max_partners, size_t shared, const PairLayout& layout,
                    const LiveLayout& live, const int* state_symbol, int num_sms,
                    cudaStream_t stream, LiveBuffers* buffers, std::string* error) {
  if (layout.num_tiles == 0 || max_partners <= 0 || count == 0) return true;
  const size_t live_shared = size_t(c.num_symbols + 1) * ((c.num_symbols + 31) / 32) * 4;
  // One pass lists every live (pair, cell) into the pair's room (a count pass, a prefix sum and a
  // fill pass that did the work again cost twice the time: bench/RESULTS-LOG.md).
  cudaMemsetAsync(buffers->count.get(), 0, size_t(live.num_pairs) * sizeof(int), stream);
  ListLivePairsKernel<kMode, kMax><<<count, kThreads, live_shared, stream>>>(
      c, items, offset, span, live.pair_symbols.get(), live.pair_targets.get(), live.num_pairs,
      state_symbol, buffers->count.get(), buffers->cells.get());
  ScanLiveListsKernel<<<1, 1024, 0, stream>>>(buffers->count.get(), layout.tiles.get(),
                                              live.pair_of_tile.get(), layout.num_tiles, kG,
                                              buffers->groups.get());
  const LiveLists lists{live.pair_of_tile.get(), buffers->count.get(), buffers->cells.get(), count,
                        buffers->groups.get(),   layout.num_tiles};
  const auto kernel = [] {
    if constexpr (kMax) {
      return PairMaxListKernel<kG, kMode, kRules>;
    } else {
      if constexpr (kRules == 5) {
        return PairSumTensorListKernel<kG, kMode>;
      } else {
        return PairSumListKernel<kG, kMode, kRules>;
      }
    }
  }();
  if (!AllowDynamicShared(kernel, shared, MaxSharedOptin(), "pair-sum", error)) return false;
  int per_sm = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, shared);
  kernel<<<num_sms * std::max(1, per_sm), kThreads, shared, stream>>>(
      c, items, offset, span, layout.view(), lists, max_partners, layout.max_bc);
  const cudaError_t launch = cudaGetLastError();
  if (launch != cudaSuccess) {
    *error = std::string("kernel launch failed: ") + cudaGetErrorString(launch);
    return false;
  }
  return true;
}

}  // namespace
}  // namespace cky::cuda::io
