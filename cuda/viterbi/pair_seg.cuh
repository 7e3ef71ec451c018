// Kernel 9, pair-seg (CUDA types: include only from .cu files): its device policy, the helpers
// its single-group bodies (pair_seg.cu) and its multi-group body (pair_seg_multi.cu, the default's)
// share, its kernels, and its launch. Each .cu instantiates the kernels of its own variants
// (MakePairSegPass, MakePairSegMultiPass); the option letters are explained in pair_seg.cu.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cuda/common/device_helpers.cuh"
#include "cuda/viterbi/device_common.cuh"
#include "cuda/viterbi/launch.cuh"
#include "cuda/viterbi/pair_tiles.cuh"
#include "cuda/viterbi/variants.h"

namespace cky::cuda::viterbi {

// The fields of a variant's PairSegPolicy (variants.h) that the kernels read, as template
// arguments: variants that differ only on the host (-a, -u, the band limit) share one
// instantiation of each kernel.
template <int kGroup_, int kSplitUnroll_, bool kPad_, bool kAligned_, bool kMask_, int kMinBlocks_,
          bool kLaneRules_, bool kSplitPar_, bool kTable_, bool kQuadPad_, bool kPipe_,
          bool kKeepRules_, bool kMultiGroup_, bool kMin5_, bool kRowOffsets_,
          bool kPrefetchSplits_, bool kCpAsync_, bool kStageRules_, bool kGroupList_>
struct PairSegKernelPolicy {
  static constexpr int kGroup = kGroup_;
  static constexpr int kSplitUnroll = kSplitUnroll_;
  static constexpr bool kPad = kPad_, kAligned = kAligned_, kMask = kMask_;
  static constexpr int kMinBlocks = kMinBlocks_;
  static constexpr bool kLaneRules = kLaneRules_, kSplitPar = kSplitPar_, kTable = kTable_;
  static constexpr bool kQuadPad = kQuadPad_, kPipe = kPipe_, kKeepRules = kKeepRules_;
  static constexpr bool kMultiGroup = kMultiGroup_, kMin5 = kMin5_;
  static constexpr bool kRowOffsets = kRowOffsets_, kPrefetchSplits = kPrefetchSplits_;
  static constexpr bool kCpAsync = kCpAsync_, kStageRules = kStageRules_;
  static constexpr bool kGroupList = kGroupList_;
  // Any option beyond the split unroll, padding, aligned rows, masks and -oN.
  static constexpr bool kAnyOption = kLaneRules || kSplitPar || kTable || kQuadPad || kPipe ||
                                     kKeepRules || kMultiGroup || kMin5 || kRowOffsets ||
                                     kPrefetchSplits || kCpAsync || kStageRules || kGroupList;
};

template <typename V>
using PairSegKernelPolicyOf =
    PairSegKernelPolicy<V::kGroup, V::kSplitUnroll, V::kPad, V::kAligned, V::kMask, V::kMinBlocks,
                        V::kLaneRules, V::kSplitPar, V::kTable, V::kQuadPad, V::kPipe,
                        V::kKeepRules, V::kMultiGroup, V::kMin5, V::kRowOffsets, V::kPrefetchSplits,
                        V::kCpAsync, V::kStageRules, V::kGroupList>;

// What a -o variant runs on a batch whose aligned chart has 2^32 floats or more: the same without
// -o, -p, -c, -n (32-bit row offsets would overflow).
template <typename P>
using WithoutRowOffsets = PairSegKernelPolicy<P::kGroup, P::kSplitUnroll, P::kPad, P::kAligned,
                                              P::kMask, 0, P::kLaneRules, P::kSplitPar, P::kTable,
                                              P::kQuadPad, P::kPipe, P::kKeepRules, P::kMultiGroup,
                                              P::kMin5, false, false, false, P::kStageRules, false>;

constexpr int kMaxGroupsInFlight = 4;  // -g: most cell groups a block takes at once
constexpr int kRingSlots = 2;          // -c: split points in flight per thread

struct LaneArrays {
  const int4* units;            // per unit: parent state, first rule, end rule (in rules), 0
  const int* unit_begin;        // per tile: its units [unit_begin[t], unit_begin[t + 1])
  const int2* rules;            // per rule: BestOffset<8, true>(key), the log-prob's bits
  const unsigned* split_table;  // kTable: GroupMaskKernel's table of this span length
  int max_k;                    // kMultiGroup: most groups in flight (their split lists fit)
};

// n / d for 0 <= n < 2^16 and 1 <= d < 2^15 (exact there: checked for every n < 70,000 and
// d < 1,100), with magic = ceil(2^31 / d) from DivMagic: one multiply-high.
__device__ __forceinline__ unsigned DivMagic(unsigned d) { return ((1u << 31) + d - 1) / d; }
__device__ __forceinline__ int DivBy(int n, unsigned magic) {
  return int(__umulhi(unsigned(n) << 1, magic));
}
// QuadUnitOf by multiplications: magic_items, magic_quads = DivMagic(band_items), DivMagic(quads).
__device__ __forceinline__ QuadUnit QuadUnitByMagic(int unit, const PairTile& t,
                                                    unsigned magic_items, unsigned magic_quads) {
  const int g = DivBy(unit, magic_items), rem = unit - g * t.band_items;
  const int qb = DivBy(rem, magic_quads), qc = rem - qb * t.quads;
  return {g, qb * kQuad, qc * kQuad};
}

// Where the lane-rules phase reads a tile's units and rules: global memory (through the
// read-only cache, the rules with -k's eviction hint under kKeep) or shared memory (kStageRules).
// Unit(item, skipped) is the tile's unit item - skipped: global memory subtracts in the pointer
// arithmetic, shared memory in the index (each the addressing its kernels' registers are tuned
// with; one int index for both compiles to other instructions).
template <bool kKeep>
struct GlobalLaneRules {
  const int4* units;  // LaneArrays::units
  const int2* rules;  // LaneArrays::rules
  int unit_first;     // the tile's first unit
  __device__ __forceinline__ int4 Unit(int item, int skipped) const {
    return __ldg(units + unit_first + item - skipped);
  }
  __device__ __forceinline__ int2 Rule(int r) const {
    return kKeep ? LoadRuleKeep(rules + r) : __ldg(rules + r);
  }
};
// units[u]: the tile's unit u, its rules' indices relative to `rules`.
struct StagedLaneRules {
  const int4* units;
  const int2* rules;
  __device__ __forceinline__ int4 Unit(int item, int skipped) const {
    return units[item - skipped];
  }
  __device__ __forceinline__ int2 Rule(int r) const { return rules[r]; }
};

// The lane-rules phase (kLaneRules) with L lanes per unit, G / L cells per lane, over nk groups at
// once (kMultiGroup; else nk = 1): item = k x rule_units + unit, group k's maxima at sh_best +
// k x region, its target cells at sh_target[k G ..].
template <int G, int L, typename Source>
__device__ __forceinline__ void LaneRulesMulti(const Source& source, int rule_units, int items,
                                               const float* sh_best, int region,
                                               const long long* sh_target, float* pre) {
  constexpr int kCells = G / L;
  static_assert(kCells * L == G && (kCells == 1 || kCells == 2 || kCells % 4 == 0));
  const int part = threadIdx.x % L;
  for (int item = threadIdx.x / L; item < items; item += blockDim.x / L) {
    const int k = item / rule_units;
    const int4 unit = source.Unit(item, k * rule_units);
    const float* group_best = sh_best + k * region + part * kCells;
    float acc[kCells];
#pragma unroll
    for (int c = 0; c < kCells; ++c) acc[c] = kNegInfF;
#pragma unroll 4
    for (int r = unit.y; r < unit.z; ++r) {
      const int2 rule = source.Rule(r);
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

// LaneRulesMulti with L by the items' count: the fewest lanes per unit that still spread the
// items over the block (1 when there are more than blockDim.x / 2 of them, else 2, 4 or 8).
template <int G, typename Source>
__device__ __forceinline__ void LaneRulesAnyL(const Source& source, int rule_units, int items,
                                              const float* sh_best, int region,
                                              const long long* sh_target, float* pre) {
  if (items * 2 > int(blockDim.x))
    LaneRulesMulti<G, 1>(source, rule_units, items, sh_best, region, sh_target, pre);
  else if (items * 4 > int(blockDim.x))
    LaneRulesMulti<G, 2>(source, rule_units, items, sh_best, region, sh_target, pre);
  else if (items * 8 > int(blockDim.x))
    LaneRulesMulti<G, 4>(source, rule_units, items, sh_best, region, sh_target, pre);
  else
    LaneRulesMulti<G, 8>(source, rule_units, items, sh_best, region, sh_target, pre);
}

// The bodies of kernel 9, one parameter list (CKY_PAIR_SEG_PARAMS): PairSegBody and
// PairSegPipeBody in pair_seg.cu, PairSegMultiBody (-g) in pair_seg_multi.cu; each file
// instantiates the kernels of the variants whose body it has.
#define CKY_PAIR_SEG_PARAMS                                                                    \
  LevelArgs a, PairArrays pairs, const unsigned char *present, int num_symbols, int num_items, \
      int max_splits, int max_bc, int groups_per_block, const unsigned *left_mask,             \
      const unsigned *right_mask, int mask_words, LaneArrays lanes
#define CKY_PAIR_SEG_ARGS                                                                     \
  a, pairs, present, num_symbols, num_items, max_splits, max_bc, groups_per_block, left_mask, \
      right_mask, mask_words, lanes
template <typename P>
__device__ __forceinline__ void PairSegBody(CKY_PAIR_SEG_PARAMS);
template <typename P>
__device__ __forceinline__ void PairSegPipeBody(CKY_PAIR_SEG_PARAMS);
template <typename P>
__device__ __forceinline__ void PairSegMultiBody(CKY_PAIR_SEG_PARAMS);

// Policy P's body.
template <typename P>
__device__ __forceinline__ void PairSegAnyBody(CKY_PAIR_SEG_PARAMS) {
  if constexpr (P::kMultiGroup) {
    PairSegMultiBody<P>(CKY_PAIR_SEG_ARGS);
  } else if constexpr (P::kPipe) {
    PairSegPipeBody<P>(CKY_PAIR_SEG_ARGS);
  } else {
    PairSegBody<P>(CKY_PAIR_SEG_ARGS);
  }
}

template <typename P>
__global__ void __launch_bounds__(kThreads) PairSegKernel(CKY_PAIR_SEG_PARAMS) {
  static_assert(!P::kPipe);
  PairSegAnyBody<P>(CKY_PAIR_SEG_ARGS);
}

// -q and -5 variants: at least 5 blocks per SM, the ordinary variants' occupancy (48 registers;
// nvcc gives these 57-58 unbounded, i.e. 4 blocks).
template <typename P>
__global__ void __launch_bounds__(kThreads, 5) PairSegKernelQuad(CKY_PAIR_SEG_PARAMS) {
  static_assert(P::kMultiGroup || P::kPipe ||
                (P::kSplitUnroll == 1 && P::kPad && P::kAligned && P::kMask));
  PairSegAnyBody<P>(CKY_PAIR_SEG_ARGS);
}

// -p variants: at most 64 registers (4 blocks per SM, as the default's 61). (-l
// without -o took 68 registers unbounded, and spilled with this bound: it is not a variant.)
template <typename P>
__global__ void __launch_bounds__(kThreads, 4) PairSegKernelMin4(CKY_PAIR_SEG_PARAMS) {
  static_assert(P::kMultiGroup);
  PairSegAnyBody<P>(CKY_PAIR_SEG_ARGS);
}

// -oN: at least N = P::kMinBlocks blocks per SM: the compiler caps the registers to fit them
// (N = 6, 7, 8: 40, 36, 32 registers). A kernel of its own: nvcc 13 compiles
// __launch_bounds__(kThreads, 1) differently from __launch_bounds__(kThreads) (72 to 80
// registers instead of 48 for pair-seg-g8-a4-m, and 3 blocks per SM instead of 5).
template <typename P>
__global__ void __launch_bounds__(kThreads, P::kMinBlocks)
    PairSegKernelMinBlocks(CKY_PAIR_SEG_PARAMS) {
  static_assert(!P::kAnyOption);
  PairSegAnyBody<P>(CKY_PAIR_SEG_ARGS);
}

// Kernel 9's launch for one span length, with the kernel of policy P's launch bounds: -oN
// (PairSegKernelMinBlocks), -q or -5 (PairSegKernelQuad), -p (PairSegKernelMin4), else
// PairSegKernel.
template <typename P>
bool LaunchPairSeg(const SpanLaunch& s, const PairTiles& tiles, std::string* error) {
  static_assert(P::kMinBlocks == 0 || !P::kAnyOption);
  constexpr int G = P::kGroup;
  constexpr bool kMask = P::kMask;
  const LevelArgs& a = s.a;
  const int count = s.count;
  // -o: 32-bit row offsets need an aligned chart of fewer than 2^32 floats; a batch with a
  // larger one runs the kernel without -o, -p, -c, -n.
  if constexpr (P::kRowOffsets) {
    if (uint64_t(s.aligned_floats) >= (uint64_t(1) << 32))
      return LaunchPairSeg<WithoutRowOffsets<P>>(s, tiles, error);
  }
  const auto kernel = [] {
    if constexpr (P::kMinBlocks > 0) {
      return &PairSegKernelMinBlocks<P>;
    } else if constexpr (P::kQuadPad || P::kMin5) {
      return &PairSegKernelQuad<P>;
    } else if constexpr (P::kPrefetchSplits) {
      return &PairSegKernelMin4<P>;
    } else {
      return &PairSegKernel<P>;
    }
  }();
  const int max_splits = a.span - 1;
  const int groups = (count + G - 1) / G;
  const SizeClass& c = tiles.classes()[0];  // every tile, heaviest first
  // -w: double-buffered split lists; -g: max_k groups' lists, max_k the most (4, 2, 1) that keeps
  // the block within 44 KB (5 blocks per SM) or within the one-group size. -c: each thread's ring
  // of kRingSlots split points (two float4s each) after the lists, and 12 KB more in the budget
  // (4 blocks per SM, which the registers allow anyway).
  constexpr size_t kRingBytes =
      P::kCpAsync ? size_t(kRingSlots) * 2 * kThreads * sizeof(float4) : 0;
  const auto shared_for = [&](int lists) {
    return (size_t(BestFloats(G, c.max_bc)) + 2 * size_t(lists) * G * max_splits) * sizeof(float) +
           kRingBytes;
  };
  int max_k = 1;
  if constexpr (P::kMultiGroup) {
    const size_t budget = std::max<size_t>(shared_for(1), (P::kCpAsync ? 56 : 44) * 1024);
    for (int k : {kMaxGroupsInFlight, 2})
      if (shared_for(k) <= budget) {
        max_k = k;
        break;
      }
  }
  const size_t shared = shared_for(P::kPipe ? 2 : max_k);
  if (!AllowDynamicShared(kernel, shared, s.device.max_shared_optin, "pair-seg", error))
    return false;
  const PairArrays p = tiles.ArraysFor(c);
  const int num_tiles = static_cast<int>(c.pairs.size());
  const GroupGrid grid = GroupGridFor(groups, num_tiles, s.device.num_sms);
  const LaneArrays lanes{tiles.lane_units(), tiles.lane_unit_begin(), tiles.lane_rules(),
                         P::kTable ? s.split_table : nullptr, max_k};
  kernel<<<dim3(grid.launched_x, num_tiles), kThreads, shared, s.stream>>>(
      a, p, s.present, s.num_symbols, count, max_splits, c.max_bc, grid.per_block,
      kMask ? s.left_mask : nullptr, kMask ? s.right_mask : nullptr, s.mask_words, lanes);
  return true;
}

// The binary pass of variant V (a PairSegPolicy).
template <typename V>
std::unique_ptr<BinaryPass> NewPairSegPass() {
  // Every option extends pair-seg-g8-a4-m (aligned rows, masks, padding, bands of 1,024).
  static_assert(!PairSegKernelPolicyOf<V>::kAnyOption ||
                (V::kGroup == 8 && V::kAligned && V::kMask && V::kPad && V::kBandLimit == 1024 &&
                 V::kSplitUnroll == 1 && V::kMinBlocks == 0));
  static_assert(!V::kMask || V::kAligned);
  PassTraits traits;
  traits.aligned = V::kAligned;
  traits.mask_group = V::kMask ? V::kGroup : 0;
  traits.split_table = V::kTable;
  traits.unary_cells = V::kUnaryCells;
  TileOptions tiles;
  tiles.band_limit = V::kBandLimit;
  tiles.aligned = V::kAligned;
  tiles.quad_pad = V::kQuadPad;
  tiles.lane_rules = V::kLaneRules;
  tiles.adaptive_units = V::kAdaptiveUnits;
  return std::make_unique<TilePass>(traits, tiles, &LaunchPairSeg<PairSegKernelPolicyOf<V>>);
}

// The pass of variant `name` when it is a kernel 9 variant whose body is multi-group (kMulti) or
// not; else null.
template <bool kMulti>
std::unique_ptr<BinaryPass> FindPairSegPass(const std::string& name) {
  return FindFamilyPass<Family::kPairSeg>(name, [](auto policy) -> std::unique_ptr<BinaryPass> {
    using V = decltype(policy);
    if constexpr (V::kMultiGroup == kMulti) {
      return NewPairSegPass<V>();
    } else {
      return nullptr;
    }
  });
}

}  // namespace cky::cuda::viterbi
