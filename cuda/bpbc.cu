// Bitwise-parallel bulk CKY on the GPU: public API (BpbcGpu), dispatch (grouping by length,
// memory-bounded batches and block counts, static or dynamic scheduling), then the kernel.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "cuda/bpbc.h"
#include "cuda/device.h"

namespace cky::cuda {
namespace {

Status CudaError(cudaError_t err, const char* what) {
  return Status::Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(err));
}
#define CKY_CUDA_RETURN(expr)                                       \
  do {                                                              \
    cudaError_t cky_err_ = (expr);                                  \
    if (cky_err_ != cudaSuccess) return CudaError(cky_err_, #expr); \
  } while (0)

// Cells of a string of length n, by span length then start: cell (length l, start i).
__host__ __device__ __forceinline__ int CellIndex(int n, int length, int start) {
  return (length - 1) * (n + 1) - (length - 1) * length / 2 + start;
}

struct KernelArgs {
  const int* tokens;               // per group: tokens[pos * group_strings + string]
  const long long* group_offsets;  // token offset of each group
  const int* group_lengths;
  int num_groups;
  const uint16_t* code;
  int code_length;
  int num_symbols;
  int start;
  const uint16_t* unary_parent;
  const uint16_t* unary_child;
  int num_unary;
  const int* terminal_offsets;
  const int* terminal_parents;
  unsigned int* counter;  // dynamic scheduling: next group
  size_t slot_words;      // words of one block's CKY table
};

template <typename Word>
__device__ __forceinline__ void CloseCell(Word* cell, int stride, const KernelArgs& a) {
  for (int u = 0; u < a.num_unary; ++u) {
    cell[a.unary_parent[u] * stride] |= cell[a.unary_child[u] * stride];
  }
}

// Table layout: [cell][symbol][thread], so that a warp's accesses to one symbol are coalesced; one
// extra all-zero cell at the end pads the last pass over the splits.
// Variants (kSplits): 1 = the paper's order, one split at a time through the whole circuit;
// 4 or 8 = that many splits per pass, so that each operand index read from the circuit serves
// kSplits independent loads (more memory-level parallelism, less decoding per gate).
template <typename Word, bool kDynamic, int kSplits>
__global__ void BpbcKernel(Word* tables, Word* results, KernelArgs a) {
  constexpr int kBits = sizeof(Word) * 8;
  const int threads = blockDim.x;
  const int t = threadIdx.x;
  const int group_strings = threads * kBits;
  const int row = a.num_symbols * threads;
  Word* table = tables + blockIdx.x * a.slot_words + t;
  const Word* zero_cell = table + a.slot_words - row;
  for (int s = 0; s < a.num_symbols; ++s) table[a.slot_words - row + s * threads] = 0;
  __shared__ int shared_group;
  int group = blockIdx.x;
  while (true) {
    if (kDynamic) {
      __syncthreads();  // everyone has read the previous group number
      if (t == 0) shared_group = static_cast<int>(atomicAdd(a.counter, 1u));
      __syncthreads();
      group = shared_group;
    }
    if (group >= a.num_groups) break;
    const int n = a.group_lengths[group];
    const int* tokens = a.tokens + a.group_offsets[group] + t * kBits;
    for (int i = 0; i < n; ++i) {
      Word* cell = table + static_cast<size_t>(CellIndex(n, 1, i)) * row;
      for (int s = 0; s < a.num_symbols; ++s) cell[s * threads] = 0;
      for (int b = 0; b < kBits; ++b) {
        const int token = tokens[i * group_strings + b];
        for (int p = a.terminal_offsets[token]; p < a.terminal_offsets[token + 1]; ++p) {
          cell[a.terminal_parents[p] * threads] |= Word(1) << b;
        }
      }
      CloseCell(cell, threads, a);
    }
    for (int length = 2; length <= n; ++length) {
      for (int i = 0; i + length <= n; ++i) {
        Word* target = table + static_cast<size_t>(CellIndex(n, length, i)) * row;
        for (int s = 0; s < a.num_symbols; ++s) target[s * threads] = 0;
        for (int m0 = 1; m0 < length; m0 += kSplits) {
          const Word* u[kSplits];
          const Word* v[kSplits];
#pragma unroll
          for (int c = 0; c < kSplits; ++c) {
            const int m = m0 + c;
            u[c] = m < length ? table + static_cast<size_t>(CellIndex(n, m, i)) * row : zero_cell;
            v[c] = m < length ? table + static_cast<size_t>(CellIndex(n, length - m, i + m)) * row
                              : zero_cell;
          }
          int pc = 0;
          int parent = -1;
          Word acc = 0;
          while (pc < a.code_length) {
            const int product_parent = __ldg(a.code + pc);
            const int num_left = __ldg(a.code + pc + 1);
            const int num_right = __ldg(a.code + pc + 2);
            pc += 3;
            if (product_parent != parent) {
              if (parent >= 0 && acc) target[parent * threads] |= acc;
              parent = product_parent;
              acc = 0;
            }
            Word left[kSplits];
#pragma unroll
            for (int c = 0; c < kSplits; ++c) left[c] = 0;
            for (int k = 0; k < num_left; ++k) {
              const int offset = __ldg(a.code + pc + k) * threads;
#pragma unroll
              for (int c = 0; c < kSplits; ++c) left[c] |= u[c][offset];
            }
            pc += num_left;
            Word any = 0;
#pragma unroll
            for (int c = 0; c < kSplits; ++c) any |= left[c];
            if (any) {  // skipping the right operands changes no bit of the result
              Word right[kSplits];
#pragma unroll
              for (int c = 0; c < kSplits; ++c) right[c] = 0;
              for (int k = 0; k < num_right; ++k) {
                const int offset = __ldg(a.code + pc + k) * threads;
#pragma unroll
                for (int c = 0; c < kSplits; ++c) right[c] |= v[c][offset];
              }
#pragma unroll
              for (int c = 0; c < kSplits; ++c) acc |= left[c] & right[c];
            }
            pc += num_right;
          }
          if (parent >= 0 && acc) target[parent * threads] |= acc;
        }
        CloseCell(target, threads, a);
      }
    }
    results[static_cast<size_t>(group) * threads + t] =
        table[static_cast<size_t>(CellIndex(n, n, 0)) * row + a.start * threads];
    if (!kDynamic) group += gridDim.x;
  }
}

template <typename Word, bool kDynamic>
void LaunchBpbc(int splits, int blocks, int threads, Word* tables, Word* results,
                const KernelArgs& args) {
  switch (splits) {
    case 1:
      BpbcKernel<Word, kDynamic, 1><<<blocks, threads>>>(tables, results, args);
      break;
    case 8:
      BpbcKernel<Word, kDynamic, 8><<<blocks, threads>>>(tables, results, args);
      break;
    default:
      BpbcKernel<Word, kDynamic, 4><<<blocks, threads>>>(tables, results, args);
      break;
  }
}

template <typename T>
Status Upload(const std::vector<T>& host, T** device) {
  *device = nullptr;
  const size_t count = std::max<size_t>(host.size(), 1);
  CKY_CUDA_RETURN(cudaMalloc(device, count * sizeof(T)));
  if (!host.empty()) {
    CKY_CUDA_RETURN(
        cudaMemcpy(*device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  return Status();
}

// Frees device buffers on every return path.
struct DeviceBuffers {
  std::vector<void*> pointers;
  template <typename T>
  T* Track(T* p) {
    pointers.push_back(p);
    return p;
  }
  ~DeviceBuffers() {
    for (void* p : pointers) cudaFree(p);
  }
};

class BpbcGpuImpl : public BpbcGpu {
 public:
  ~BpbcGpuImpl() override {
    for (void* p : {static_cast<void*>(code_), static_cast<void*>(unary_parent_),
                    static_cast<void*>(unary_child_), static_cast<void*>(terminal_offsets_),
                    static_cast<void*>(terminal_parents_), static_cast<void*>(counter_)}) {
      if (p) cudaFree(p);
    }
  }

  Status Init(const BpbcProgram& program) {
    program_meta_ = program;
    program_meta_.code.clear();
    CKY_RETURN_IF_ERROR(Upload(program.code, &code_));
    CKY_RETURN_IF_ERROR(Upload(program.unary_parent, &unary_parent_));
    CKY_RETURN_IF_ERROR(Upload(program.unary_child, &unary_child_));
    CKY_RETURN_IF_ERROR(Upload(program.terminal_offsets, &terminal_offsets_));
    CKY_RETURN_IF_ERROR(Upload(program.terminal_parents, &terminal_parents_));
    CKY_CUDA_RETURN(cudaMalloc(&counter_, sizeof(unsigned int)));
    code_length_ = static_cast<int>(program.code.size());
    num_terminals_ = static_cast<int>(program.terminal_offsets.size()) - 1;
    int device = 0;
    CKY_CUDA_RETURN(cudaGetDevice(&device));
    CKY_CUDA_RETURN(cudaDeviceGetAttribute(&num_sms_, cudaDevAttrMultiProcessorCount, device));
    return Status();
  }

  Status Recognize(const std::vector<int32_t>* strings, size_t count, const BpbcGpuOptions& options,
                   std::vector<uint8_t>* accepted, BpbcGpuStats* stats) override {
    if (options.word_bits == 64) {
      return Run<unsigned long long>(strings, count, options, accepted, stats);
    }
    if (options.word_bits == 32) return Run<uint32_t>(strings, count, options, accepted, stats);
    return Status::Error("word_bits must be 32 or 64");
  }

 private:
  struct Group {
    int length;
    std::vector<int64_t> members;  // string indices, at most group_strings
  };

  template <typename Word>
  Status Run(const std::vector<int32_t>* strings, size_t count, const BpbcGpuOptions& options,
             std::vector<uint8_t>* accepted, BpbcGpuStats* stats) {
    const auto wall_start = std::chrono::steady_clock::now();
    BpbcGpuStats local;
    accepted->assign(count, 0);
    const int threads = std::max(1, std::min(options.threads_per_block, 1024));
    const int bits = static_cast<int>(sizeof(Word) * 8);
    const int64_t group_strings = static_cast<int64_t>(threads) * bits;

    // Group by length; longest groups first, so that dynamic scheduling ends evenly.
    std::vector<std::vector<int64_t>> by_length(kMaxLength + 1);
    for (size_t s = 0; s < count; ++s) {
      const size_t n = strings[s].size();
      if (n > static_cast<size_t>(kMaxLength)) {
        return Status::Error("string " + std::to_string(s + 1) + " is longer than " +
                             std::to_string(kMaxLength) + " terminals");
      }
      for (int32_t token : strings[s]) {
        if (token < 0 || token >= num_terminals_) return Status::Error("terminal id out of range");
      }
      if (n > 0) by_length[n].push_back(static_cast<int64_t>(s));
    }
    std::vector<Group> groups;
    for (int n = kMaxLength; n >= 1; --n) {
      for (size_t k = 0; k < by_length[n].size(); k += group_strings) {
        Group g{n, {}};
        const size_t end = std::min(by_length[n].size(), k + static_cast<size_t>(group_strings));
        g.members.assign(by_length[n].begin() + k, by_length[n].begin() + end);
        groups.push_back(std::move(g));
      }
    }
    local.groups = static_cast<int64_t>(groups.size());

    cudaEvent_t begin_event, end_event;
    CKY_CUDA_RETURN(cudaEventCreate(&begin_event));
    CKY_CUDA_RETURN(cudaEventCreate(&end_event));
    const int64_t groups_per_batch =
        std::max<int64_t>(1, options.batch_strings / std::max<int64_t>(1, group_strings));
    for (size_t first = 0; first < groups.size(); first += groups_per_batch) {
      const size_t last = std::min(groups.size(), first + static_cast<size_t>(groups_per_batch));
      const int num_groups = static_cast<int>(last - first);
      std::vector<int> tokens;
      std::vector<long long> offsets;
      std::vector<int> lengths;
      int max_length = 0;
      for (size_t g = first; g < last; ++g) {
        const Group& group = groups[g];
        offsets.push_back(static_cast<long long>(tokens.size()));
        lengths.push_back(group.length);
        max_length = std::max(max_length, group.length);
        const size_t base = tokens.size();
        tokens.resize(base + static_cast<size_t>(group.length) * group_strings, 0);
        for (size_t m = 0; m < group.members.size(); ++m) {
          const auto& s = strings[group.members[m]];
          for (int i = 0; i < group.length; ++i) tokens[base + i * group_strings + m] = s[i];
        }
      }
      DeviceBuffers buffers;
      int* d_tokens;
      long long* d_offsets;
      int* d_lengths;
      CKY_RETURN_IF_ERROR(Upload(tokens, &d_tokens));
      buffers.Track(d_tokens);
      CKY_RETURN_IF_ERROR(Upload(offsets, &d_offsets));
      buffers.Track(d_offsets);
      CKY_RETURN_IF_ERROR(Upload(lengths, &d_lengths));
      buffers.Track(d_lengths);
      Word* d_results;
      CKY_CUDA_RETURN(cudaMalloc(&d_results, sizeof(Word) * num_groups * threads));
      buffers.Track(d_results);

      const int num_cells = max_length * (max_length + 1) / 2;
      const size_t slot_words =
          static_cast<size_t>(num_cells + 1) * program_meta_.num_nonterminals * threads;
      size_t free_bytes = 0, total_bytes = 0;
      CKY_CUDA_RETURN(cudaMemGetInfo(&free_bytes, &total_bytes));
      const size_t table_budget =
          options.table_memory_bytes ? options.table_memory_bytes : free_bytes / 10 * 6;
      int64_t blocks = std::min<int64_t>(num_groups, table_budget / (slot_words * sizeof(Word)));
      const int resident_cap = num_sms_ * std::max(1, std::min(32, 2048 / threads));
      blocks =
          std::min<int64_t>(blocks, options.max_blocks > 0 ? options.max_blocks : resident_cap);
      if (blocks < 1) return Status::Error("not enough device memory for one CKY table");
      Word* d_tables;
      CKY_CUDA_RETURN(cudaMalloc(&d_tables, slot_words * sizeof(Word) * blocks));
      buffers.Track(d_tables);
      CKY_CUDA_RETURN(cudaMemset(counter_, 0, sizeof(unsigned int)));

      KernelArgs args{d_tokens,
                      d_offsets,
                      d_lengths,
                      num_groups,
                      code_,
                      code_length_,
                      program_meta_.num_nonterminals,
                      program_meta_.start,
                      unary_parent_,
                      unary_child_,
                      static_cast<int>(program_meta_.unary_parent.size()),
                      terminal_offsets_,
                      terminal_parents_,
                      counter_,
                      slot_words};
      CKY_CUDA_RETURN(cudaEventRecord(begin_event));
      if (options.scheduling == Scheduling::kDynamic) {
        LaunchBpbc<Word, true>(options.splits_per_pass, static_cast<int>(blocks), threads, d_tables,
                               d_results, args);
      } else {
        LaunchBpbc<Word, false>(options.splits_per_pass, static_cast<int>(blocks), threads,
                                d_tables, d_results, args);
      }
      CKY_CUDA_RETURN(cudaGetLastError());
      CKY_CUDA_RETURN(cudaEventRecord(end_event));
      std::vector<Word> results(static_cast<size_t>(num_groups) * threads);
      CKY_CUDA_RETURN(cudaMemcpy(results.data(), d_results, results.size() * sizeof(Word),
                                 cudaMemcpyDeviceToHost));
      float ms = 0;
      CKY_CUDA_RETURN(cudaEventElapsedTime(&ms, begin_event, end_event));
      local.kernel_ms += ms;
      local.blocks = static_cast<int32_t>(blocks);
      ++local.batches;
      for (size_t g = first; g < last; ++g) {
        const Group& group = groups[g];
        for (size_t m = 0; m < group.members.size(); ++m) {
          const Word word = results[(g - first) * threads + m / bits];
          (*accepted)[group.members[m]] = static_cast<uint8_t>((word >> (m % bits)) & 1);
        }
      }
    }
    cudaEventDestroy(begin_event);
    cudaEventDestroy(end_event);
    local.total_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start)
            .count();
    if (stats) *stats = local;
    return Status();
  }

  BpbcProgram program_meta_;  // everything but the code
  uint16_t* code_ = nullptr;
  uint16_t *unary_parent_ = nullptr, *unary_child_ = nullptr;
  int *terminal_offsets_ = nullptr, *terminal_parents_ = nullptr;
  unsigned int* counter_ = nullptr;
  int code_length_ = 0, num_terminals_ = 0, num_sms_ = 1;
};

}  // namespace

StatusOr<std::unique_ptr<BpbcGpu>> BpbcGpu::Create(const BpbcProgram& program) {
  if (!DeviceAvailable()) return Status::Error("no CUDA device: " + DeviceDescription());
  if (program.num_nonterminals > 65535) return Status::Error("more than 65535 nonterminals");
  auto impl = std::make_unique<BpbcGpuImpl>();
  Status status = impl->Init(program);
  if (!status.ok()) return status;
  return std::unique_ptr<BpbcGpu>(std::move(impl));
}

}  // namespace cky::cuda
