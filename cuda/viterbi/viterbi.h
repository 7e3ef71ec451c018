// Exhaustive Viterbi CKY inside passes on a CUDA device, in plain C++ (no CUDA types).
//
// The grammar is uploaded once (log-probabilities converted to float); batches of sentences then
// stream through: the caller hands over each sentence's lexical log-scores and gets back the
// sentence's chart, in parser/chart.h's layout (cells by span length, then start; each cell holds
// num_states post-unary float scores, -infinity where a state cannot cover the span). Trees are
// read from those charts by the caller (parser/cuda_backend.cpp does it on the CPU).
//
// The recurrence is parser/viterbi_reference.h's: per span length, a binary pass (each kernel
// variant below computes pre[A] = max over rules A -> B C and split points of
// rule + chart[left][B] + chart[right][C]), then a unary pass on the device,
// chart[A] = max(pre[A], max_u unary(A -> B) + pre[B]). Scores are floats; the adapter compares
// trees to the double-precision reference within the extraction's relative tolerance (1e-5).
//
// Kernel variants (ViterbiKernelNames() lists them; the first is the default):
//   pair-seg-g8-a4 (the default), pair-seg-g16-a4, pair-seg-g8, pair-seg-g16, pair-seg-g8-u2,
//   pair-seg-g8-nopad     pair-fused-gG-wide with the split maxima stored in a padded layout
//                         (no 32-way shared-memory bank conflicts; -nopad leaves it out), the rule
//                         phase's warp cut into R rule slots x 32 / R cell slices (R by the
//                         parent's rule count in the tile: short reductions), and, for -a4, an
//                         aligned copy of the chart rows (each symbol's substates start at a
//                         multiple of 4 floats) read with float4 loads; -u2 unrolls the split loop.
//   pair-fused-g8-wide, pair-fused-g16-wide: as below with bands of up to 1,024
//                         substate pairs (fewer tiles, fewer atomics).
//   pair-fused-g8-classes: pair-fused-g8 launched once per tile size class (<= 64, 128, 256, 512).
//   pair-fused-g16, -g8, -g4  beyond the paper: per child pair tile (B, C) and group of 16 (8, 4)
//                         cells of one span length, the max over split points of
//                         chart[left][B_b] + chart[right][C_c] is taken once per substate pair
//                         (Dunlop et al. 2011), then every rule X_x -> B_b C_c adds its log-prob
//                         (a warp per parent state, float4 reads of the G cells' maxima); split
//                         points whose cells lack B or C are skipped (per-cell symbol presence
//                         flags); a base pair with more than 512 substate pairs is cut into bands
//                         of B's substates (virtual pairs); register blocking (4 x 4 substate
//                         pairs per thread); global atomic max per parent and cell.
//   pair-acc-g8, pair-acc-g16  the pair-fused computation with the grid's roles swapped: a block
//                         takes one group of 8 (16) cells and a strided share of all tiles, keeps
//                         its parents' maxima in shared memory across those tiles, and flushes them
//                         with one global atomic max per (cell, state): far fewer global atomics.
//   thread-atomic-global  Yi et al.: one thread per rule, global float atomic max per parent.
//   thread-atomic-shared  one thread per rule, block-local shared atomic max over the block's
//                         parents, then one global atomic max per parent touched.
//   block-atomic-shared   one block per (virtual) parent, a thread per rule, shared atomic max.
//   block-reduce          one block per (virtual) parent, tree-shaped parallel reduction.
//   block-reduce-staged   block-reduce with the two child cells of each split point staged in
//                         shared memory (the paper's sh_scores_L / sh_scores_R).
//   block-reduce-seq      block-reduce with spans in sequence (one launch per start position)
//                         instead of in parallel (all starts and sentences in one grid).
// Virtual parents: the block variants split a parent with more rules than a block (256 threads)
// into several virtual parents, each one block; they merge through the global atomic max.
// Every variant reads rule arrays through the read-only cache (__ldg) and keeps the chart in the
// paper's scores[length][start][state] layout.
//
// Float atomic max: the sign trick (non-negative floats order like signed ints, negative ones in
// reverse like unsigned ints), so one hardware atomicMax/atomicMin, no CAS retry loop; -0.0 is
// canonicalised to +0.0 first. Correct for every non-NaN value including -infinity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cky::cuda {

// A view of cky::Grammar's arrays (grammar_io/grammar.h), so that this header needs no parser type.
struct GrammarArrays {
  int32_t num_states = 0;
  int32_t num_symbols = 0;
  const int32_t* state_symbol = nullptr;          // num_states
  const int32_t* symbol_first_state = nullptr;    // num_symbols
  const int32_t* symbol_num_substates = nullptr;  // num_symbols
  int64_t num_binary = 0;                         // sorted by parent
  const int32_t* binary_parent = nullptr;
  const int32_t* binary_left = nullptr;
  const int32_t* binary_right = nullptr;
  const double* binary_log_prob = nullptr;
  const int32_t* binary_parent_begin = nullptr;  // num_states + 1
  int64_t num_unary = 0;                         // closed, identities removed, sorted by parent
  const int32_t* unary_child = nullptr;
  const double* unary_log_prob = nullptr;
  const int32_t* unary_parent_begin = nullptr;  // num_states + 1
};

// The variant names; the first is the default (the fastest measured).
std::vector<std::string> ViterbiKernelNames();

struct DeviceViterbiOptions {
  std::string kernel;  // "" = default
  // Device bytes a batch may use; 0 = 85% of the free memory at creation.
  size_t max_batch_bytes = 0;
};

// One sentence of a batch: its length and its lexical log-scores (length x num_states, row-major,
// as parser/viterbi_reference.h's LexicalScores).
struct SentenceRef {
  int32_t length = 0;
  const double* lexical = nullptr;
};

// Device bytes one sentence of `length` words needs in a batch: chart and binary maxima (floats),
// symbol presence flags, lexical rows and the cell list.
// (DeviceViterbi::BytesForSentence adds the -a4 kernels' aligned chart copy to this.)
inline size_t BatchBytesForSentence(int32_t num_states, int32_t num_symbols, int32_t length) {
  const size_t cells = static_cast<size_t>(length) * (length + 1) / 2;
  return cells * num_states * sizeof(float) * 2 + cells * num_symbols +
         static_cast<size_t>(length) * num_states * sizeof(float) + cells * 16;
}

enum class BatchResult { kOk, kOutOfMemory, kFailed };

class DeviceViterbi {
 public:
  virtual ~DeviceViterbi() = default;
  // Uploads the grammar. Returns null and sets *error when there is no device, the kernel name is
  // unknown, or the grammar does not fit.
  static std::unique_ptr<DeviceViterbi> Create(const GrammarArrays& grammar,
                                               const DeviceViterbiOptions& options,
                                               std::string* error);

  virtual const std::string& kernel() const = 0;
  // Device bytes one sentence of `length` words needs in a batch.
  virtual size_t BytesForSentence(int32_t length) const = 0;
  // The batch budget in bytes (options.max_batch_bytes or the default).
  virtual size_t BatchBudget() const = 0;

  // Measuring: when on, InsideBatch times its phases with CUDA events (device time of uploads and
  // fills, binary passes, unary passes, the chart copy back) and the call's host wall time;
  // ProfileReport() sums them over the calls since profiling was turned on.
  virtual void SetProfiling(bool on) = 0;
  virtual std::string ProfileReport() const = 0;

  // Runs the inside pass for every sentence of the batch (lengths >= 1). On kOk, (*charts)[i]
  // points to sentence i's chart (Chart::NumCells(length) * num_states floats), valid until the
  // second next call (two host buffers alternate, so a caller can read one batch's charts while the
  // device computes the next). kOutOfMemory: the device could not hold the batch (nothing was
  // computed; split it and retry).
  virtual BatchResult InsideBatch(const std::vector<SentenceRef>& batch,
                                  std::vector<const float*>* charts, std::string* error) = 0;
};

}  // namespace cky::cuda
