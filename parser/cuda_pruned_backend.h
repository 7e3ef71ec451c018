// Coarse-to-fine pruned Viterbi parsing on a CUDA device: parser/coarse_to_fine.h's pruning and
// pruned Viterbi decoding, with the passes on the GPU (cuda/pruning/pruned_viterbi.h) and batches
// of many sentences at once.
//
// The projections, thresholds and level maps are the CPU pruner's (CoarseToFinePruner); each
// sentence's projected lexical scores are computed on the host with the CPU's code; the device runs
// every pre-parse level (masked inside, max-marginals, threshold) and the fine grammar's masked
// inside pass in double precision with the CPU's additions in the CPU's order, so its survivors at
// every level and its fine chart are bit-identical to the CPU pruner's (tested), and trees are
// extracted on the host from the copied-back chart (parser/tree_extraction.h), on all hardware
// threads. A sentence whose pruned chart has no parse (a pre-parse found no derivation, or pruning
// cut every fine one) is parsed exactly instead, by the exact CUDA Viterbi backend (the CPU's one
// when that cannot start): the CPU pruned backend does the same with its exact pass.
//
// Pruned max-rule (MakeCudaPrunedMaxRuleBackend): the same pre-parses on the device, which leave
// the fine grammar's allowed items there (cuda/pruning's fine_mask_only); the inside, outside and
// max-rule passes of cuda/inside_outside then run over the same batch restricted to those items
// (DeviceInsideOutside::MaskedMaxRuleBatch), as parser/coarse_to_fine.h's CPU pruned max-rule does
// (the same items, substate by substate; results equal within
// cuda/inside_outside/inside_outside.h's tolerance); trees are extracted on the host. A sentence
// whose pruned chart has no parse is parsed exactly (the exact CUDA max-rule backend), as on the
// CPU; one the device cannot take (too long, out of memory, a device failure) by the CPU pruned
// max-rule backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/status.h"
#include "grammar_io/grammar.h"
#include "parser/backend.h"
#include "parser/chart.h"
#include "parser/coarse_to_fine.h"
#include "parser/device_batches.h"

namespace cky {

struct CudaPrunedOptions {
  size_t max_batch_bytes = 0;  // device bytes per batch; 0 = 60% of free device memory
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
  // Pruned max-rule: the masked passes' dispatch (cuda/inside_outside/inside_outside.h
  // DeviceInsideOutsideOptions::masked_dispatch); 0: its default.
  int masked_dispatch = 0;
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
                                                            const CudaPrunedOptions& options);
  // Sorts the sentences by length, cuts them into batches that fit the device, runs each and hands
  // it to `visit` (on the calling thread). Sentences the device cannot take even alone are listed
  // in *failed (`why` says why) and not visited. Per-level item counts go to *stats when given.
  void Run(std::span<const LexicalScores* const> sentences,
           const std::function<void(CudaPrunedBatch&)>& visit, std::vector<size_t>* failed,
           std::string* why, PruningStats* stats = nullptr);
  const CoarseToFinePruner& pruner() const { return *pruner_; }
  // Sets CudaPrunedOptions::also_needs and also_budget after creation.
  void SetBatchLimit(std::function<size_t(int32_t)> also_needs, size_t also_budget);
  // The device's per-level timing (DevicePrunedViterbi::ProfileReport), after SetProfiling(true).
  void SetProfiling(bool on);
  std::string ProfileReport() const;

 private:
  struct Impl;
  explicit CudaCoarseToFine(std::unique_ptr<Impl> impl);
  // One device batch, visited when it succeeds; what failed otherwise (Run retries smaller).
  std::optional<DeviceFailure> RunBatch(std::span<const LexicalScores* const> sentences,
                                        const std::vector<size_t>& batch,
                                        const std::function<void(CudaPrunedBatch&)>& visit,
                                        PruningStats* stats);
  std::unique_ptr<Impl> impl_;
  const CoarseToFinePruner* pruner_ = nullptr;
  // Host seconds: projected lexical scores, device batches, sorting the entries, the visits.
  double project_seconds_ = 0, device_seconds_ = 0, sort_seconds_ = 0, visit_seconds_ = 0;
};

// The pruned Viterbi backend on the device (see above). Fails without a device.
StatusOr<std::unique_ptr<ViterbiBackend>> MakeCudaPrunedBackend(
    const Grammar& grammar, const PruningOptions& pruning, const CudaPrunedOptions& options = {});

// The pruned max-rule backend on the device (see above; `decoding` asks for k-best lists, decoded
// on the host from the device's pruned charts). options.max_batch_bytes, when set, is shared by
// the pre-parses (40%) and the inside-outside passes (60%); 0: 30% and 45% of the free device
// memory, the rest left to the exact backend that takes the sentences pruning loses. Fails
// without a device.
StatusOr<std::unique_ptr<ViterbiBackend>> MakeCudaPrunedMaxRuleBackend(
    const Grammar& grammar, const PruningOptions& pruning, const CudaPrunedOptions& options = {},
    const DecoderOptions& decoding = {});

}  // namespace cky
