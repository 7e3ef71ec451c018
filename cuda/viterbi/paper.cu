// Kernels 1-6: Yi et al. (2011)'s design space for the binary pass, one rule per thread: thread-
// and block-based rule mappings, global and shared-memory atomics, tree reductions, virtual
// parents, spans in parallel or in sequence, child scores staged in shared memory. Research
// variants (variants.h), slow next to kernels 7-9.
//
// Virtual parents: the block variants cut a parent with more rules than a block (kThreads) into
// pieces of kThreads rules, one block each, merged by the global atomic max.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cuda/common/device_helpers.cuh"
#include "cuda/viterbi/device_common.cuh"
#include "cuda/viterbi/launch.cuh"
#include "cuda/viterbi/variants.h"

namespace cky::cuda::viterbi {
namespace {

// Best over split points of (rule + left) + right, the reference's order of additions.
__device__ __forceinline__ float RuleOverSplits(const LevelArgs& a, const CellItem& it, int left,
                                                int right, float w) {
  const int end = it.start + a.span;
  float best = kNegInfF;
  for (int k = it.start + 1; k < end; ++k) {
    const size_t lc = size_t(it.base) + ChartCellIndex(it.n, it.start, k);
    const size_t rc = size_t(it.base) + ChartCellIndex(it.n, k, end);
    best =
        fmaxf(best, (w + a.chart[lc * a.num_states + left]) + a.chart[rc * a.num_states + right]);
  }
  return best;
}

struct RuleArrays {
  const int* parent;
  const int* left;
  const int* right;
  const float* w;
  int count;
};

// ---------------------------------------------------------------------------------------------
// Kernel 1: thread-based mapping, global atomics. grid = (cells, rule chunks).
__global__ void ThreadAtomicGlobalKernel(LevelArgs a, RuleArrays rules) {
  const int r = blockIdx.y * blockDim.x + threadIdx.x;
  if (r >= rules.count) return;
  const CellItem it = a.items[a.item_offset + blockIdx.x];
  const float best =
      RuleOverSplits(a, it, __ldg(rules.left + r), __ldg(rules.right + r), __ldg(rules.w + r));
  if (best > kNegInfF)
    AtomicMaxFloat(a.pre + TargetCell(a, it) * a.num_states + __ldg(rules.parent + r), best);
}

// Kernel 2: thread-based mapping, shared atomics over the chunk's parent range, then one global
// atomic per parent. grid = (cells, rule chunks); dynamic shared = the widest parent range.
__global__ void ThreadAtomicSharedKernel(LevelArgs a, RuleArrays rules,
                                         const int* __restrict__ chunk_first_parent,
                                         const int* __restrict__ chunk_parent_count) {
  extern __shared__ float sh_pre[];
  const int first = chunk_first_parent[blockIdx.y];
  const int count = chunk_parent_count[blockIdx.y];
  for (int i = threadIdx.x; i < count; i += blockDim.x) sh_pre[i] = kNegInfF;
  __syncthreads();
  const CellItem it = a.items[a.item_offset + blockIdx.x];
  const int r = blockIdx.y * blockDim.x + threadIdx.x;
  if (r < rules.count) {
    const float best =
        RuleOverSplits(a, it, __ldg(rules.left + r), __ldg(rules.right + r), __ldg(rules.w + r));
    if (best > kNegInfF) AtomicMaxFloat(sh_pre + (__ldg(rules.parent + r) - first), best);
  }
  __syncthreads();
  float* pre = a.pre + TargetCell(a, it) * a.num_states + first;
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    if (sh_pre[i] > kNegInfF) AtomicMaxFloat(pre + i, sh_pre[i]);
}

struct VirtualParents {
  const int* parent;
  const int* begin;
  const int* end;  // end - begin <= kThreads
};

// Kernel 3: block-based mapping (one block per virtual parent), shared atomic max.
__global__ void BlockAtomicSharedKernel(LevelArgs a, RuleArrays rules, VirtualParents vp) {
  __shared__ float sh_best;
  if (threadIdx.x == 0) sh_best = kNegInfF;
  __syncthreads();
  const CellItem it = a.items[a.item_offset + blockIdx.x];
  const int r = __ldg(vp.begin + blockIdx.y) + threadIdx.x;
  if (r < __ldg(vp.end + blockIdx.y)) {
    const float best =
        RuleOverSplits(a, it, __ldg(rules.left + r), __ldg(rules.right + r), __ldg(rules.w + r));
    if (best > kNegInfF) AtomicMaxFloat(&sh_best, best);
  }
  __syncthreads();
  // Virtual parents of one parent merge here.
  if (threadIdx.x == 0 && sh_best > kNegInfF)
    AtomicMaxFloat(a.pre + TargetCell(a, it) * a.num_states + __ldg(vp.parent + blockIdx.y),
                   sh_best);
}

// Tree-shaped max over the block (blockDim.x == kThreads) into sh[0].
__device__ __forceinline__ void BlockTreeMax(float* sh) {
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + stride]);
    __syncthreads();
  }
}

// Kernel 4: block-based mapping, tree-shaped parallel reduction. Kernel 6 (block-reduce-seq) is
// this kernel with spans in sequence: PaperPass::Launch launches it once per start position.
__global__ void BlockReduceKernel(LevelArgs a, RuleArrays rules, VirtualParents vp) {
  __shared__ float sh[kThreads];
  const CellItem it = a.items[a.item_offset + blockIdx.x];
  const int r = __ldg(vp.begin + blockIdx.y) + threadIdx.x;
  float best = kNegInfF;
  if (r < __ldg(vp.end + blockIdx.y))
    best = RuleOverSplits(a, it, __ldg(rules.left + r), __ldg(rules.right + r), __ldg(rules.w + r));
  sh[threadIdx.x] = best;
  __syncthreads();
  BlockTreeMax(sh);
  if (threadIdx.x == 0 && sh[0] > kNegInfF)
    AtomicMaxFloat(a.pre + TargetCell(a, it) * a.num_states + __ldg(vp.parent + blockIdx.y), sh[0]);
}

// Kernel 5: block-reduce with each split's two child cells staged in shared memory
// (sh_scores_L, sh_scores_R). Dynamic shared: 2 * num_states floats.
__global__ void BlockReduceStagedKernel(LevelArgs a, RuleArrays rules, VirtualParents vp) {
  extern __shared__ float sh_scores[];
  float* sh_scores_L = sh_scores;
  float* sh_scores_R = sh_scores + a.num_states;
  __shared__ float sh[kThreads];
  const CellItem it = a.items[a.item_offset + blockIdx.x];
  const int r = __ldg(vp.begin + blockIdx.y) + threadIdx.x;
  const bool has_rule = r < __ldg(vp.end + blockIdx.y);
  int left = 0, right = 0;
  float w = kNegInfF;
  if (has_rule) {
    left = __ldg(rules.left + r);
    right = __ldg(rules.right + r);
    w = __ldg(rules.w + r);
  }
  const int end = it.start + a.span;
  float best = kNegInfF;
  for (int k = it.start + 1; k < end; ++k) {
    const float* lc =
        a.chart + (size_t(it.base) + ChartCellIndex(it.n, it.start, k)) * a.num_states;
    const float* rc = a.chart + (size_t(it.base) + ChartCellIndex(it.n, k, end)) * a.num_states;
    __syncthreads();
    for (int s = threadIdx.x; s < a.num_states; s += blockDim.x) {
      sh_scores_L[s] = lc[s];
      sh_scores_R[s] = rc[s];
    }
    __syncthreads();
    if (has_rule) best = fmaxf(best, (w + sh_scores_L[left]) + sh_scores_R[right]);
  }
  sh[threadIdx.x] = best;
  __syncthreads();
  BlockTreeMax(sh);
  if (threadIdx.x == 0 && sh[0] > kNegInfF)
    AtomicMaxFloat(a.pre + TargetCell(a, it) * a.num_states + __ldg(vp.parent + blockIdx.y), sh[0]);
}

// The binary pass of kernels 1-6: the rules as flat arrays, their chunks of kThreads (thread
// mappings) with the parent range of each, and the virtual parents (block mappings).
class PaperPass : public BinaryPass {
 public:
  explicit PaperPass(PaperMapping mapping) : mapping_(mapping) {}

  PassTraits traits() const override { return {}; }

  bool Init(const GrammarView& g, const std::vector<float>& w, const std::vector<int>&,
            const DeviceLimits& device, std::string* error) override {
    num_states_ = g.num_states;
    num_rules_ = static_cast<int>(g.num_binary);
    auto ints = [](const int32_t* p, int64_t n) { return std::vector<int>(p, p + n); };
    bool ok = parent_.Upload(ints(g.binary_parent, g.num_binary)) &&
              left_.Upload(ints(g.binary_left, g.num_binary)) &&
              right_.Upload(ints(g.binary_right, g.num_binary)) && rule_w_.Upload(w);
    // Rule chunks of kThreads (thread mapping) and their parent ranges.
    const int chunks = (num_rules_ + kThreads - 1) / kThreads;
    std::vector<int> first(chunks), span(chunks);
    for (int c = 0; c < chunks; ++c) {
      const int lo = c * kThreads, hi = std::min(num_rules_, lo + kThreads) - 1;
      first[c] = g.binary_parent[lo];
      span[c] = g.binary_parent[hi] - g.binary_parent[lo] + 1;
      max_chunk_parents_ = std::max(max_chunk_parents_, span[c]);
    }
    num_chunks_ = chunks;
    ok = ok && chunk_first_.Upload(first) && chunk_count_.Upload(span);
    // Virtual parents: a parent's rules cut into pieces of at most kThreads.
    std::vector<int> vp_parent, vp_begin, vp_end;
    for (int p = 0; p < num_states_; ++p) {
      for (int lo = g.binary_parent_begin[p]; lo < g.binary_parent_begin[p + 1]; lo += kThreads) {
        vp_parent.push_back(p);
        vp_begin.push_back(lo);
        vp_end.push_back(std::min(lo + kThreads, g.binary_parent_begin[p + 1]));
      }
    }
    num_virtual_ = static_cast<int>(vp_parent.size());
    ok = ok && vp_parent_.Upload(vp_parent) && vp_begin_.Upload(vp_begin) && vp_end_.Upload(vp_end);
    if (num_chunks_ > 65535 || num_virtual_ > 65535) {
      *error = "grammar too large for the paper kernels' grid (use pair-fused)";
      return false;
    }
    if (mapping_ == PaperMapping::kBlockReduceStaged &&
        2 * size_t(num_states_) * sizeof(float) > size_t(device.max_shared_optin)) {
      *error = "too many states to stage two cells in shared memory";
      return false;
    }
    return ok;
  }

  bool Launch(const SpanLaunch& s, std::string* error) override {
    const LevelArgs& a = s.a;
    const int count = s.count;
    const cudaStream_t stream = s.stream;
    RuleArrays rules{parent_.get(), left_.get(), right_.get(), rule_w_.get(), num_rules_};
    VirtualParents vp{vp_parent_.get(), vp_begin_.get(), vp_end_.get()};
    switch (mapping_) {
      case PaperMapping::kThreadAtomicGlobal:
        ThreadAtomicGlobalKernel<<<dim3(count, num_chunks_), kThreads, 0, stream>>>(a, rules);
        break;
      case PaperMapping::kThreadAtomicShared:
        if (!AllowDynamicShared(ThreadAtomicSharedKernel, max_chunk_parents_ * sizeof(float),
                                s.device.max_shared_optin, "thread-atomic-shared", error))
          return false;
        ThreadAtomicSharedKernel<<<dim3(count, num_chunks_), kThreads,
                                   max_chunk_parents_ * sizeof(float), stream>>>(
            a, rules, chunk_first_.get(), chunk_count_.get());
        break;
      case PaperMapping::kBlockAtomicShared:
        BlockAtomicSharedKernel<<<dim3(count, num_virtual_), kThreads, 0, stream>>>(a, rules, vp);
        break;
      case PaperMapping::kBlockReduce:
        BlockReduceKernel<<<dim3(count, num_virtual_), kThreads, 0, stream>>>(a, rules, vp);
        break;
      case PaperMapping::kBlockReduceStaged: {
        const size_t shared = 2 * size_t(num_states_) * sizeof(float);
        if (!AllowDynamicShared(BlockReduceStagedKernel, shared, s.device.max_shared_optin,
                                "block-reduce-staged", error))
          return false;
        BlockReduceStagedKernel<<<dim3(count, num_virtual_), kThreads, shared, stream>>>(a, rules,
                                                                                         vp);
        break;
      }
      case PaperMapping::kBlockReduceSeq: {
        const std::vector<int>& starts = *s.starts;
        for (size_t i = 0; i + 1 < starts.size(); ++i) {
          const int n = starts[i + 1] - starts[i];
          if (n == 0) continue;
          LevelArgs one = a;
          one.item_offset = starts[i];
          BlockReduceKernel<<<dim3(n, num_virtual_), kThreads, 0, stream>>>(one, rules, vp);
        }
        break;
      }
    }
    return true;
  }

 private:
  PaperMapping mapping_;
  int num_states_ = 0, num_rules_ = 0;
  DeviceArray<int> parent_, left_, right_;
  DeviceArray<float> rule_w_;
  DeviceArray<int> chunk_first_, chunk_count_, vp_parent_, vp_begin_, vp_end_;
  int num_chunks_ = 0, max_chunk_parents_ = 1, num_virtual_ = 0;
};

}  // namespace

std::unique_ptr<BinaryPass> MakePaperPass(const std::string& name) {
  return FindFamilyPass<Family::kPaper>(
      name, [](auto policy) { return std::make_unique<PaperPass>(decltype(policy)::kMapping); });
}

}  // namespace cky::cuda::viterbi
