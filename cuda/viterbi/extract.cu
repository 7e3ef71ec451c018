// Tree extraction on the device (ParseTrees): parser/tree_extraction.cpp's search, one block per
// sentence. Each node's candidates are tried in the CPU's order (binaries by split point, then
// rule; then unaries by rule), a block-wide chunk at a time; the first chunk with a match gives
// the smallest matching index, which is the CPU's choice. Scores are the CPU's doubles: the
// chart's floats widened, added in the same order (no multiply, so no contraction), the same
// relative-tolerance test. Anything the CPU would handle with more than that (a one-word phrasal
// node with no unary to a tag, no matching rule, the unary chain bound, full buffers) marks the
// sentence for the host. The chart is the exact pass's floats, or the pruned fine pass's doubles
// (ExtractArgs::chart_double).
#include <cuda_runtime.h>
#include <math_constants.h>

#include <climits>
#include <cstddef>

#include "cuda/viterbi/device_common.cuh"
#include "cuda/viterbi/extract.cuh"
#include "cuda/viterbi/viterbi.h"

namespace cky::cuda::viterbi {
namespace {

constexpr int kExtractThreads = 256;
constexpr int kExtractStack = 512;
constexpr int kExtractPerThread = 4;      // candidates per thread per chunk
constexpr int kMaxUnaryChainDevice = 64;  // tree_extraction.cpp's kMaxUnaryChain

__device__ __forceinline__ bool ScoresMatchDevice(double x, double y, double tolerance) {
  return __ddiv_rn(fabs(__dsub_rn(x, y)), __dadd_rn(__dadd_rn(fabs(x), fabs(y)), 1e-10)) <
         tolerance;
}

__device__ __forceinline__ int4 PackNode(int state, int start, int end, float score, int kind) {
  return make_int4(state, (start & 0xffff) | (end << 16), __float_as_int(score), kind);
}

__global__ void __launch_bounds__(kExtractThreads) ExtractTreesKernel(ExtractArgs a) {
  __shared__ int4 stack[kExtractStack];  // state, start, end, unary edges above
  __shared__ int top, count, to_host, found;
  __shared__ double warp_score[kExtractThreads / 32];
  __shared__ int warp_index[kExtractThreads / 32];
  const int sentence = blockIdx.x;
  const int n = a.sentence_length[sentence];
  const size_t base = a.sentence_base[sentence];
  const int capacity = a.node_offset[sentence + 1] - a.node_offset[sentence];
  int4* out = a.nodes + a.node_offset[sentence];
  const double neg_inf = -CUDART_INF;
  auto score_at = [&](int start, int end, int state) -> double {
    const size_t at = (base + ChartCellIndex(n, start, end)) * size_t(a.num_states) + state;
    return a.chart_double ? a.chart_double[at] : double(a.chart[at]);
  };
  if (!(score_at(0, n, 0) > neg_inf)) {
    if (threadIdx.x == 0) a.node_count[sentence] = -1;
    return;
  }
  if (threadIdx.x == 0) {
    top = 1, count = 0, to_host = 0;
    stack[0] = make_int4(0, 0, n, 0);
  }
  auto emit = [&](int state, int start, int end, double score, int kind) {  // thread 0
    if (count < capacity) {
      out[count++] = PackNode(state, start, end, float(score), kind);
    } else {
      to_host = 1;
    }
  };
  auto push = [&](int4 entry) {  // thread 0
    if (top < kExtractStack) {
      stack[top++] = entry;
    } else {
      to_host = 1;
    }
  };
  // The smallest index among the block's `hit`s (INT_MAX if none) into `found`.
  auto block_min = [&](int hit) {
    if (threadIdx.x == 0) found = INT_MAX;
    __syncthreads();
    if (hit != INT_MAX) atomicMin(&found, hit);
    __syncthreads();
  };
  for (;;) {
    __syncthreads();
    if (top == 0 || to_host) break;  // uniform: read after the barrier, written only below it
    const int4 cur = stack[top - 1];
    __syncthreads();
    if (threadIdx.x == 0) --top;
    const int state = cur.x, start = cur.y, end = cur.z, chain = cur.w;
    const double best = score_at(start, end, state);
    const bool phrasal = a.phrasal[a.state_symbol[state]];
    if (end - start == 1 && !phrasal) {
      if (threadIdx.x == 0) emit(state, start, end, best, DeviceTreeNode::kPreterminal);
      continue;
    }
    if (end - start == 1) {
      // The best unary down to a POS tag; ties go to the last rule.
      double mine = neg_inf;
      int mine_u = -1;
      const int ub = a.un_begin[state], ue = a.un_begin[state + 1];
      for (int u = ub + threadIdx.x; u < ue; u += blockDim.x) {
        const int child = a.un_child[u];
        if (a.phrasal[a.state_symbol[child]]) continue;
        const double score = __dadd_rn(score_at(start, end, child), a.un_w[u]);
        if (score >= mine && score > neg_inf) mine = score, mine_u = u;
      }
      for (int offset = 16; offset > 0; offset >>= 1) {
        const double other = __shfl_xor_sync(0xffffffffu, mine, offset);
        const int other_u = __shfl_xor_sync(0xffffffffu, mine_u, offset);
        if (other_u >= 0 && (mine_u < 0 || other > mine || (other == mine && other_u > mine_u)))
          mine = other, mine_u = other_u;
      }
      if (threadIdx.x % 32 == 0)
        warp_score[threadIdx.x / 32] = mine, warp_index[threadIdx.x / 32] = mine_u;
      __syncthreads();
      if (threadIdx.x == 0) {
        double b = neg_inf;
        int bu = -1;
        for (int w = 0; w < kExtractThreads / 32; ++w) {
          const int u = warp_index[w];
          if (u >= 0 && (bu < 0 || warp_score[w] > b || (warp_score[w] == b && u > bu)))
            b = warp_score[w], bu = u;
        }
        if (bu < 0) {
          to_host = 1;  // tree_extraction.cpp's OneWordWithoutTag reads the lexical scores
        } else {
          const int tag = a.un_child[bu];
          emit(state, start, end, best, DeviceTreeNode::kUnary);
          emit(tag, start, end, score_at(start, end, tag), DeviceTreeNode::kPreterminal);
        }
      }
      continue;
    }
    // Binaries: the first (split, rule) in the CPU's order whose score matches.
    const int rb = a.bin_begin[state], rules = a.bin_begin[state + 1] - rb;
    const int total = rules * (end - start - 1);
    int match = INT_MAX;
    for (int chunk = 0; chunk < total; chunk += kExtractThreads * kExtractPerThread) {
      int hit = INT_MAX;
      for (int q = 0; q < kExtractPerThread && hit == INT_MAX; ++q) {
        const int idx = chunk + q * kExtractThreads + threadIdx.x;
        if (idx >= total) break;
        const int split = start + 1 + idx / rules, r = rb + idx % rules;
        const double score = __dadd_rn(__dadd_rn(a.bin_w[r], score_at(start, split, a.bin_left[r])),
                                       score_at(split, end, a.bin_right[r]));
        if (score > neg_inf && ScoresMatchDevice(score, best, a.tolerance)) hit = idx;
      }
      if (__syncthreads_or(hit != INT_MAX)) {
        block_min(hit);
        match = found;
        break;
      }
    }
    if (match != INT_MAX) {
      if (threadIdx.x == 0) {
        const int split = start + 1 + match / rules, r = rb + match % rules;
        emit(state, start, end, best, DeviceTreeNode::kBinary);
        push(make_int4(a.bin_right[r], split, end, chain));
        push(make_int4(a.bin_left[r], start, split, chain));
      }
      continue;
    }
    // Unaries: the first rule whose score matches.
    const int ub = a.un_begin[state], ue = a.un_begin[state + 1];
    int unary = INT_MAX;
    for (int chunk = ub; chunk < ue; chunk += kExtractThreads) {
      const int u = chunk + threadIdx.x;
      int hit = INT_MAX;
      if (u < ue) {
        const double score = __dadd_rn(a.un_w[u], score_at(start, end, a.un_child[u]));
        if (score > neg_inf && ScoresMatchDevice(score, best, a.tolerance)) hit = u;
      }
      if (__syncthreads_or(hit != INT_MAX)) {
        block_min(hit);
        unary = found;
        break;
      }
    }
    if (threadIdx.x == 0) {
      if (unary == INT_MAX || chain + 1 > kMaxUnaryChainDevice) {
        to_host = 1;  // the host fails the same way
      } else {
        emit(state, start, end, best, DeviceTreeNode::kUnary);
        push(make_int4(a.un_child[unary], start, end, chain + 1));
      }
    }
  }
  if (threadIdx.x == 0) a.node_count[sentence] = to_host ? -2 : count;
}

}  // namespace

void PrepareExtractTrees() {
  cudaFuncAttributes attributes;
  cudaFuncGetAttributes(&attributes, ExtractTreesKernel);
}

void LaunchExtractTrees(const ExtractArgs& x, int num_sentences, cudaStream_t stream) {
  ExtractTreesKernel<<<num_sentences, kExtractThreads, 0, stream>>>(x);
}

}  // namespace cky::cuda::viterbi
