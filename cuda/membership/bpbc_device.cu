// Bitwise-parallel bulk CKY on the GPU: public API (BpbcGpu), dispatch (grouping by length,
// memory-bounded batches and block counts, static or dynamic scheduling), then the kernel.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "cuda/common/device.h"
#include "cuda/common/device_helpers.cuh"
#include "cuda/membership/bpbc_device.h"

namespace cky::cuda {
namespace {

// Cells of a string of length n, by span length then start: cell (length l, start i).
__host__ __device__ __forceinline__ int CellIndex(int n, int length, int start) {
  return (length - 1) * (n + 1) - (length - 1) * length / 2 + start;
}

constexpr int kMaxWarpsPerGroup = 32;
constexpr int kCodeCopyEntries = 512;  // kernel 2: code entries each warp keeps in shared memory
constexpr int64_t kCooperativeMinGates = 512;  // kAuto: smaller circuits run kernel 1

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

// One thread's word of a terminal cell (one string per bit): cleared, set from the tokens at this
// position (token_row[b] is string b's token), then closed under the chain rules. Consecutive
// symbols of the thread's word are `stride` words apart.
template <typename Word>
__device__ __forceinline__ void FillTerminalCell(Word* cell, int stride, const int* token_row,
                                                 const KernelArgs& a) {
  for (int s = 0; s < a.num_symbols; ++s) cell[s * stride] = 0;
  for (int b = 0; b < static_cast<int>(sizeof(Word) * 8); ++b) {
    const int token = token_row[b];
    for (int p = a.terminal_offsets[token]; p < a.terminal_offsets[token + 1]; ++p) {
      cell[a.terminal_parents[p] * stride] |= Word(1) << b;
    }
  }
  CloseCell(cell, stride, a);
}

// One operand of a product in kernel 1, per split: the OR of the table words of the `count`
// symbols at `symbols` (global memory), in each split's cell (`cells`, this thread's word of
// symbol 0; symbols `threads` words apart).
template <typename Word, int kSplits>
__device__ __forceinline__ void OrTableOperand(const uint16_t* symbols, int count, int threads,
                                               const Word* const (&cells)[kSplits],
                                               Word (&out)[kSplits]) {
#pragma unroll
  for (int c = 0; c < kSplits; ++c) out[c] = 0;
  for (int k = 0; k < count; ++k) {
    const int offset = __ldg(symbols + k) * threads;
#pragma unroll
    for (int c = 0; c < kSplits; ++c) out[c] |= cells[c][offset];
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
      FillTerminalCell(table + static_cast<size_t>(CellIndex(n, 1, i)) * row, threads,
                       tokens + i * group_strings, a);
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
            OrTableOperand<Word, kSplits>(a.code + pc, num_left, threads, u, left);
            pc += num_left;
            Word any = 0;
#pragma unroll
            for (int c = 0; c < kSplits; ++c) any |= left[c];
            if (any) {  // skipping the right operands changes no bit of the result
              Word right[kSplits];
              OrTableOperand<Word, kSplits>(a.code + pc, num_right, threads, v, right);
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

// Kernel 2, cooperative: a block of W warps runs the CKY of one group of 32 * kBits strings (lane
// l holds strings l * kBits ...). For each cell and each pass of kSplits splits, the 2 * kSplits
// operand cells are staged in shared memory ([symbol][split][lane], so a warp's loads of one
// symbol hit 32 distinct banks, and the kSplits values of one symbol are adjacent); warp w
// evaluates the products code[chunk[w] .. chunk[w + 1]) for all kSplits splits and ORs each
// parent's result into the cell being built, also in shared memory (atomicOr: a parent's products
// may straddle two chunks). Chain rules and the write-back of the finished cell are shared out too.
// Per gate this is one shared-memory load per split, where kernel 1 loads from global memory (L1
// holds only a few warps' operand cells). Shared memory: (2 * kSplits + 1) * num_symbols * 32
// words, and kCodeCopyEntries code entries per warp (each warp copies a stretch of its share of the
// code at a time, so that decoding a gate reads shared memory instead of waiting on L1 or L2).
struct CoopArgs {
  KernelArgs base;
  int chunk[kMaxWarpsPerGroup + 1];  // product boundaries (code offsets) of each warp's share
};

// Copies (or, with src == nullptr, clears) one cell of `words` words ([symbol][lane], a multiple
// of 16 bytes, 16-byte aligned) with the whole block. The destination is interleaved: symbol s's
// 32 lanes land at dst + s * stride, so that the staged cells of kSplits splits can share one
// address computation per operand ([symbol][split][lane], stride = kSplits * 32 words).
template <typename Word>
__device__ __forceinline__ void CopyCell(Word* dst, const Word* src, int words, int stride) {
  constexpr int kVectorsPerSymbol = 32 * static_cast<int>(sizeof(Word)) / 16;
  uint4* d = reinterpret_cast<uint4*>(dst);
  const int stride_vectors = stride * static_cast<int>(sizeof(Word)) / 16;
  const int vectors = words * static_cast<int>(sizeof(Word)) / 16;
  const uint4* s = reinterpret_cast<const uint4*>(src);
  for (int k = threadIdx.x; k < vectors; k += blockDim.x) {
    const int target = (k / kVectorsPerSymbol) * stride_vectors + k % kVectorsPerSymbol;
    d[target] = src == nullptr ? make_uint4(0, 0, 0, 0) : s[k];
  }
}

__host__ __device__ constexpr int Log2(int x) { return x <= 1 ? 0 : 1 + Log2(x / 2); }

// Kernel 2's evaluation of one product for kSplits splits: (OR of U[l]) AND (OR of V[r]), ORed into
// acc, per split. `operands` holds the left then the right symbols (in the warp's shared-memory
// copy of the code, or in global memory for a product longer than that copy); u and v point to the
// lane's word of symbol 0, split 0 of the staged cells ([symbol][split][lane]).
// One operand of EvaluateProduct, per split: the OR of the staged words of `count` symbols.
template <typename Word, int kSplits>
__device__ __forceinline__ void OrOperand(const uint16_t* symbols, int count, const char* cells,
                                          Word (&out)[kSplits]) {
  constexpr int kShift = Log2(kSplits * 32 * static_cast<int>(sizeof(Word)));
#pragma unroll
  for (int c = 0; c < kSplits; ++c) out[c] = 0;
  for (int k = 0; k < count; ++k) {
    const Word* operand =
        reinterpret_cast<const Word*>(cells + (static_cast<int>(symbols[k]) << kShift));
#pragma unroll
    for (int c = 0; c < kSplits; ++c) out[c] |= operand[c * 32];
  }
}

template <typename Word, int kSplits>
__device__ __forceinline__ void EvaluateProduct(const uint16_t* operands, int num_left,
                                                int num_right, const char* u, const char* v,
                                                Word* acc) {
  Word left[kSplits];
  OrOperand<Word, kSplits>(operands, num_left, u, left);
  Word any = 0;
#pragma unroll
  for (int c = 0; c < kSplits; ++c) any |= left[c];
  // Skipping the right operands changes no bit of the result (and the warp stays together).
  if (!__any_sync(0xffffffffu, any != 0)) return;
  Word right[kSplits];
  OrOperand<Word, kSplits>(operands + num_left, num_right, v, right);
  Word result = 0;
#pragma unroll
  for (int c = 0; c < kSplits; ++c) result |= left[c] & right[c];
  *acc |= result;
}

template <typename Word, bool kDynamic, int kSplits>
__global__ void BpbcCooperativeKernel(Word* tables, Word* results, CoopArgs coop) {
  constexpr int kBits = sizeof(Word) * 8;
  constexpr int kLanes = 32;
  const KernelArgs& a = coop.base;
  extern __shared__ uint4 shared_raw[];
  const int lane = threadIdx.x % kLanes;
  const int warp = threadIdx.x / kLanes;
  const int warps = blockDim.x / kLanes;
  const int row = a.num_symbols * kLanes;                // words of one cell
  Word* staged_u = reinterpret_cast<Word*>(shared_raw);  // [symbol][split][lane]
  Word* staged_v = staged_u + kSplits * row;
  Word* built = staged_v + kSplits * row;
  // Each warp's copy of a stretch of its share of the code: decoding then reads shared memory.
  uint16_t* code_copy = reinterpret_cast<uint16_t*>(built + row) + warp * kCodeCopyEntries;
  Word* table = tables + blockIdx.x * a.slot_words;
  const int group_strings = kLanes * kBits;
  const int code_begin = coop.chunk[warp], code_end = coop.chunk[warp + 1];
  __shared__ int shared_group;
  int group = blockIdx.x;
  while (true) {
    if (kDynamic) {
      __syncthreads();  // everyone has read the previous group number
      if (threadIdx.x == 0) shared_group = static_cast<int>(atomicAdd(a.counter, 1u));
      __syncthreads();
      group = shared_group;
    }
    if (group >= a.num_groups) break;
    const int n = a.group_lengths[group];
    const int* tokens = a.tokens + a.group_offsets[group] + lane * kBits;
    // Terminal cells: one warp per position, each lane its own word.
    for (int i = warp; i < n; i += warps) {
      FillTerminalCell(table + static_cast<size_t>(CellIndex(n, 1, i)) * row + lane, kLanes,
                       tokens + i * group_strings, a);
    }
    __syncthreads();
    for (int length = 2; length <= n; ++length) {
      for (int i = 0; i + length <= n; ++i) {
        CopyCell<Word>(built, nullptr, row, kLanes);
        for (int m0 = 1; m0 < length; m0 += kSplits) {
#pragma unroll
          for (int c = 0; c < kSplits; ++c) {
            const int m = m0 + c;
            CopyCell<Word>(
                staged_u + c * kLanes,
                m < length ? table + static_cast<size_t>(CellIndex(n, m, i)) * row : nullptr, row,
                kSplits * kLanes);
            CopyCell<Word>(staged_v + c * kLanes,
                           m < length
                               ? table + static_cast<size_t>(CellIndex(n, length - m, i + m)) * row
                               : nullptr,
                           row, kSplits * kLanes);
          }
          __syncthreads();
          const char* u = reinterpret_cast<const char*>(staged_u + lane);
          const char* v = reinterpret_cast<const char*>(staged_v + lane);
          int copy_begin = 0, copy_end = 0;  // the code positions held in code_copy
          auto refill = [&](int from) {
            __syncwarp();
            const int count = min(kCodeCopyEntries, code_end - from);
            for (int e = lane; e < count; e += kLanes) code_copy[e] = __ldg(a.code + from + e);
            __syncwarp();
            copy_begin = from;
            copy_end = from + count;
          };
          int pc = code_begin;
          int parent = -1;
          Word acc = 0;
          while (pc < code_end) {  // every branch below is uniform across the warp
            if (pc + 3 > copy_end) refill(pc);
            const uint16_t* entry = code_copy + (pc - copy_begin);
            const int product_parent = entry[0];
            const int num_left = entry[1];
            const int num_right = entry[2];
            const int size = 3 + num_left + num_right;
            if (pc + size > copy_end && size <= kCodeCopyEntries) {
              refill(pc);
              entry = code_copy;
            }
            if (product_parent != parent) {
              if (parent >= 0 && acc) atomicOr(built + parent * kLanes + lane, acc);
              parent = product_parent;
              acc = 0;
            }
            if (pc + size <= copy_end) {
              EvaluateProduct<Word, kSplits>(entry + 3, num_left, num_right, u, v, &acc);
            } else {  // longer than the copy: operands straight from global memory
              EvaluateProduct<Word, kSplits>(a.code + pc + 3, num_left, num_right, u, v, &acc);
            }
            pc += size;
          }
          if (parent >= 0 && acc) atomicOr(built + parent * kLanes + lane, acc);
          __syncthreads();  // the staged cells are free again; `built` is complete
        }
        // Chain rules, shared out by rule: reading a child before or after another warp ORed into
        // it gives the same closure, since the rules are closed under transitivity.
        for (int r = warp; r < a.num_unary; r += warps) {
          const Word child = built[a.unary_child[r] * kLanes + lane];
          if (child) atomicOr(built + a.unary_parent[r] * kLanes + lane, child);
        }
        __syncthreads();
        CopyCell<Word>(table + static_cast<size_t>(CellIndex(n, length, i)) * row, built, row,
                       kLanes);
        __syncthreads();  // `built` may be cleared; the cell is visible to the whole block
      }
    }
    if (warp == 0) {
      results[static_cast<size_t>(group) * kLanes + lane] =
          table[static_cast<size_t>(CellIndex(n, n, 0)) * row + a.start * kLanes + lane];
    }
    if (!kDynamic) {
      __syncthreads();  // the table is reused by the next group
      group += gridDim.x;
    }
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

template <typename Word, bool kDynamic, int kSplits>
Status LaunchCooperative(int blocks, int warps, size_t shared_bytes, Word* tables, Word* results,
                         const CoopArgs& args) {
  auto kernel = BpbcCooperativeKernel<Word, kDynamic, kSplits>;
  CKY_CUDA_RETURN(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(shared_bytes)));
  kernel<<<blocks, warps * 32, shared_bytes>>>(tables, results, args);
  return Status();
}

template <typename Word, bool kDynamic>
Status LaunchCooperative(int splits, int blocks, int warps, size_t shared_bytes, Word* tables,
                         Word* results, const CoopArgs& args) {
  switch (splits) {
    case 1:
      return LaunchCooperative<Word, kDynamic, 1>(blocks, warps, shared_bytes, tables, results,
                                                  args);
    case 2:
      return LaunchCooperative<Word, kDynamic, 2>(blocks, warps, shared_bytes, tables, results,
                                                  args);
    case 8:
      return LaunchCooperative<Word, kDynamic, 8>(blocks, warps, shared_bytes, tables, results,
                                                  args);
    default:
      return LaunchCooperative<Word, kDynamic, 4>(blocks, warps, shared_bytes, tables, results,
                                                  args);
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
    CKY_CUDA_RETURN(cudaDeviceGetAttribute(&shared_per_block_,
                                           cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    CKY_CUDA_RETURN(cudaDeviceGetAttribute(&shared_per_sm_,
                                           cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    // Product boundaries and the cumulative cost of the products (operand loads plus decoding),
    // for sharing the circuit out among the warps of the cooperative kernel.
    for (size_t pc = 0; pc + 2 < program.code.size();) {
      const int64_t operands = int64_t{program.code[pc + 1]} + program.code[pc + 2];
      product_starts_.push_back(static_cast<int>(pc));
      const int64_t before = product_costs_.empty() ? 0 : product_costs_.back();
      product_costs_.push_back(before + 3 + operands);
      gates_ += operands;
      pc += 3 + static_cast<size_t>(operands);
    }
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

  struct LaunchShape {
    bool cooperative = false;
    int threads = 32;  // threads (kernel 1) or lanes (kernel 2, always 32) holding a word each
    int warps = 1;     // kernel 2: warps per block (per string group)
    int splits = 4;    // splits per pass over the circuit
    size_t shared_bytes = 0;
    int blocks_per_sm = 1;  // resident blocks per SM, the cap on useful blocks
    int chunk[kMaxWarpsPerGroup + 1] = {};
  };

  // Picks the kernel and its launch shape (see BpbcGpuOptions).
  Status ChooseShape(const BpbcGpuOptions& options, size_t word_bytes, LaunchShape* shape) const {
    const size_t cell_bytes = static_cast<size_t>(program_meta_.num_nonterminals) * 32 * word_bytes;
    const size_t shared_limit = static_cast<size_t>(shared_per_block_);
    const size_t code_copy_bytes = kCodeCopyEntries * sizeof(uint16_t);  // per warp
    const bool cooperative_fits = 3 * cell_bytes + code_copy_bytes <= shared_limit;
    switch (options.kernel) {
      case BpbcKernel::kThreadPerWord:
        shape->cooperative = false;
        break;
      case BpbcKernel::kCooperative:
        if (!cooperative_fits) {
          return Status::Error("the cooperative BPBC kernel needs " +
                               std::to_string(3 * cell_bytes + code_copy_bytes) +
                               " bytes of shared memory; " + std::to_string(shared_limit) +
                               " per block on this device");
        }
        shape->cooperative = true;
        break;
      default:
        // Small circuits: the thread-per-word kernel needs no barriers and wins
        // (bench/RESULTS-LOG.md).
        shape->cooperative = cooperative_fits && gates_ >= kCooperativeMinGates;
    }
    if (!shape->cooperative) {
      shape->threads = std::max(1, std::min(options.threads_per_block, 1024));
      shape->splits = options.splits_per_pass == 1 ? 1 : options.splits_per_pass >= 8 ? 8 : 4;
      shape->blocks_per_sm = std::max(1, std::min(32, 2048 / shape->threads));
      return Status();
    }
    shape->threads = 32;  // lanes: a group is 32 words
    // Warps per group: at least ~128 gates each, at most 16 (or as asked).
    int warps = options.warps_per_group > 0
                    ? options.warps_per_group
                    : static_cast<int>(std::clamp<int64_t>(gates_ / 128, 1, 16));
    warps = std::max(1, std::min(warps, kMaxWarpsPerGroup));
    auto resident_warps = [&](int splits_per_pass) {
      const size_t bytes = (2 * splits_per_pass + 1) * cell_bytes + warps * code_copy_bytes;
      const int blocks = static_cast<int>(static_cast<size_t>(shared_per_sm_) / (bytes + 1024));
      return std::min({blocks, 64 / warps, 32}) * warps;
    };
    // Splits per pass: as asked (1, 2, 4 or 8), or the most that keep 24 warps resident per SM
    // (a warp's gates wait on its shared-memory loads; occupancy hides that); fewer where the
    // staged cells would not fit.
    int splits = options.splits_per_pass >= 8   ? 8
                 : options.splits_per_pass >= 4 ? 4
                 : options.splits_per_pass >= 2 ? 2
                                                : 1;
    if (options.splits_per_pass == 0) {
      splits = 8;
      while (splits > 1 && resident_warps(splits) < 24) splits /= 2;
    }
    while (splits > 1 && (2 * splits + 1) * cell_bytes + code_copy_bytes > shared_limit) {
      splits /= 2;
    }
    const size_t cells_bytes = (2 * splits + 1) * cell_bytes;
    warps = std::min<int>(warps, static_cast<int>((shared_limit - cells_bytes) / code_copy_bytes));
    shape->splits = splits;
    shape->warps = warps;
    shape->shared_bytes = cells_bytes + warps * code_copy_bytes;
    const int by_shared = std::max<int>(
        1, static_cast<int>(static_cast<size_t>(shared_per_sm_) / (shape->shared_bytes + 1024)));
    shape->blocks_per_sm = std::max(1, std::min({by_shared, 64 / warps, 32}));
    // Each warp's share of the products: equal cost, cut at product boundaries.
    const int64_t total = product_costs_.empty() ? 0 : product_costs_.back();
    size_t product = 0;
    shape->chunk[0] = 0;
    for (int w = 1; w < warps; ++w) {
      const int64_t target = total * w / warps;
      while (product < product_costs_.size() && product_costs_[product] <= target) ++product;
      // Products [0, product) cost at most `target`: the share boundary is the next start.
      shape->chunk[w] = product < product_starts_.size() ? product_starts_[product] : code_length_;
    }
    shape->chunk[warps] = code_length_;
    return Status();
  }

  template <typename Word>
  Status Run(const std::vector<int32_t>* strings, size_t count, const BpbcGpuOptions& options,
             std::vector<uint8_t>* accepted, BpbcGpuStats* stats) {
    const auto wall_start = std::chrono::steady_clock::now();
    BpbcGpuStats local;
    accepted->assign(count, 0);
    const int bits = static_cast<int>(sizeof(Word) * 8);
    LaunchShape shape;
    CKY_RETURN_IF_ERROR(ChooseShape(options, sizeof(Word), &shape));
    // Threads (kernel 1) or lanes (kernel 2) that hold one word of a string group each.
    const int threads = shape.threads;
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
      const int resident_cap = num_sms_ * shape.blocks_per_sm;
      const int64_t block_limit =
          std::min<int64_t>(table_budget / (slot_words * sizeof(Word)),
                            options.max_blocks > 0 ? options.max_blocks : resident_cap);
      local.block_limit = static_cast<int32_t>(block_limit);
      const int64_t blocks = std::min<int64_t>(num_groups, block_limit);
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
      const bool dynamic = options.scheduling == Scheduling::kDynamic;
      if (shape.cooperative) {
        CoopArgs coop{};
        coop.base = args;
        for (int w = 0; w <= shape.warps; ++w) coop.chunk[w] = shape.chunk[w];
        const int launch_blocks = static_cast<int>(blocks);
        Status launched =
            dynamic ? LaunchCooperative<Word, true>(shape.splits, launch_blocks, shape.warps,
                                                    shape.shared_bytes, d_tables, d_results, coop)
                    : LaunchCooperative<Word, false>(shape.splits, launch_blocks, shape.warps,
                                                     shape.shared_bytes, d_tables, d_results, coop);
        if (!launched.ok()) return launched;
      } else if (dynamic) {
        LaunchBpbc<Word, true>(shape.splits, static_cast<int>(blocks), threads, d_tables, d_results,
                               args);
      } else {
        LaunchBpbc<Word, false>(shape.splits, static_cast<int>(blocks), threads, d_tables,
                                d_results, args);
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
    local.kernel = shape.cooperative ? BpbcKernel::kCooperative : BpbcKernel::kThreadPerWord;
    local.warps_per_group = shape.cooperative ? shape.warps : 0;
    local.splits_per_pass = shape.splits;
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
  int shared_per_block_ = 48 << 10, shared_per_sm_ = 48 << 10;
  std::vector<int> product_starts_;     // code offset of each product
  std::vector<int64_t> product_costs_;  // cumulative cost up to and including each product
  int64_t gates_ = 0;
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
