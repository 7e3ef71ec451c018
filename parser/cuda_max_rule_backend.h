// The CUDA max-rule backend (Berkeley's default decoding, parser/max_rule.h), adapted to
// parser/backend.h from cuda/inside_outside/inside_outside.h: sentences are sorted by length and
// cut into batches that fit the device; the device runs the inside, outside and max-rule passes and
// copies back the max-rule arrays (cells x base symbols) and log P(w); trees are extracted on the
// CPU (ExtractMaxRuleTree) on all hardware threads, overlapped with the device's next batch.
//
// Out of memory or another device failure: the batch is split in halves and retried, down to single
// sentences; a sentence that fails alone, does not fit on its own, or is longer than the kernels'
// shared memory allows (DeviceInsideOutside::MaxLength, a few hundred words) is parsed on the CPU
// (the fast CPU max-rule path) and its outcome's message says so (status kOk). Outcomes come back
// one per input, in input order. ParseOutcome: tree = the max-rule tree, log_score = the max-rule
// score, log_likelihood = log P(w), kbest = the k best trees when options.decoder asks.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "cuda/inside_outside/inside_outside.h"
#include "grammar_io/grammar.h"
#include "parser/backend.h"
#include "parser/inside_outside_cpu.h"
#include "parser/max_rule.h"

namespace cky {

struct CudaMaxRuleOptions {
  size_t max_batch_bytes = 0;     // device bytes per batch; 0 = 85% of free device memory
  int max_batch_sentences = 256;  // sentences per batch at most
  int extraction_threads = 0;     // CPU threads for tree extraction; 0 = all
  int cells_per_group = 8;        // pair-sum kernel (cuda/inside_outside/inside_outside.h): 8 or 16
  // Kernel variants (cuda/inside_outside/inside_outside.h's options); 0 = the device's default.
  int pair_sum_kernel = 0;
  int max_rule_kernel = 0;
  // A sentence that fails on the device on its own (out of memory, a device error) is parsed on
  // the CPU; false: its outcome says kOutOfMemory or kFailed instead (the multi-device backend
  // then hands it, or the whole device's work, elsewhere).
  bool cpu_fallback = true;
  // kbest > 1: the device also copies back the inside and outside charts, and the k best trees
  // are decoded from them on the CPU (parser/kbest.h), after a host max-rule pass over them.
  DecoderOptions decoder;
};

// The grammar's arrays as cuda/inside_outside/inside_outside.h takes them (views into `grammar`).
cuda::SumGrammarArrays CudaSumGrammarArrays(const Grammar& grammar);

// One sentence's outcome from its device results: the max-rule tree, and with `host_rules` (k-best
// only; the batch must have kept its charts) the k best trees, from a host max-rule pass over the
// device's charts (it gives the scores below the unary layer that k-best needs; its best tree is
// the device's).
ParseOutcome DeviceMaxRuleOutcome(const Grammar& grammar, const SentenceInput& sentence,
                                  const cuda::IoResult& result, const SumProductRules* host_rules,
                                  const DecoderOptions& decoder);

StatusOr<std::unique_ptr<ViterbiBackend>> MakeCudaMaxRuleBackend(
    const Grammar& grammar, const CudaMaxRuleOptions& options = {});

// For tests: one batch through the device, with the full charts copied back.
struct CudaInsideOutsideResult {
  InsideOutsideCharts charts;
  MaxRuleChart maxc;
};
StatusOr<std::vector<CudaInsideOutsideResult>> CudaInsideOutsideBatch(
    const Grammar& grammar, const std::vector<const LexicalScores*>& sentences,
    const cuda::DeviceInsideOutsideOptions& options = {});

}  // namespace cky
