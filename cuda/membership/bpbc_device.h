// Bitwise-parallel bulk CKY (BPBC) on the GPU, after Fujita, Nakano and Ito, "Bitwise Parallel Bulk
// Computation on the GPU, with Application to the CKY Parsing for Context-free Grammars" (IEICE
// 2017, with its rule minimisation and dynamic scheduling). Plain C++; built from bpbc_device.cu,
// or from bpbc_device_stub.cpp without CUDA (then Create fails: no device).
//
// Bit b of a machine word belongs to string b of a group, so one thread runs the CKY of 32 or 64
// strings of equal length at once, evaluating the grammar's AND/OR circuit (BpbcProgram) with
// bitwise operations. Two kernels (BpbcKernel):
//  1. thread per word (the paper's mapping): a block of threads_per_block threads takes a "string
//     group" of threads_per_block * word_bits strings; each thread walks the whole circuit, its
//     operands read from the CKY table in global memory.
//  2. cooperative: a block of warps_per_group warps takes a group of 32 * word_bits strings; the
//     operand cells of a few splits are staged in shared memory and the warps share out the
//     circuit's products, so that each gate is a shared-memory load instead of a global one.
// Blocks take groups statically (block b: groups b, b + B, ...) or dynamically (an atomic counter
// hands out the next group, longest strings first). The number of blocks is bounded by the memory
// left for their CKY tables; strings are uploaded in memory-bounded batches.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"

namespace cky::cuda {

// The circuit W = U (x) V of a grammar as a flat program, shared by the CPU and GPU evaluators.
// A product is (OR of U[l] for l in L) AND (OR of V[r] for r in R), ORed into W[parent]; the
// products of a parent are consecutive. Encoded in `code` as: parent, |L|, |R|, L..., R...
// Chain rules (parent ->+ child) are applied to every cell afterwards: W[parent] |= W[child].
struct BpbcProgram {
  int32_t num_nonterminals = 0;
  int32_t start = 0;
  int32_t num_products = 0;
  std::vector<uint16_t> code;
  std::vector<uint16_t> unary_parent, unary_child;
  std::vector<int32_t> terminal_offsets, terminal_parents;  // CSR, as in MembershipGrammar
};

enum class Scheduling { kStatic, kDynamic };

// kAuto: cooperative for circuits of 512 gates or more whose staged operand cells fit in shared
// memory (every such configuration of the paper's tables), else thread per word.
enum class BpbcKernel { kAuto = 0, kThreadPerWord = 1, kCooperative = 2 };

struct BpbcGpuOptions {
  int word_bits = 32;  // 32 or 64 strings per machine word
  Scheduling scheduling = Scheduling::kDynamic;
  BpbcKernel kernel = BpbcKernel::kAuto;
  int threads_per_block = 32;  // kThreadPerWord only
  int warps_per_group = 0;     // kCooperative only (1 to 32); 0: chosen from the circuit's size
  // Splits evaluated per pass over the circuit. kThreadPerWord: 1 (the paper's order), 4 or 8;
  // kCooperative: 1, 2, 4 or 8 (fewer when the staged cells would not fit in shared memory).
  // 0: 4 for kThreadPerWord, the most shared memory allows for kCooperative.
  int splits_per_pass = 0;
  // Bytes of device memory for the CKY tables of all blocks; 0: 60% of the free memory. The number
  // of blocks is min(groups, this / table bytes per block, max_blocks).
  size_t table_memory_bytes = 0;
  int max_blocks = 0;  // 0: no limit beyond memory (and 64 blocks per SM)
  // Strings (tokens and results) per upload batch, bounding host-to-device buffers.
  int64_t batch_strings = int64_t{1} << 22;
};

struct BpbcGpuStats {
  double kernel_ms = 0;  // sum of kernel times (CUDA events)
  double total_ms = 0;   // uploads, kernels and downloads
  int64_t groups = 0;
  int32_t blocks = 0;       // blocks of the last launch
  int32_t block_limit = 0;  // blocks a launch with enough string groups would get
  int32_t batches = 0;
  BpbcKernel kernel = BpbcKernel::kAuto;  // the kernel that ran (never kAuto after a run)
  int32_t warps_per_group = 0, splits_per_pass = 0;  // as launched
};

class BpbcGpu {
 public:
  // Uploads the program. Fails without a CUDA device or for a program over 65535 nonterminals.
  static StatusOr<std::unique_ptr<BpbcGpu>> Create(const BpbcProgram& program);
  virtual ~BpbcGpu() = default;
  // accepted[s] = 1 when the grammar derives strings[s] (terminal ids; empty strings give 0).
  // Strings of any lengths are grouped by length internally; at most `max_length` terminals each.
  // The strings are strings[0 .. count).
  virtual Status Recognize(const std::vector<int32_t>* strings, size_t count,
                           const BpbcGpuOptions& options, std::vector<uint8_t>* accepted,
                           BpbcGpuStats* stats) = 0;
  Status Recognize(const std::vector<std::vector<int32_t>>& strings, const BpbcGpuOptions& options,
                   std::vector<uint8_t>* accepted, BpbcGpuStats* stats) {
    return Recognize(strings.data(), strings.size(), options, accepted, stats);
  }
  static constexpr int32_t kMaxLength = 256;
};

}  // namespace cky::cuda
