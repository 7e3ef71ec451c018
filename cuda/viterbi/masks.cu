// Presence masks per cell group (kernel 9's -m, -t) and the presence statistics of
// DeviceViterbi::SetPresenceStats.
#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/viterbi/device_common.cuh"
#include "cuda/viterbi/launch.cuh"

namespace cky::cuda::viterbi {
namespace {

// Presence masks per cell group (viterbi.h): for the group of G cells starting at item
// group * G of a span length, bit B of left[group][B / 32] is set when symbol B is present in the
// left child cell of some split point of some cell of the group, and likewise right[] for the
// right child cells. Kernel 9 (-m) skips a (tile, group) whose B or C bit is clear: no split
// point of any of its cells can have both children (exact). grid = groups, block = 256.
// split_table (kernel 9 with -t; else null): per item of the span length and split point k,
// a row of SplitTableStride(words) ints: the left cell's presence bits (words), the right cell's
// (words), the left cell, the right cell; GatherSplitsTable reads it with loads that depend on
// nothing but (item, k), instead of the item, then its cells' presence bytes.
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

}  // namespace

void LaunchGroupMasks(const LevelArgs& a, int groups, const unsigned char* present, int num_symbols,
                      int num_items, int group_size, int words, unsigned* left_mask,
                      unsigned* right_mask, unsigned* split_table, cudaStream_t stream) {
  GroupMaskKernel<<<groups, 256, 2 * words * sizeof(unsigned), stream>>>(
      a, present, num_symbols, num_items, group_size, words, left_mask, right_mask, split_table);
}

void LaunchPresenceStats(const LevelArgs& a, int count, const unsigned char* present,
                         int num_symbols, unsigned long long* count_out, cudaStream_t stream) {
  PresenceStatsKernel<<<count, 128, 0, stream>>>(a, present, num_symbols, count_out);
}

void LaunchSkipStats(const int2* symbols, int tiles, int groups, const unsigned* left_mask,
                     const unsigned* right_mask, int words, unsigned long long* skipped,
                     cudaStream_t stream) {
  SkipStatsKernel<<<256, 256, 0, stream>>>(symbols, tiles, groups, left_mask, right_mask, words,
                                           skipped);
}

}  // namespace cky::cuda::viterbi
