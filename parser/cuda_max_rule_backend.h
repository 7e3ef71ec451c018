// The CUDA max-rule backends (Berkeley's default decoding, parser/max_rule.h) on
// parser/device_backend.h's skeleton (batches, retries, the CPU fallback, background extraction):
// the device runs cuda/inside_outside/inside_outside.h's inside, outside and max-rule passes and
// copies back the max-rule arrays' finite entries (of cells x base symbols) and log P(w); trees are
// extracted on host threads (ExtractMaxRuleTree), overlapped with the device's next batch. With
// pruning, each batch first runs parser/cuda_pruner.h's pre-parses, which leave the fine grammar's
// allowed items on the device, and the passes run restricted to them (as the CPU pruned max-rule
// backend: the same items; results within cuda/inside_outside/inside_outside.h's tolerance); a
// sentence whose pruned chart has no parse is parsed again by the same passes unpruned. What the
// device cannot take (too long for the kernels' shared memory, over the budget, failing alone) is
// parsed on the CPU by the fast CPU max-rule path (with pruning: the CPU pruned one, sharing the
// pruner). ParseOutcome: tree = the max-rule tree, log_score = the max-rule score, log_likelihood =
// log P(w), kbest = the k best trees when DecoderOptions ask (decoded on the host from the device's
// charts).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "cuda/inside_outside/inside_outside.h"
#include "grammar_io/grammar.h"
#include "parser/backend.h"
#include "parser/coarse_to_fine.h"
#include "parser/device_backend.h"
#include "parser/inside_outside_cpu.h"
#include "parser/max_rule.h"

namespace cky {

struct CudaMaxRuleOptions {
  // max_batch_bytes 0: 85% of the free device memory, or with pruning 30% for the pre-parses and
  // 45% for the passes (the rest left for what pruning loses); given, 40% and 60% of it.
  DeviceBackendOptions device;
  // kbest > 1: the device also copies back the inside and outside charts, and the k best trees
  // are decoded from them on the CPU (parser/kbest.h), after a host max-rule pass over them.
  DecoderOptions decoder;
  // Coarse-to-fine pruning (parser/coarse_to_fine.h); none: exact. With pruning the device batches
  // default to 1,024 sentences.
  std::optional<PruningOptions> pruning;
  // Kernel variants (cuda/inside_outside/inside_outside.h DeviceInsideOutsideOptions, and the
  // pruner's pre-parse kernels, cuda/pruning/pruned_viterbi.h); 0 = the default.
  int cells_per_group = 8;  // pair-sum kernel: 8 or 16
  int pair_sum_kernel = 0;
  int max_rule_kernel = 0;
  int masked_dispatch = 0;
  int pruning_kernels = 0;
};

// One sentence's outcome from its device results: the max-rule tree, and with `host_rules` (k-best
// only; the batch must have kept its charts) the k best trees, from a host max-rule pass over the
// device's charts (it gives the scores below the unary layer that k-best needs; its best tree is
// the device's).
ParseOutcome DeviceMaxRuleOutcome(const Grammar& grammar, const SentenceInput& sentence,
                                  const cuda::IoResult& result, const SumProductRules* host_rules,
                                  const DecoderOptions& decoder);

// A sentence's max-rule arrays (MaxRuleChart, without the scores below the unary layer) from its
// device results' finite entries (DeviceInsideOutside's, or the device product's).
void DeviceMaxRuleChart(const cuda::IoResult& result, int32_t length, int32_t symbols,
                        MaxRuleChart* maxc);
// A sentence's inside and outside charts from its device results (the batch kept its charts).
void DeviceInsideOutsideCharts(const cuda::IoResult& result, int32_t length, int32_t states,
                               InsideOutsideCharts* charts);
// The device passes of a grammar (the max-rule backends' and the product's); fails without CUDA
// support or a device.
StatusOr<std::unique_ptr<cuda::DeviceInsideOutside>> CreateDeviceInsideOutside(
    const Grammar& grammar, const cuda::DeviceInsideOutsideOptions& options);

StatusOr<std::unique_ptr<Backend>> MakeCudaMaxRuleBackend(const Grammar& grammar,
                                                          const CudaMaxRuleOptions& options = {});

// For tests: one batch through the device, with the full charts copied back.
struct CudaInsideOutsideResult {
  InsideOutsideCharts charts;
  MaxRuleChart maxc;
};
StatusOr<std::vector<CudaInsideOutsideResult>> CudaInsideOutsideBatch(
    const Grammar& grammar, const std::vector<const LexicalScores*>& sentences,
    const cuda::DeviceInsideOutsideOptions& options = {});

}  // namespace cky
