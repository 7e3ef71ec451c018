// Coarse-to-fine pruning on a CUDA device (parser/coarse_to_fine.h's pruner, the passes on the
// GPU: cuda/pruning/pruned_viterbi.h), for batches of many sentences at once: the device
// component the CUDA backends compose with (parser/cuda_backend.h's pruned Viterbi,
// parser/cuda_max_rule_backend.h's pruned max-rule).
//
// The projections, thresholds and level maps are the CPU pruner's (CoarseToFinePruner, shared
// with the CPU fallback); each sentence's projected lexical scores are computed on the host with
// the CPU's code; the device runs every pre-parse level (masked inside, max-marginals, threshold)
// in double precision with the CPU's additions in the CPU's order, so its survivors at every level
// are bit-identical to the CPU pruner's (tested). Then either the fine grammar's masked Viterbi
// inside pass runs on the device too (bit-identical to the CPU pruned backend's; its best trees
// are read on the device, or with device_trees false its chart's finite entries come back), or,
// with fine_mask_only, the fine grammar's allowed items stay on the device for another pass
// (pruned max-rule).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/status.h"
#include "cuda/viterbi/viterbi.h"
#include "grammar_io/grammar.h"
#include "parser/backend.h"
#include "parser/chart.h"
#include "parser/coarse_to_fine.h"
#include "parser/device_batches.h"

namespace cky {

struct CudaPrunerOptions {
  size_t max_batch_bytes = 0;  // device bytes per batch; 0 = free_memory_share of the free memory
  double free_memory_share = 0.6;  // (when the device's part is made)
  int max_batch_sentences = 1024;
  int threads = 0;  // host threads (projected lexical scores, extraction); 0 = all
  bool keep_level_survivors = false;  // tests: copy every level's survivors back
  // Max-rule: the fine grammar is not parsed; each batch's fine mask stays on the device
  // (CudaPrunedBatch::fine_mask). Batches also fit a second budget: also_needs(length) bytes a
  // sentence, also_budget in all (the inside-outside passes' memory).
  bool fine_mask_only = false;
  std::function<size_t(int32_t)> also_needs;
  size_t also_budget = 0;
  // Pre-parse kernel variant (cuda/pruning/pruned_viterbi.h DevicePrunedViterbiOptions); 0: its
  // default.
  int pruning_kernels = 0;
  // Pruned Viterbi: each sentence's best tree is read on the device from the fine chart
  // (CudaPrunedBatch::trees) instead of the chart's finite entries coming back (false: the
  // entries, for FillChart).
  bool device_trees = true;
  // Tests: DevicePrunedViterbiOptions::tree_node_slots (0: room for any tree).
  int tree_node_slots = 0;
  // Tests: DevicePrunedViterbiOptions::dense_chunk (0: as many as fit).
  int dense_chunk = 0;
  // Tests: the pair kernels' tiles of a symbol of at least this many states cut by an earlier
  // level's states (cuda::PruningLevel::pair_groups); 0: the default (32), -1: symbols whole.
  int pair_group_substates = 0;
  // Tests: the pair layouts' sparse tiles (cuda::BuildPairSumLayout's sparse_below); negative:
  // cuda::kMaxPlusSparseBelow, 0: every tile dense, above 1: every tile sparse.
  double pair_sparse_below = -1;
  // Tests: target cells a pair-kernel group at every level (cuda::DevicePrunedViterbiOptions::
  // pair_cells: 8 or 16); 0: by the level.
  int pair_cells = 0;
  // Pruned Viterbi's backend (MakeCudaPrunedBackend): DeviceBackendOptions::cpu_fallback (false
  // under --devices, so that a failing device is seen and its work moved).
  bool cpu_fallback = true;
  // BackendOptions::first_lexical: Create projects these sentences' scores (those with an
  // ahead_id) to the first pre-parse level beside the device's creation, and a batch of them
  // takes those projections instead of making its own.
  std::function<std::span<const LexicalScores>()> first_lexical;
};

// One batch's results, as CudaCoarseToFine::Run hands them over (views, valid during the call).
struct CudaPrunedBatch {
  std::vector<size_t> indices;   // which sentences of Run's span, in batch order
  std::vector<int32_t> lengths;  // their lengths
  int32_t num_states = 0;        // the fine grammar's
  // The fine grammar's masked inside charts, sparse: batch sentence b's finite entries are
  // entry_index[j] -> entry_score[j] for j in [entry_begin[b], entry_begin[b + 1]) (indices into
  // its Chart's data()); all others are -infinity.
  std::vector<int64_t> entry_begin, entry_index;
  std::vector<double> entry_score;
  // keep_level_survivors: [batch sentence][level] -> NumCells(n) * level states bytes (1: kept).
  std::vector<std::vector<const uint8_t*>> survivors;
  // device_trees (no entries then): per batch sentence its tree read on the device (kTree), no
  // parse (kNoParse), or kChart (no chart: the device search stopped where the host's goes further;
  // parse that sentence on the host), and the fine chart's ROOT score over the sentence.
  std::vector<cuda::DeviceTree> trees;
  std::vector<double> root_score;
  // fine_mask_only: device memory, the batch's cells in order x num_states bytes, 1 = allowed
  // (cuda/pruning/pruned_viterbi.h's FineMask); valid during the visit. No entries then.
  const uint8_t* fine_mask = nullptr;

  // Batch sentence b's fine chart into *chart, which must hold only -infinity (a fresh Chart, or
  // one ClearChart cleaned): memory is reused, only the finite entries are written.
  void FillChart(size_t b, Chart* chart) const;
  // Sets the entries FillChart wrote back to -infinity.
  void ClearChart(size_t b, Chart* chart) const;
};

// The device passes over batches of sentences.
class CudaCoarseToFine {
 public:
  ~CudaCoarseToFine();
  static StatusOr<std::unique_ptr<CudaCoarseToFine>> Create(const Grammar& fine,
                                                            const PruningOptions& pruning,
                                                            const CudaPrunerOptions& options);
  // Sorts the sentences by length, cuts them into batches that fit the device, runs each and hands
  // it to `visit` (on the calling thread). Sentences the device cannot take even alone are listed
  // in *failed (`why` says why) and not visited. Per-level item counts go to *stats when given.
  void Run(std::span<const LexicalScores* const> sentences,
           const std::function<void(CudaPrunedBatch&)>& visit, std::vector<size_t>* failed,
           std::string* why, PruningStats* stats = nullptr);
  // One device batch (sentences[batch]), visited when it succeeds; what failed otherwise (the
  // caller retries smaller). Per-level item counts go to *stats when given. beside_device, when
  // given, runs on the calling thread once the batch's last kernels are queued, while the device
  // computes them (the caller's work for the same batch): with fine_mask_only it gets the fine
  // mask (as CudaPrunedBatch::fine_mask) and the opaque CUDA event recorded once the mask is
  // written (cuda/pruning/pruned_viterbi.h's FineMaskReady), so that it may queue device work
  // that reads the mask behind that event; that work must be finished when it returns. Else both
  // are null. `next_batch`, when given, holds the sentences of the batch the caller runs next:
  // their first pre-parse level's lexical scores are projected while the device computes this
  // batch, so that the next batch's first kernels need not wait for the host.
  using BesideDevice = std::function<void(const uint8_t* fine_mask, const void* mask_ready)>;
  std::optional<DeviceFailure> RunBatch(std::span<const LexicalScores* const> sentences,
                                        const std::vector<size_t>& batch,
                                        const std::function<void(CudaPrunedBatch&)>& visit,
                                        PruningStats* stats = nullptr,
                                        const BesideDevice& beside_device = {},
                                        std::span<const LexicalScores* const> next_batch = {});
  // Device bytes a sentence of `length` words needs in a batch, and the batch budget.
  size_t BytesForSentence(int32_t length) const;
  size_t BatchBudget() const;
  const CoarseToFinePruner& pruner() const { return *pruner_; }
  // The same pruner, for a CPU backend that parses what the device cannot.
  std::shared_ptr<const CoarseToFinePruner> shared_pruner() const { return pruner_; }
  // Per level (the pre-parse levels, then the fine grammar): how many state groups tile its pair
  // kernels (CudaPrunerOptions::pair_group_substates), 0 where they are tiled by symbols.
  const std::vector<int32_t>& pair_groups() const;
  // The device's per-level timing (DevicePrunedViterbi::ProfileReport), after SetProfiling(true).
  void SetProfiling(bool on);
  std::string ProfileReport() const;

 private:
  struct Impl;
  explicit CudaCoarseToFine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<const CoarseToFinePruner> pruner_;
  // Host seconds: projected lexical scores, device batches, sorting the entries, the visits.
  double project_seconds_ = 0, device_seconds_ = 0, sort_seconds_ = 0, visit_seconds_ = 0;
  bool profiling_ = false;
  PruningStats kept_;  // per level, summed over the batches since SetProfiling
};

}  // namespace cky
