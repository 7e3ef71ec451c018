// Kernel 9 with -g, the production path: PairSegMultiBody, the body of the default
// (pair-seg-g8-a4-m-rtgakuopln) and of the other -g variants (MakePairSegMultiPass), with the
// split loops of -o, -p and -c and the staged rule phase of -l. pair_seg.cu says what each option
// does.
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "cuda/viterbi/device_common.cuh"
#include "cuda/viterbi/pair_seg.cuh"
#include "cuda/viterbi/pair_tiles.cuh"

namespace cky::cuda::viterbi {

// The split loops of kRowOffsets (-o): float4 rows at base + a 32-bit offset (aligned chart).
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
template <typename P>
__device__ __forceinline__ void PairSegMultiBody(CKY_PAIR_SEG_PARAMS) {
  constexpr int G = P::kGroup;
  const int max_k = lanes.max_k;
  static_assert(G == 8 && P::kLaneRules && P::kTable && P::kMultiGroup &&
                !(P::kSplitPar || P::kQuadPad || P::kPipe));
  constexpr bool kKeep = P::kKeepRules;
  constexpr bool kOffsets = P::kRowOffsets;
  constexpr bool kPrefetch = P::kPrefetchSplits;
  constexpr bool kRing = P::kCpAsync;
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
  constexpr bool kList = P::kGroupList;
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
  if constexpr (P::kStageRules) {
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
      const auto [c, b0, c0] = QuadUnitByMagic(e, tile, magic_items, magic_quads);
      float best[kQuad][kQuad];
      InitBest(best);
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
      StoreBest<G, true>(best, tile, b0, c0, c % G, sh_best + (c / G) * region);
    }
    __syncthreads();
    // Rule phase: nk x rule_units items, L lanes each (LaneRules' choice of L on the total).
    const int items = nk * rule_units;
    if constexpr (P::kStageRules) {
      if (staged) {
        LaneRulesAnyL<G>(StagedLaneRules{sh_units, sh_rules}, rule_units, items, sh_best, region,
                         sh_target, a.pre);
        continue;
      }
    }
    LaneRulesAnyL<G>(GlobalLaneRules<kKeep>{lanes.units, lanes.rules, unit_first}, rule_units,
                     items, sh_best, region, sh_target, a.pre);
  }
}

std::unique_ptr<BinaryPass> MakePairSegMultiPass(const std::string& name) {
  return FindPairSegPass<true>(name);
}

}  // namespace cky::cuda::viterbi
