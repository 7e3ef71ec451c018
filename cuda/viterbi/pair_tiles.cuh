// What kernels 7-9 (pair_fused.cu, pair_acc.cu, pair_seg*.cu) share (CUDA types: include only
// from .cu files): the tiles of child pairs, built once on the host (PairTiles), their device
// view, the device helpers of the split and rule phases, and the binary pass that holds the tiles
// and launches a family's kernel (TilePass).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "cuda/common/device_helpers.cuh"
#include "cuda/viterbi/device_common.cuh"
#include "cuda/viterbi/launch.cuh"

namespace cky::cuda::viterbi {

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

// Kernels 7 and 9: the block's tile (blockIdx.y of the launch's size class) and its run of cell
// groups [group_begin, group_end) (blockIdx.x's groups_per_block groups of G cells).
struct TileBlock {
  int pair;
  PairTile tile;
  int group_begin, group_end;
};
template <int G>
__device__ __forceinline__ TileBlock LoadTileBlock(const PairArrays& pairs, int num_items,
                                                   int groups_per_block) {
  const int pair = __ldg(pairs.class_pairs + blockIdx.y);
  const PairTile tile = LoadPairTile(pairs, pair);
  const int num_groups = (num_items + G - 1) / G;
  const int group_end = min(num_groups, int(blockIdx.x + 1) * groups_per_block);
  return {pair, tile, int(blockIdx.x) * groups_per_block, group_end};
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

// A thread's 4 x 4 block of split maxima before the first split point.
__device__ __forceinline__ void InitBest(float (&best)[kQuad][kQuad]) {
#pragma unroll
  for (int i = 0; i < kQuad; ++i)
#pragma unroll
    for (int j = 0; j < kQuad; ++j) best[i][j] = kNegInfF;
}

// One split point's max-plus update of a 4 x 4 block from 4 scores of each child row:
// best[i][j] = max(best[i][j], l[i] + r[j]).
__device__ __forceinline__ void MaxPlusQuads(const float (&l)[kQuad], const float (&r)[kQuad],
                                             float (&best)[kQuad][kQuad]) {
#pragma unroll
  for (int i = 0; i < kQuad; ++i)
#pragma unroll
    for (int j = 0; j < kQuad; ++j) best[i][j] = fmaxf(best[i][j], l[i] + r[j]);
}
__device__ __forceinline__ void MaxPlusRows(float4 lv, float4 rv, float (&best)[kQuad][kQuad]) {
  const float l[kQuad] = {lv.x, lv.y, lv.z, lv.w}, r[kQuad] = {rv.x, rv.y, rv.z, rv.w};
  MaxPlusQuads(l, r, best);
}

// Stores a thread's 4 x 4 block (b0.., c0..) of cell g at sh_best[BestOffset<G, kPad>(b x s_c + c)
// + g], the substate pairs inside the tile's band only.
template <int G, bool kPad>
__device__ __forceinline__ void StoreBest(const float (&best)[kQuad][kQuad], const PairTile& t,
                                          int b0, int c0, int g, float* sh_best) {
#pragma unroll
  for (int i = 0; i < kQuad; ++i)
#pragma unroll
    for (int j = 0; j < kQuad; ++j)
      if (b0 + i < t.info.y && c0 + j < t.s_c)
        sh_best[BestOffset<G, kPad>((b0 + i) * t.s_c + c0 + j) + g] = best[i][j];
}

// A unit of the split phase: cell g of the group and the 4 x 4 block (b0.., c0..) of the band.
struct QuadUnit {
  int g, b0, c0;
};
__device__ __forceinline__ QuadUnit QuadUnitOf(int unit, const PairTile& t) {
  const int g = unit / t.band_items, rem = unit % t.band_items;
  return {g, (rem / t.quads) * kQuad, (rem % t.quads) * kQuad};
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

// 4 scores of an aligned row (a multiple of 4 floats) through the read-only cache, evict-first
// with kOnce.
template <bool kOnce>
__device__ __forceinline__ float4 LoadRow(const float* p) {
  return kOnce ? LoadRowOnce(p) : __ldg(reinterpret_cast<const float4*>(p));
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
    const float4 lv = LoadRow<kOnce>(lrow + b0);
    const float4 rv = LoadRow<kOnce>(rrow + c0);
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
  MaxPlusQuads(l, r, best);
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
    const auto [g, b0, c0] = QuadUnitOf(e, t);
    float best[kQuad][kQuad];
    InitBest(best);
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
          MaxPlusQuads(l, r, best);
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
    StoreBest<G, kPad>(best, t, b0, c0, g, sh_best);
  }
  __syncthreads();
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

// The split phase of kernels 7 and 8 for one tile and the group of G cells at first_item: after
// a barrier (the previous tile or group is done with shared memory), the counts are reset and the
// usable split points gathered (GatherSplits); when there are any (the same answer for every
// thread), their maxima go to sh_best (SplitMaxima) and it returns true.
template <int G>
__device__ __forceinline__ bool FusedSplitPhase(const LevelArgs& a, const PairTile& tile,
                                                const unsigned char* present, int num_symbols,
                                                int num_items, int first_item, int max_splits,
                                                int* sh_left, int* sh_right, int* sh_count,
                                                int* sh_total, float* sh_best) {
  __syncthreads();
  if (threadIdx.x < G) sh_count[threadIdx.x] = 0;
  if (threadIdx.x == 0) *sh_total = 0;
  __syncthreads();
  GatherSplits<G>(a, tile.sym, present, num_symbols, num_items, first_item, max_splits, sh_left,
                  sh_right, sh_count, sh_total);
  if (*sh_total == 0) return false;
  SplitMaxima<G, 0, false, false, false>(a, tile, sh_left, sh_right, sh_count, max_splits, sh_best);
  return true;
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
    RuleIntoCells<G>(acc, w, sh_best + key * G);
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

// ---------------------------------------------------------------------------------------------
// Host side

constexpr int kUnitRules = 32;  // most rules of one lane-rules unit (kernel 9's -r)

// The launch grid of kernels 7 and 9: x = blocks of `per_block` cell groups (about 8 waves of
// blocks in all), y = the tiles.
struct GroupGrid {
  int launched_x;
  int per_block;
};
inline GroupGrid GroupGridFor(int groups, int tiles, int num_sms) {
  const int blocks_x = std::max(1, std::min(groups, (num_sms * 64 + tiles - 1) / tiles));
  const int per_block = (groups + blocks_x - 1) / blocks_x;
  return {(groups + per_block - 1) / per_block, per_block};
}

// The tiles of one launch: every tile, heaviest first, or those of one size class.
struct SizeClass {
  std::vector<int> pairs;
  int max_bc = 0;
  DeviceArray<int> device_pairs;
};

// How the tiles are cut and laid out (from the variant's policy).
struct TileOptions {
  int band_limit = 512;         // most substate pairs in a tile
  bool size_classes = false;    // one launch per tile size class (pair-fused-g8-classes)
  bool aligned = false;         // -a4: bands start at aligned rows, info.x/z are aligned positions
  bool quad_pad = false;        // -q: keys b x s_c4 + c (s_c rounded up to 4)
  bool lane_rules = false;      // -r: the rule units and packed rules of LaneArrays
  bool adaptive_units = false;  // -a: units of at most ceil(rules / 192) rules (4 to 32)
};

// The grammar's binary rules as tiles of child pairs, on the device.
class PairTiles {
 public:
  // Groups the rules by base child pair (symbol of left, symbol of right), cut into bands of B's
  // substates of at most options.band_limit substate pairs, then by parent, then key.
  // aligned_first: per symbol, its first position in an aligned row (options.aligned only).
  bool Build(const GrammarView& g, const std::vector<float>& w, const TileOptions& options,
             const std::vector<int>& aligned_first, std::string* error);

  PairArrays ArraysFor(const SizeClass& c) const {
    return {pair_info_.get(),     pair_symbols_.get(), pair_pl_begin_.get(), pl_parent_.get(),
            pl_rule_begin_.get(), key_.get(),          key_w_.get(),         c.device_pairs.get()};
  }
  // classes()[0] holds every tile (heaviest first) unless the tiles are cut into size classes.
  const std::array<SizeClass, 4>& classes() const { return classes_; }
  const int2* symbols() const { return pair_symbols_.get(); }
  // -r: per unit (parent state, first rule, end rule, 0), per tile its units, per rule its
  // BestOffset<8, true>(key) and log-prob bits.
  const int4* lane_units() const { return lane_units_.get(); }
  const int* lane_unit_begin() const { return lane_unit_begin_.get(); }
  const int2* lane_rules() const { return lane_rules_.get(); }

 private:
  std::array<SizeClass, 4> classes_;
  DeviceArray<int4> pair_info_;
  DeviceArray<int2> pair_symbols_;
  DeviceArray<int> pair_pl_begin_, pl_parent_, pl_rule_begin_, key_;
  DeviceArray<float> key_w_;
  DeviceArray<int4> lane_units_;
  DeviceArray<int> lane_unit_begin_;
  DeviceArray<int2> lane_rules_;
};

// The binary pass of kernels 7-9: the tiles, and the family's launch for the variant's policy.
class TilePass : public BinaryPass {
 public:
  using LaunchFn = bool (*)(const SpanLaunch& s, const PairTiles& tiles, std::string* error);
  TilePass(const PassTraits& traits, const TileOptions& options, LaunchFn launch)
      : traits_(traits), options_(options), launch_(launch) {}

  PassTraits traits() const override { return traits_; }
  bool Init(const GrammarView& g, const std::vector<float>& w,
            const std::vector<int>& aligned_first, const DeviceLimits&,
            std::string* error) override {
    return tiles_.Build(g, w, options_, aligned_first, error);
  }
  bool Launch(const SpanLaunch& s, std::string* error) override {
    return launch_(s, tiles_, error);
  }
  const int2* tile_symbols() const override { return tiles_.symbols(); }
  int num_tiles() const override { return static_cast<int>(tiles_.classes()[0].pairs.size()); }

 private:
  PassTraits traits_;
  TileOptions options_;
  LaunchFn launch_;
  PairTiles tiles_;
};

}  // namespace cky::cuda::viterbi
