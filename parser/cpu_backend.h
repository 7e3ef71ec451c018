// The CPU backends, one class composed of a decoder and optional pruning: sentences in parallel on
// `threads` threads, each decoded with
//   Viterbi, reference: ReferenceViterbiInside then tree extraction (parser/viterbi_reference.h:
//                       THE oracle, never tuned; one thread);
//   Viterbi, fast:      CpuViterbi (parser/viterbi_cpu.h), the same charts bit for bit;
//   max-rule, reference / fast: inside-outside and Berkeley's max-rule pass (parser/max_rule.h),
//                       k-best lists when DecoderOptions ask;
// and with pruning (fast decoders only): coarse-to-fine pre-parses (parser/coarse_to_fine.h), the
// fine pass over the surviving items, and the sentence parsed again unpruned when pruning cut
// every derivation. Each sentence's outcome goes to the listener as soon as it is done.
#pragma once

#include <memory>
#include <optional>

#include "common/status.h"
#include "grammar_io/grammar.h"
#include "parser/backend.h"
#include "parser/chart.h"
#include "parser/coarse_to_fine.h"

namespace cky {

struct CpuBackendOptions {
  DecoderKind decoder = DecoderKind::kMaxRule;
  bool reference = false;  // the reference passes, one sentence after another
  int threads = 0;         // 0: all hardware threads
  DecoderOptions decoding;
  // Coarse-to-fine pruning; not with `reference`. `pruner`, when given, is used as it is (a
  // pruner made for the same grammar and shared with another backend); else one is made from
  // `pruning`.
  std::optional<PruningOptions> pruning;
  std::shared_ptr<const CoarseToFinePruner> pruner;
};

// Fails only for pruning with the reference or a pruner that cannot be made.
StatusOr<std::unique_ptr<Backend>> MakeCpuBackend(const Grammar& grammar,
                                                  const CpuBackendOptions& options);

// Shorthands: Viterbi reference ("reference"), Viterbi fast ("cpu"), max-rule reference
// ("reference/max-rule"), max-rule fast ("cpu/max-rule"), pruned ("cpu/pruned",
// "cpu/pruned-max-rule").
std::unique_ptr<Backend> MakeReferenceBackend(const Grammar& grammar);
std::unique_ptr<Backend> MakeCpuBackend(const Grammar& grammar, int threads);
std::unique_ptr<Backend> MakeReferenceMaxRuleBackend(const Grammar& grammar,
                                                     const DecoderOptions& decoding = {});
std::unique_ptr<Backend> MakeCpuMaxRuleBackend(const Grammar& grammar, int threads,
                                               const DecoderOptions& decoding = {});
StatusOr<std::unique_ptr<Backend>> MakePrunedCpuBackend(const Grammar& grammar,
                                                        DecoderKind decoder,
                                                        const PruningOptions& pruning,
                                                        int threads,
                                                        const DecoderOptions& decoding = {});

// A Viterbi outcome from a sentence's chart: the tree extracted from it (Berkeley's search,
// parser/tree_extraction.h), its root score, or kNoParse. Every Viterbi backend ends with it.
ParseOutcome ViterbiOutcome(const Grammar& grammar, const SentenceInput& sentence,
                            const Chart& chart);

}  // namespace cky
