// Kim et al.'s single-string GPU CYK: public API (CykMembershipGpu), dispatch (rule order and
// padding per mapping, launch shapes), then the kernels.
#include <cuda_runtime.h>

#include <algorithm>
#include <numeric>

#include "cuda/common/device.h"
#include "cuda/common/device_helpers.cuh"
#include "cuda/membership/cyk_membership.h"

namespace cky::cuda {
namespace {

constexpr int kWarp = 32;

__device__ __forceinline__ uint8_t* ChartCell(uint8_t* chart, int n, int num_symbols, int i,
                                              int j) {
  return chart + (static_cast<size_t>(i) * (n + 1) + j) * num_symbols;
}

// Adds the chain rules A ->+ C to a cell in place. Every thread reads values set before the last
// barrier; a value set concurrently by another thread is implied by transitivity, so nothing is
// missed and nothing wrong is added.
__device__ void CloseCell(uint8_t* symbols, const int* unary_parent, const int* unary_child,
                          int num_unary) {
  for (int u = threadIdx.x; u < num_unary; u += blockDim.x) {
    if (symbols[unary_child[u]]) symbols[unary_parent[u]] = 1;
  }
}

__global__ void LeafKernel(uint8_t* chart, int n, int num_symbols, const int* tokens,
                           const int* terminal_offsets, const int* terminal_parents,
                           const int* unary_parent, const int* unary_child, int num_unary) {
  const int i = blockIdx.x;
  uint8_t* cell = ChartCell(chart, n, num_symbols, i, i + 1);
  const int t = tokens[i];
  for (int p = terminal_offsets[t] + threadIdx.x; p < terminal_offsets[t + 1]; p += blockDim.x) {
    cell[terminal_parents[p]] = 1;
  }
  __syncthreads();
  CloseCell(cell, unary_parent, unary_child, num_unary);
}

// One block per cell (i, i + length). kShared: build the variable set in shared memory;
// kWarpVote (LVS+D): every warp holds rules of one left-hand side, so one vote per warp.
template <bool kShared, bool kWarpVote>
__global__ void SpanKernel(uint8_t* chart, int n, int length, int num_symbols,
                           const int* __restrict__ rule_parent, const int* __restrict__ rule_left,
                           const int* __restrict__ rule_right, int num_rules,
                           const int* unary_parent, const int* unary_child, int num_unary) {
  extern __shared__ uint8_t shared_symbols[];
  const int i = blockIdx.x;
  const int j = i + length;
  uint8_t* target = ChartCell(chart, n, num_symbols, i, j);
  uint8_t* symbols = kShared ? shared_symbols : target;
  if (kShared) {
    for (int a = threadIdx.x; a < num_symbols; a += blockDim.x) symbols[a] = 0;
    __syncthreads();
  }
  for (int base = 0; base < num_rules; base += blockDim.x) {
    const int r = base + threadIdx.x;
    bool found = false;
    int parent = -1;
    if (r < num_rules) {
      parent = rule_parent[r];
      if (parent >= 0) {  // dummy rules have parent -1
        const int left = rule_left[r];
        const int right = rule_right[r];
        for (int split = i + 1; split < j; ++split) {
          if (ChartCell(chart, n, num_symbols, i, split)[left] &&
              ChartCell(chart, n, num_symbols, split, j)[right]) {
            found = true;
            break;
          }
        }
      }
    }
    if (kWarpVote) {
      // num_rules and blockDim are multiples of the warp size, so whole warps get here together.
      const unsigned any = __any_sync(0xffffffffu, found);
      if (any && (threadIdx.x % kWarp) == 0) symbols[parent] = 1;
    } else if (found) {
      symbols[parent] = 1;
    }
  }
  __syncthreads();
  CloseCell(symbols, unary_parent, unary_child, num_unary);
  if (kShared) {
    __syncthreads();
    for (int a = threadIdx.x; a < num_symbols; a += blockDim.x) target[a] = symbols[a];
  }
}

struct Rule {
  int parent, left, right;
};

// Orders the rules for `mapping` and pads groups with dummies (parent -1).
std::vector<Rule> ArrangeRules(const MembershipGrammar& g, RuleMapping mapping) {
  std::vector<Rule> rules;
  for (size_t r = 0; r < g.rule_parent.size(); ++r) {
    rules.push_back({g.rule_parent[r], g.rule_left[r], g.rule_right[r]});
  }
  auto key_of = [&](const Rule& rule) {
    return (mapping == RuleMapping::kRvs || mapping == RuleMapping::kRvsDummy) ? rule.left
                                                                               : rule.parent;
  };
  if (mapping != RuleMapping::kRule) {
    std::stable_sort(rules.begin(), rules.end(),
                     [&](const Rule& a, const Rule& b) { return key_of(a) < key_of(b); });
  }
  if (mapping == RuleMapping::kRvsDummy || mapping == RuleMapping::kLvsDummy) {
    std::vector<Rule> padded;
    for (size_t r = 0; r < rules.size(); ++r) {
      padded.push_back(rules[r]);
      const bool group_ends = r + 1 == rules.size() || key_of(rules[r + 1]) != key_of(rules[r]);
      if (group_ends) {
        while (padded.size() % kWarp != 0) padded.push_back({-1, 0, 0});
      }
    }
    rules = std::move(padded);
  }
  return rules;
}

template <typename T>
Status Upload(const std::vector<T>& host, T** device) {
  *device = nullptr;
  if (host.empty()) return Status();
  CKY_CUDA_RETURN(cudaMalloc(device, host.size() * sizeof(T)));
  CKY_CUDA_RETURN(
      cudaMemcpy(*device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return Status();
}

class CykMembershipGpuImpl : public CykMembershipGpu {
 public:
  ~CykMembershipGpuImpl() override {
    for (void* p : {static_cast<void*>(parent_), static_cast<void*>(left_),
                    static_cast<void*>(right_), static_cast<void*>(unary_parent_),
                    static_cast<void*>(unary_child_), static_cast<void*>(terminal_offsets_),
                    static_cast<void*>(terminal_parents_), static_cast<void*>(chart_)}) {
      if (p) cudaFree(p);
    }
    if (stream_) cudaStreamDestroy(stream_);
  }

  Status Init(const MembershipGrammar& g, const CykGpuOptions& options, int32_t max_length) {
    options_ = options;
    num_symbols_ = g.num_nonterminals;
    start_ = g.start;
    max_length_ = max_length;
    std::vector<Rule> rules = ArrangeRules(g, options.mapping);
    num_rules_ = static_cast<int>(rules.size());
    std::vector<int> parent, left, right;
    for (const Rule& r : rules) {
      parent.push_back(r.parent);
      left.push_back(r.left);
      right.push_back(r.right);
    }
    num_unary_ = static_cast<int>(g.unary_parent.size());
    num_terminals_ = static_cast<int>(g.terminal_offsets.size()) - 1;
    CKY_CUDA_RETURN(cudaStreamCreate(&stream_));
    CKY_RETURN_IF_ERROR(Upload(parent, &parent_));
    CKY_RETURN_IF_ERROR(Upload(left, &left_));
    CKY_RETURN_IF_ERROR(Upload(right, &right_));
    CKY_RETURN_IF_ERROR(Upload(g.unary_parent, &unary_parent_));
    CKY_RETURN_IF_ERROR(Upload(g.unary_child, &unary_child_));
    CKY_RETURN_IF_ERROR(Upload(g.terminal_offsets, &terminal_offsets_));
    CKY_RETURN_IF_ERROR(Upload(
        g.terminal_parents.empty() ? std::vector<int>{0} : g.terminal_parents, &terminal_parents_));
    chart_bytes_ = static_cast<size_t>(max_length) * (max_length + 1) * num_symbols_;
    CKY_CUDA_RETURN(cudaMalloc(&chart_, chart_bytes_));
    const int wanted = std::max(kWarp, options.threads_per_block / kWarp * kWarp);
    threads_ = std::min(wanted, (num_rules_ + kWarp - 1) / kWarp * kWarp);
    threads_ = std::max(threads_, kWarp);
    return Status();
  }

  Status Recognize(const std::vector<std::vector<int32_t>>& strings,
                   std::vector<uint8_t>* accepted) override {
    accepted->assign(strings.size(), 0);
    std::vector<int> tokens;
    std::vector<size_t> offsets;
    for (const auto& s : strings) {
      if (static_cast<int32_t>(s.size()) > max_length_) {
        return Status::Error("string longer than the chart (" + std::to_string(max_length_) + ")");
      }
      offsets.push_back(tokens.size());
      for (int32_t t : s) {
        if (t < 0 || t >= num_terminals_) return Status::Error("terminal id out of range");
        tokens.push_back(t);
      }
    }
    int* d_tokens = nullptr;
    uint8_t* d_results = nullptr;
    CKY_RETURN_IF_ERROR(Upload(tokens.empty() ? std::vector<int>{0} : tokens, &d_tokens));
    Status status = Run(strings, offsets, d_tokens, &d_results, accepted);
    cudaFree(d_tokens);
    if (d_results) cudaFree(d_results);
    return status;
  }

  int64_t device_rule_count() const override { return num_rules_; }

 private:
  Status Run(const std::vector<std::vector<int32_t>>& strings, const std::vector<size_t>& offsets,
             const int* d_tokens, uint8_t** d_results, std::vector<uint8_t>* accepted) {
    if (strings.empty()) return Status();
    CKY_CUDA_RETURN(cudaMalloc(d_results, strings.size()));
    CKY_CUDA_RETURN(cudaMemsetAsync(*d_results, 0, strings.size(), stream_));
    const bool shared = options_.memory == CellMemory::kShared;
    const bool vote = options_.mapping == RuleMapping::kLvsDummy;
    auto kernel = shared ? (vote ? SpanKernel<true, true> : SpanKernel<true, false>)
                         : (vote ? SpanKernel<false, true> : SpanKernel<false, false>);
    const size_t shared_bytes = shared ? num_symbols_ : 0;
    for (size_t s = 0; s < strings.size(); ++s) {
      const int n = static_cast<int>(strings[s].size());
      if (n == 0) continue;
      CKY_CUDA_RETURN(
          cudaMemsetAsync(chart_, 0, static_cast<size_t>(n) * (n + 1) * num_symbols_, stream_));
      LeafKernel<<<n, threads_, 0, stream_>>>(chart_, n, num_symbols_, d_tokens + offsets[s],
                                              terminal_offsets_, terminal_parents_, unary_parent_,
                                              unary_child_, num_unary_);
      for (int length = 2; length <= n; ++length) {
        kernel<<<n - length + 1, threads_, shared_bytes, stream_>>>(
            chart_, n, length, num_symbols_, parent_, left_, right_, num_rules_, unary_parent_,
            unary_child_, num_unary_);
      }
      const size_t top = (static_cast<size_t>(0) * (n + 1) + n) * num_symbols_ + start_;
      CKY_CUDA_RETURN(
          cudaMemcpyAsync(*d_results + s, chart_ + top, 1, cudaMemcpyDeviceToDevice, stream_));
    }
    CKY_CUDA_RETURN(cudaGetLastError());
    CKY_CUDA_RETURN(cudaMemcpyAsync(accepted->data(), *d_results, strings.size(),
                                    cudaMemcpyDeviceToHost, stream_));
    CKY_CUDA_RETURN(cudaStreamSynchronize(stream_));
    return Status();
  }

  CykGpuOptions options_;
  int num_symbols_ = 0, start_ = 0, max_length_ = 0, num_rules_ = 0, num_unary_ = 0;
  int num_terminals_ = 0, threads_ = kWarp;
  int *parent_ = nullptr, *left_ = nullptr, *right_ = nullptr;
  int *unary_parent_ = nullptr, *unary_child_ = nullptr;
  int *terminal_offsets_ = nullptr, *terminal_parents_ = nullptr;
  uint8_t* chart_ = nullptr;
  size_t chart_bytes_ = 0;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

StatusOr<std::unique_ptr<CykMembershipGpu>> CykMembershipGpu::Create(
    const MembershipGrammar& grammar, const CykGpuOptions& options, int32_t max_length) {
  if (!DeviceAvailable()) return Status::Error("no CUDA device: " + DeviceDescription());
  auto impl = std::make_unique<CykMembershipGpuImpl>();
  Status status = impl->Init(grammar, options, max_length);
  if (!status.ok()) return status;
  return std::unique_ptr<CykMembershipGpu>(std::move(impl));
}

}  // namespace cky::cuda
