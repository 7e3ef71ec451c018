// Kernel 9, pair-seg: its single-group bodies (PairSegBody, and PairSegPipeBody for -w) and the
// variants that run them (MakePairSegPass: every kernel 9 variant without -g). pair_seg.cuh has
// the kernels and their launch, pair_seg_multi.cu the -g body of the default.
//
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
//
// Kernel 9's options beyond the split unroll, padding, aligned rows and masks (the letters after
// -a4-m; PairSegPolicy's fields, variants.h):
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
//  - kMultiGroup (-g, with kLaneRules and kTable): a small tile takes up to 4 of its block's cell
//    groups at once (as many as fill the block's 256 threads with 4 x 4 blocks and fit the
//    maxima in shared memory), so that its split loops, rule units and barriers are shared by
//    K groups: in the profiles of -rtq and -rtqw, over 40% of the warps' samples waited at
//    barriers (a median tile has 14 blocks: 112 threads of 256 work in the split phase).
//  - kMin5 (-5): at least 5 blocks per SM (PairSegKernelQuad's launch bounds: 48 registers).
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
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "cuda/viterbi/device_common.cuh"
#include "cuda/viterbi/pair_seg.cuh"
#include "cuda/viterbi/pair_tiles.cuh"

namespace cky::cuda::viterbi {

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
  static_assert(G == 8 || G == 16, "pair-seg: G is 8 or 16");
  constexpr int kMost4 = G == 8 ? 12 : 24, kMost8 = G == 8 ? 40 : 96;  // rules for R = 4, 8
  if (count <= kMost4)
    SegRules<G, 4, kPad>(pairs, sh_best, sh_target, pre, pl, rule_begin, rule_end, lane);
  else if (count <= kMost8)
    SegRules<G, 8, kPad>(pairs, sh_best, sh_target, pre, pl, rule_begin, rule_end, lane);
  else
    SegRules<G, 16, kPad>(pairs, sh_best, sh_target, pre, pl, rule_begin, rule_end, lane);
}

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
    const auto [g, b0, c0] = QuadUnitByMagic(e, t, magic_items, magic_quads);
    float best[kQuad][kQuad];
    InitBest(best);
    const int count = sh_count[g];
    const int* left = sh_left + g * max_splits;
    const int* right = sh_right + g * max_splits;
    const int loff = t.info.x + b0, roff = t.info.z + c0;
    for (int s = 0; s < count; ++s) {
      const float* lp = a.aligned_chart + (size_t(left[s]) * a.row_stride + loff);
      const float* rp = a.aligned_chart + (size_t(right[s]) * a.row_stride + roff);
      MaxPlusRows(LoadRow<kKeep>(lp), LoadRow<kKeep>(rp), best);
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
    const auto [g, b0, c0] = QuadUnitOf(unit, t);
    float best[kQuad][kQuad];
    InitBest(best);
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
        MaxPlusQuads(l, r, best);  // (MaxPlusRows here compiles to other instructions)
      }
    }
    for (int offset = p >> 1; offset > 0; offset >>= 1)
#pragma unroll
      for (int i = 0; i < kQuad; ++i)
#pragma unroll
        for (int j = 0; j < kQuad; ++j)
          best[i][j] = fmaxf(best[i][j], __shfl_xor_sync(0xffffffffu, best[i][j], offset));
    if (active && part == 0) StoreBest<G, true>(best, t, b0, c0, g, sh_best);
  }
  __syncthreads();
}

// The lane-rules phase of one group (LaneRulesAnyL over the tile's units).
template <int G, bool kKeep = false>
__device__ __forceinline__ void LaneRules(const LaneArrays& lanes, int pair, const float* sh_best,
                                          const long long* sh_target, float* pre) {
  static_assert(G == 8, "lane rules: G is 8");
  const int first = __ldg(lanes.unit_begin + pair), end = __ldg(lanes.unit_begin + pair + 1);
  const int units = end - first;
  LaneRulesAnyL<G>(GlobalLaneRules<kKeep>{lanes.units, lanes.rules, first}, units, units, sh_best,
                   0, sh_target, pre);
}

template <typename P>
__device__ __forceinline__ void PairSegBody(CKY_PAIR_SEG_PARAMS) {
  constexpr int G = P::kGroup, kSplitUnroll = P::kSplitUnroll;
  constexpr bool kPad = P::kPad, kAligned = P::kAligned, kMask = P::kMask;
  static_assert(!P::kAnyOption || (kAligned && kPad && kMask), "-r, -s, -t extend pair-seg-*-a4-m");
  static_assert(!P::kQuadPad || (!P::kSplitPar && G == 8));
  static_assert(!P::kPipe, "-w: PairSegPipeBody");
  extern __shared__ float shared[];
  static_assert(G % 4 == 0, "G cells are read as float4");
  float* sh_best = shared;  // BestOffset(substate pair) + g: BestFloats(G, max_bc) floats
  int* sh_left = reinterpret_cast<int*>(sh_best + BestFloats(G, max_bc));  // G * max_splits
  int* sh_right = sh_left + G * max_splits;                                // G * max_splits
  __shared__ int sh_count[G];
  __shared__ long long sh_target[G];  // the cell's first score in pre, or -1 past the items
  __shared__ int sh_total;

  const auto [pair, tile, group_begin, group_end] =
      LoadTileBlock<G>(pairs, num_items, groups_per_block);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int pl_first = __ldg(pairs.pl_begin + pair), pl_end = __ldg(pairs.pl_begin + pair + 1);
  unsigned magic_items = 0, magic_quads = 0;
  if constexpr (P::kQuadPad) {
    magic_items = DivMagic(tile.band_items);
    magic_quads = DivMagic(tile.quads);
  }

  for (int group = group_begin; group < group_end; ++group) {
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
    if constexpr (P::kTable) {
      GatherSplitsTable<G>(a, tile.sym, lanes.split_table, mask_words, num_items, first_item,
                           max_splits, sh_left, sh_right, sh_count, &sh_total);
    } else {
      GatherSplits<G>(a, tile.sym, present, num_symbols, num_items, first_item, max_splits, sh_left,
                      sh_right, sh_count, &sh_total);
    }
    if (sh_total == 0) continue;  // uniform: every thread read it before the next barrier
    if constexpr (P::kSplitPar) {
      SplitMaximaPar<G>(a, tile, sh_left, sh_right, sh_count, max_splits, sh_best);
    } else if constexpr (P::kQuadPad) {
      SplitMaximaQuad<G>(a, tile, magic_items, magic_quads, sh_left, sh_right, sh_count, max_splits,
                         sh_best);
    } else {
      SplitMaxima<G, kSplitUnroll, kPad, kAligned, true, P::kKeepRules>(
          a, tile, sh_left, sh_right, sh_count, max_splits, sh_best);
    }
    if constexpr (P::kLaneRules) {
      LaneRules<G, P::kKeepRules>(lanes, pair, sh_best, sh_target, a.pre);
    } else {
      for (int pl = pl_first + warp; pl < pl_end; pl += blockDim.x / 32)
        SegRulesForCount<G, kPad>(pairs, sh_best, sh_target, a.pre, pl, lane);
    }
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
template <typename P>
__device__ __forceinline__ void PairSegPipeBody(CKY_PAIR_SEG_PARAMS) {
  constexpr int G = P::kGroup;
  static_assert(G == 8 && P::kLaneRules && P::kTable && P::kQuadPad && P::kPipe);
  constexpr bool kKeep = P::kKeepRules;
  extern __shared__ float shared[];
  float* sh_best = shared;  // BestOffset(substate pair) + g: BestFloats(G, max_bc) floats
  int* sh_left = reinterpret_cast<int*>(sh_best + BestFloats(G, max_bc));  // 2 x G x max_splits
  int* sh_right = sh_left + 2 * G * max_splits;                            // 2 x G x max_splits
  __shared__ int sh_count[2][G];
  __shared__ long long sh_target[2][G];
  __shared__ int sh_total[2];

  const TileBlock block = LoadTileBlock<G>(pairs, num_items, groups_per_block);
  const int pair = block.pair, group_end = block.group_end;  // named: the lambdas capture them
  const PairTile tile = block.tile;
  const unsigned magic_items = DivMagic(tile.band_items);
  const unsigned magic_quads = DivMagic(tile.quads);
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
  int cur = next_group(block.group_begin);
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

std::unique_ptr<BinaryPass> MakePairSegPass(const std::string& name) {
  return FindPairSegPass<false>(name);
}

}  // namespace cky::cuda::viterbi
