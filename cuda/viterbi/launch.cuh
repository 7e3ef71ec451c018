// The host-side seams between the dispatch (device_viterbi.cu) and the kernel files (CUDA types:
// include only from .cu files). A kernel launches from the file that defines it, so each file
// offers its launches here: the binary pass of each kernel family (a BinaryPass made from the
// registry's policy for a variant name, variants.h), and the kernels every variant shares (fill
// and lexical rows, the unary pass, presence masks and statistics; the tree search: extract.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cuda/viterbi/device_common.cuh"
#include "cuda/viterbi/variants.h"
#include "cuda/viterbi/viterbi.h"

namespace cky::cuda::viterbi {

// What a variant asks of the dispatch besides its binary kernels.
struct PassTraits {
  bool aligned = false;      // -a4: the unary pass also writes the aligned chart copy
  int mask_group = 0;        // -m: cells per group of the presence masks (0: no masks)
  bool split_table = false;  // -t: the mask kernel also writes the split table
  bool unary_cells = false;  // -u: the unary pass over several cells per block
};

// The device, as the launches size their grids and shared memory.
struct DeviceLimits {
  int max_shared_optin = 48 * 1024;
  int num_sms = 132;
};

// One span length's binary launch: what the dispatch holds on the device for it.
struct SpanLaunch {
  LevelArgs a;
  int count = 0;  // cells of the span length (items a.item_offset ..)
  cudaStream_t stream = nullptr;
  DeviceLimits device;
  const unsigned char* present = nullptr;  // [cell][symbol] presence flags
  int num_symbols = 0;
  // -m: the span length's group masks (GroupMaskKernel); null without.
  const unsigned* left_mask = nullptr;
  const unsigned* right_mask = nullptr;
  int mask_words = 1;
  const unsigned* split_table = nullptr;  // -t: the span length's split table; null without
  size_t aligned_floats = 0;              // the batch's aligned chart (-o needs < 2^32 floats)
  // The span length's first item per start position, then its end (block-reduce-seq).
  const std::vector<int>* starts = nullptr;
};

// A kernel family's binary pass for one variant: the grammar arrays its kernels read, and the
// launches of one span length.
class BinaryPass {
 public:
  virtual ~BinaryPass() = default;
  virtual PassTraits traits() const = 0;
  // Uploads the family's view of the grammar. w: the binary log-probabilities as floats;
  // aligned_first: per symbol, its first position in an aligned row (traits().aligned only).
  // False, with *error set (or empty: an upload failed), when the grammar does not fit.
  virtual bool Init(const GrammarView& g, const std::vector<float>& w,
                    const std::vector<int>& aligned_first, const DeviceLimits& device,
                    std::string* error) = 0;
  // Queues the span length's binary kernel(s) on s.stream; false with *error when a kernel
  // cannot be launched (shared memory).
  virtual bool Launch(const SpanLaunch& s, std::string* error) = 0;
  // Kernels 7-9: the tiles' child symbols (B, C) and their number (the mask statistics).
  virtual const int2* tile_symbols() const { return nullptr; }
  virtual int num_tiles() const { return 0; }
};

// The pass of variant `name` when it is one of kFamily's: make(policy), a value of the variant's
// policy type, builds it (and may return null to leave it to another file); else null.
template <Family kFamily, typename Make>
std::unique_ptr<BinaryPass> FindFamilyPass(const std::string& name, Make make) {
  std::unique_ptr<BinaryPass> pass;
  ForEachVariant([&](const auto& variant) {
    using P = PolicyOf<decltype(variant)>;
    if constexpr (P::kFamily == kFamily) {
      if (!pass && name == variant.name) pass = make(P{});
    }
  });
  return pass;
}

// Each family file's part of the registry: the pass of variant `name` when it is one of the
// family's, else null.
std::unique_ptr<BinaryPass> MakePaperPass(const std::string& name);         // paper.cu
std::unique_ptr<BinaryPass> MakePairFusedPass(const std::string& name);     // pair_fused.cu
std::unique_ptr<BinaryPass> MakePairAccPass(const std::string& name);       // pair_acc.cu
std::unique_ptr<BinaryPass> MakePairSegPass(const std::string& name);       // pair_seg.cu
std::unique_ptr<BinaryPass> MakePairSegMultiPass(const std::string& name);  // pair_seg_multi.cu

// unary.cu: `blocks` blocks fill data[0, count) with value (0 blocks: an invalid launch, as
// CKY_FAULT_INJECT makes one); span length 1's pre = the lexical rows.
void LaunchFill(float* data, size_t count, float value, int blocks, cudaStream_t stream);
void LaunchLexical(const LevelArgs& a, int count, const float* lexical, cudaStream_t stream);

// The unary layer of one span length (unary.cu): chart = max(pre, unaries over pre), the cells'
// presence flags, the aligned copy (when aligned_chart is set), the caller's allowed mask.
constexpr int kUnaryCells = 4;  // most cells per block of UnaryCellsKernel (-u)
struct UnaryArgs {
  float* chart;
  const int* unary_begin;
  const int* unary_child;
  const float* unary_w;
  const int* state_symbol;
  unsigned char* present;
  int num_symbols;
  float* aligned_chart;  // null: none
  const int* aligned_index;
  const unsigned char* allowed;  // null: every symbol allowed
};
// per_block > 1: UnaryCellsKernel with that many cells per block; else UnaryKernel.
void LaunchUnary(const LevelArgs& a, int count, int per_block, const UnaryArgs& u,
                 cudaStream_t stream);

// masks.cu: the presence masks of one span length's groups of `group_size` cells (and the split
// table when split_table is set); the statistics' counts (SetPresenceStats).
void LaunchGroupMasks(const LevelArgs& a, int groups, const unsigned char* present, int num_symbols,
                      int num_items, int group_size, int words, unsigned* left_mask,
                      unsigned* right_mask, unsigned* split_table, cudaStream_t stream);
void LaunchPresenceStats(const LevelArgs& a, int count, const unsigned char* present,
                         int num_symbols, unsigned long long* count_out, cudaStream_t stream);
void LaunchSkipStats(const int2* symbols, int tiles, int groups, const unsigned* left_mask,
                     const unsigned* right_mask, int words, unsigned long long* skipped,
                     cudaStream_t stream);

}  // namespace cky::cuda::viterbi
