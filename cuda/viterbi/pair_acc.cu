// Kernel 8, pair-acc: kernel 7's computation with the grid's roles swapped (a block per cell
// group over a strided share of all tiles, its parents' maxima kept in shared memory across
// them). Research variants (variants.h).
#include <cuda_runtime.h>

#include <algorithm>
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
    if (!FusedSplitPhase<G>(a, tile, present, num_symbols, num_items, first_item, max_splits,
                            sh_left, sh_right, sh_count, &sh_total, sh_best))
      continue;
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

template <int G>
bool LaunchPairAcc(const SpanLaunch& s, const PairTiles& tiles, std::string* error) {
  const LevelArgs& a = s.a;
  const int count = s.count;
  const int max_splits = a.span - 1;
  const int groups = (count + G - 1) / G;
  const SizeClass& c = tiles.classes()[0];  // every tile, heaviest first
  const size_t shared =
      (size_t(G) * (a.num_states + c.max_bc) + 2 * size_t(G) * max_splits) * sizeof(float);
  if (!AllowDynamicShared(PairAccKernel<G>, shared, s.device.max_shared_optin, "pair-acc", error))
    return false;
  const PairArrays p = tiles.ArraysFor(c);
  // Tile chunks per cell group: enough blocks for about 4 waves, as few chunks as possible (each
  // chunk flushes its own maxima).
  const int num_tiles = static_cast<int>(c.pairs.size());
  const int chunks =
      std::max(1, std::min({num_tiles, 256, (s.device.num_sms * 16 + groups - 1) / groups}));
  PairAccKernel<G><<<dim3(groups, chunks), kThreads, shared, s.stream>>>(
      a, p, s.present, s.num_symbols, count, max_splits, c.max_bc, num_tiles);
  return true;
}

}  // namespace

std::unique_ptr<BinaryPass> MakePairAccPass(const std::string& name) {
  return FindFamilyPass<Family::kPairAcc>(name, [](auto policy) {
    using P = decltype(policy);
    TileOptions tiles;
    tiles.band_limit = P::kBandLimit;
    return std::make_unique<TilePass>(PassTraits{}, tiles, &LaunchPairAcc<P::kGroup>);
  });
}

}  // namespace cky::cuda::viterbi
