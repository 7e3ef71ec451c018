// Kernel 7, pair-fused (after Dunlop et al. 2011): per child-pair tile and group of G cells, the
// split maxima of every substate pair, then a warp per parent state of the tile adds the rules.
// Research variants (variants.h): kernel 9 refines it.
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "cuda/common/device_helpers.cuh"
#include "cuda/viterbi/device_common.cuh"
#include "cuda/viterbi/launch.cuh"
#include "cuda/viterbi/pair_tiles.cuh"
#include "cuda/viterbi/variants.h"

namespace cky::cuda::viterbi {
namespace {

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

  const auto [pair, tile, group_begin, group_end] =
      LoadTileBlock<G>(pairs, num_items, groups_per_block);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int pl_first = __ldg(pairs.pl_begin + pair), pl_end = __ldg(pairs.pl_begin + pair + 1);

  for (int group = group_begin; group < group_end; ++group) {
    const int first_item = group * G;
    if (!FusedSplitPhase<G>(a, tile, present, num_symbols, num_items, first_item, max_splits,
                            sh_left, sh_right, sh_count, &sh_total, sh_best))
      continue;
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

// One launch per span length over every tile, or one per size class.
template <int G>
bool LaunchPairFused(const SpanLaunch& s, const PairTiles& tiles, std::string* error) {
  const LevelArgs& a = s.a;
  const int count = s.count;
  const int max_splits = a.span - 1;
  const int groups = (count + G - 1) / G;
  for (const SizeClass& c : tiles.classes()) {
    if (c.pairs.empty()) continue;
    const size_t shared = (size_t(G) * c.max_bc + 2 * size_t(G) * max_splits) * sizeof(float);
    if (!AllowDynamicShared(PairFusedKernel<G>, shared, s.device.max_shared_optin, "pair-fused",
                            error))
      return false;
    const PairArrays p = tiles.ArraysFor(c);
    const int num_tiles = static_cast<int>(c.pairs.size());  // of the class
    const GroupGrid grid = GroupGridFor(groups, num_tiles, s.device.num_sms);
    PairFusedKernel<G><<<dim3(grid.launched_x, num_tiles), kThreads, shared, s.stream>>>(
        a, p, s.present, s.num_symbols, count, max_splits, c.max_bc, grid.per_block);
  }
  return true;
}

}  // namespace

std::unique_ptr<BinaryPass> MakePairFusedPass(const std::string& name) {
  return FindFamilyPass<Family::kPairFused>(name, [](auto policy) {
    using P = decltype(policy);
    TileOptions tiles;
    tiles.band_limit = P::kBandLimit;
    tiles.size_classes = P::kSizeClasses;
    return std::make_unique<TilePass>(PassTraits{}, tiles, &LaunchPairFused<P::kGroup>);
  });
}

}  // namespace cky::cuda::viterbi
