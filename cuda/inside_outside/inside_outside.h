// Exact sum-product inside and outside passes over a split grammar, and Berkeley's max-rule (maxc)
// pass, on a CUDA device, in plain C++ (no CUDA types). The quantities are
// parser/inside_outside_cpu.h's and parser/max_rule.h's (the CPU reference); this is their batched
// device version.
//
// The grammar is uploaded once (binary rules as probabilities, the closed sum unaries, the max-rule
// grouping of rules by base symbols). A batch of sentences then runs three sweeps on the device:
//   inside   span 1 .. n:  binary sums (pair-sum kernel, below), then per cell the one layer of
//                          closed sum unaries, then the cell is normalized (largest value 1);
//   outside  span n .. 1:  the mirror: a cell's outpost gathers from its parents as a left child
//                          (partners: parent [i, j) and right sibling [k, j) for every j) and as a
//                          right child (parent [i, j), left sibling [i, k)), then the unary layer
//                          by child (outpre), then normalization;
//   max-rule span 1 .. n:  per cell and base symbol: the best binary (or lexical) max-rule score,
//                          its split and children, then the unary layer.
// and copies back only the max-rule arrays' finite entries (of cells x base symbols) and log P(w)
// per sentence (plus, on request, the inside and outside charts, for tests).
//
// Precision and scaling: doubles throughout (probabilities, not logs). Each cell holds values in
// [0, 1] (largest 1) and one natural-log scale, as parser/inside_outside_cpu.h's ScaledChart. A
// cell's binary sum is computed against a reference scale M = the largest sum of its partner cells'
// scales; each split point's products are multiplied by exp(scale_x + scale_y - M) <= 1 before they
// are summed, so nothing overflows and a term underflows only when it is below e^-700 of the
// largest partner product. The scale is then M + log(the cell's largest value).
//
// Tolerance (parser/cuda_max_rule_backend_test.cpp, against the double CPU reference): log P(w),
// max-rule scores and every chart value as a log score (value * exp(scale)) agree within
// |x - y| <= 1e-9 max(1, |x| + |y|); chart values are compared where the reference's exceeds 1e-250
// of its cell's largest (below that both must be under 1e-240), outside values only for states
// with a positive inside (the others are unspecified; a cell whose inside is all zero gets no
// outside here; bench/RESULTS-LOG.md has the differences measured on devices). Sums are taken in
// another order than on the CPU, so results are not bit-identical; max-rule trees could differ
// only where two candidates tie within rounding.
//
// Kernel mapping (inside_outside.cu):
//   pair-sum (inside and both outside directions, one kernel, mode by template): per tile of
//     partner symbols (X, Y) (inside: left and right child; outside: parent and sibling), cut
//     into bands of X's substates (at most 512 substate pairs a tile), and per group of 8 (or 16)
//     target cells of one span length: first S[x][y] = sum over partners of scaled X_x * Y_y for
//     every substate pair (partners whose cells lack X or Y skipped by per-cell symbol presence
//     flags; variant 5, the default, on FP64 tensor cores: a warp per 8 x 8 piece of S and cell,
//     or run of up to G cells where the cells have few partners (at most 8 on average), one
//     m8n8k4 DMMA per 4 partners; variants 1 to 3: 4 x 4 register blocking a thread), then
//     every rule adds p * S[x][y] to its target state (variants 2, 3 and 5: a thread per (target
//     state, cell), 32 / G targets a warp, each thread summing its target's rules; variant 1: a
//     warp per target state, lanes over its rules, the G cells reduced by warp shuffles), global
//     atomicAdd.
//   unary: a block per cell, the cell's binary sums staged in shared memory, a warp per state.
//   max-rule binary: a block per (cell, chunk of one parent symbol's base rules); per base rule
//     A -> B C with a usable split (both children with a max-rule score): Q[b][c] = sum_a
//     outpre(A_a) p(a, b, c) in shared memory (a thread per (b, c) over a dense copy of the base
//     rule's probabilities when at least half of its substate triples are rules, else shared-memory
//     atomics over its rules), then a thread per (split, b) computes in(B_b) sum_c Q[b][c] in(C_c)
//     and a thread per split sums over b (variant 1: a warp per split); the block keeps the first
//     best (rule, split) in grammar order; a merge kernel takes the first best chunk per (cell,
//     symbol).
//   max-rule binary, variant 7: the same blocks; each warp takes the chunk's next base rule
//     (a shared counter). Per group of 32 splits a lane per split flags the usable ones (ballot);
//     then per pass over 128 of the rule's entries (its distinct (b, c) substate pairs, a fraction
//     of the s_B x s_C pairs), each lane computes q(b, c) = sum_a outpre(A_a) p(a, b, c)
//     for 4 entries in registers and, for each usable split, sum q in_L(b) in_R(c) over them; a
//     warp reduction hands each split's sum to its lane, which keeps the first best (rule, split).
//   max-rule binary, variants 9, 11, 13 (the default) and 14: the big base rules (more than 2,048
//     entries; 128 for 9) one to a chunk and a block, as variant 2 with Q built from the entries;
//     the others as variant 7, in a second launch over their chunks (options below).
//   max-rule unary: a block per cell, a warp per (parent, child) base pair.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/common/device.h"
#include "cuda/common/grammar_view.h"

namespace cky::cuda {

struct DeviceInsideOutsideOptions {
  // Device bytes a batch may use; 0 = free_memory_share of the free memory at creation (after
  // the grammar's upload).
  size_t max_batch_bytes = 0;
  double free_memory_share = 0.85;
  // Target cells per group in the pair-sum kernel: 8 (default) or 16 (each rule read serves more
  // cells; fewer groups at long spans).
  int cells_per_group = 8;
  // Pair-sum kernel: 5 (default) variant 3 with the S phase on FP64 tensor cores (m8n8k4 DMMA, a
  // warp per 8 x 8 piece of S and cell or run of cells, 4 partners a step); 3 variant 2 with the S
  // tile's rows padded to G + 1 doubles a substate pair (against shared-memory bank conflicts of
  // its stores); 2 the rule phase a thread per (target state, cell); 1 a warp per target state with
  // lanes over its rules. 1 to 3 are kept for measuring; the numbers not listed were variants since
  // removed. bench/RESULTS-LOG.md has the figures of all of them.
  int pair_sum_kernel = 5;
  // Max-rule binary kernel: 13 (default) a hybrid of 2 and 7 by base rule size: a base rule with
  // more than 2,048 distinct (b, c) substate pairs ("entries") gets a chunk of its own, run
  // block-wide as variant 2 with its Q built from its entries (a thread per (b, c) instead of
  // shared double atomics); the other rules are chunked together (chunks a quarter of variant 2's
  // work) and run as variant 7 in blocks of 64 threads, a warp per rule, each chunk's rules taken
  // most entries first. Two launches per span length, one per kind of chunk. 14: 13 with every
  // base rule in a warp chunk (a very big rule would hold one warp). 11: 13 with blocks of 256
  // threads, full-size warp chunks in grammar order; 9: 11 with 128 entries as the threshold (it
  // runs the block-wide path on the test grammars, whose rules have fewer than 2,048 entries).
  // 2 a thread per (split, b) then per split; 1 a warp per split with lanes over b; 7 a warp per
  // base rule over its entries in chunks of variant 2's cut, 4 entries a lane per pass. The
  // variants other than 13 are kept for measuring and testing; the numbers not listed were
  // variants since removed. bench/RESULTS-LOG.md has the figures of all of them.
  int max_rule_kernel = 13;
  // MaskedMaxRuleBatch's dispatch: 3 (default) work lists: per pair-sum launch, the symbol
  // pairs (X, Y) live for each target cell (X and Y present at one partner, and one of the pair's
  // target symbols usable in the cell) are listed per pair, and the kernel runs every (tile, group
  // of up to 8 live cells of its pair), so that its work follows what pruning keeps rather than
  // every group of consecutive cells (grammars of at most 256 symbols; else 2); 2 the pair-sum
  // kernel skips, 32 groups at a time, the (tile, group)s whose X or Y symbol no partner cell of
  // the group holds (per-group symbol flags built first); 2 and 3: the unary + normalize kernel
  // writes cells without usable items as empty at once and skips pruned states' rules; 1 launches
  // and tests every block as the exact passes do. Same results within the tolerance above (sums are
  // taken in other orders). MaxRuleBatch (no mask) always runs as 1.
  int masked_dispatch = 3;
};

// One sentence of a batch: its length and lexical log-scores (length x num_states, row-major, as
// parser/viterbi_reference.h's LexicalScores).
struct IoSentence {
  int32_t length = 0;
  const double* lexical = nullptr;
};

// One sentence's results. Host views into buffers of the device object, valid until the second
// next batch call (two host buffers alternate, so a caller can read one batch while the device
// computes the next). Arrays are in parser/chart.h's cell order (span length, then start).
struct IoResult {
  double log_likelihood = 0;  // log P(w); -infinity when the grammar derives no tree
  // parser/max_rule.h's MaxRuleChart arrays (NumCells(length) * num_symbols entries each), as their
  // finite entries only: entry_index[j] (cell * num_symbols + symbol) has score entry_score[j] and
  // split (-1: none), left and right child symbols and unary child (-1: none) at
  // entry_split_left_right_unary[4 j ..]; in no particular order. Every other entry's score is
  // -infinity (and its other fields -1).
  size_t entries = 0;
  const int32_t* entry_index = nullptr;
  const double* entry_score = nullptr;
  const int32_t* entry_split_left_right_unary = nullptr;
  // With keep_charts only (else null): NumCells(length) * num_states values, NumCells scales.
  const double* inside = nullptr;
  const double* inside_scale = nullptr;
  const double* outside = nullptr;
  const double* outside_scale = nullptr;
};

enum class IoBatchResult { kOk, kOutOfMemory, kFailed };

// What a later device pass over several grammars' charts (the product's max-rule pass,
// cuda/inside_outside/product_max_rule.h) reads of one grammar's device object: its rules as the
// max-rule pass uploaded them. Device pointers, valid while the object lives; the host lists say
// which symbols each base rule and unary pair is of, so that a caller maps them between grammars.
struct DeviceMaxRuleRules {
  int num_states = 0;
  int num_symbols = 0;
  const int32_t* symbol_first_state = nullptr;    // [symbol]
  const int32_t* symbol_num_substates = nullptr;  // [symbol]
  // Base binary rules A -> B C in (A, B, C) symbol order (parser/max_rule.h's tie order), as
  // cuda/inside_outside/sum_layouts.h's MaxRuleLayout: per base rule its distinct (b, c) substate
  // pairs ("entries") [entry_begin[r], entry_begin[r + 1]), each (b << 16) | c in entry_bc with its
  // parent substates a and probabilities [entry_rule_begin[e], entry_rule_begin[e + 1]) in
  // entry_a / entry_w.
  int num_base = 0;
  const int32_t* entry_begin = nullptr;
  const int32_t* entry_bc = nullptr;
  const int32_t* entry_rule_begin = nullptr;
  const int32_t* entry_a = nullptr;
  const double* entry_w = nullptr;
  std::vector<int32_t> base_symbols;  // host: 3 per base rule, A, B, C
  // Base unary pairs A -> C (A != C) in (A, C) order: pair p's closed sum unaries are
  // [pair_rule_begin[p], pair_rule_begin[p + 1]) of pu_parent / pu_child (states) / pu_w.
  int num_pairs = 0;
  const int32_t* pair_rule_begin = nullptr;
  const int32_t* pu_parent = nullptr;
  const int32_t* pu_child = nullptr;
  const double* pu_w = nullptr;
  std::vector<int32_t> pair_symbols;  // host: 2 per pair, A, C
};

// The last batch's charts, on the device (valid until the object's next batch call): for its
// sentence i, NumCells(length) cells from first_cell[i] in parser/chart.h's cell order, each
// num_states inside and outpre values (scaled: largest 1 in the cell) and one natural-log scale
// per cell, as IoResult's host copies; log P(w) per sentence; the lexical rows (IoSentence's, from
// row first_word[i]).
struct DeviceBatchCharts {
  const double* inside = nullptr;
  const double* inside_scale = nullptr;
  const double* outside = nullptr;
  const double* outside_scale = nullptr;
  const double* log_likelihood = nullptr;  // [sentence]
  const double* lexical = nullptr;         // [word][state]
  std::vector<int64_t> first_cell, first_word;
};

class DeviceInsideOutside {
 public:
  virtual ~DeviceInsideOutside() = default;
  // Uploads the grammar. Returns null and sets *error when there is no device or the grammar does
  // not fit the kernels (a symbol with more than 512 substates, more than 48 KiB of states).
  static std::unique_ptr<DeviceInsideOutside> Create(const GrammarView& grammar,
                                                     const DeviceInsideOutsideOptions& options,
                                                     std::string* error);

  // Device bytes one sentence of `length` words needs in a batch.
  virtual size_t BytesForSentence(int32_t length) const = 0;
  // The batch budget in bytes (options.max_batch_bytes or the default).
  virtual size_t BatchBudget() const = 0;
  // The longest sentence the kernels' shared memory allows (a few hundred words); longer ones
  // must be parsed elsewhere.
  virtual int32_t MaxLength() const = 0;

  // When on, batches time their phases and kernel kinds with CUDA events (an event pair around
  // each launch group: this adds a little time); ProfileReport() sums them.
  virtual void SetProfiling(bool on) = 0;
  virtual std::string ProfileReport() const = 0;

  // Inside, outside and max-rule passes for every sentence of the batch (lengths >= 1). On kOk,
  // (*results)[i] belongs to batch[i]. kOutOfMemory: the device could not hold the batch (nothing
  // was computed; split it and retry). keep_charts: also copy back the inside and outside charts.
  virtual IoBatchResult MaxRuleBatch(const std::vector<IoSentence>& batch, bool keep_charts,
                                     std::vector<IoResult>* results, std::string* error) = 0;
  // The same passes restricted to allowed items (coarse-to-fine pruning): `device_allowed` is
  // device memory holding, for the batch's cells in order (sentence after sentence, each in
  // parser/chart.h's cell order), num_states bytes a cell, 1 = usable, 0 = pruned (as
  // cuda/pruning/pruned_viterbi.h's FineMask leaves it). A pruned item's inside and outside values
  // are zero below and above the unary layer, as parser/inside_outside_cpu.h's FastInsideOutside
  // with `allowed`, so results match the CPU pruned max-rule path within the tolerance above.
  // device_allowed null: MaxRuleBatch.
  virtual IoBatchResult MaskedMaxRuleBatch(const std::vector<IoSentence>& batch,
                                           const uint8_t* device_allowed, bool keep_charts,
                                           std::vector<IoResult>* results, std::string* error) = 0;
  // MaskedMaxRuleBatch queued behind `mask_ready`, an opaque CUDA event (a cudaEvent_t) recorded
  // on another stream once device_allowed is written (cuda/pruning/pruned_viterbi.h's
  // FineMaskReady): the device waits for it, not the host, so that a caller may call this while
  // that stream still computes the mask (the passes' host set-up, their rows' upload and their
  // first kernels then wait on the device, with no gap after the mask). Returns once the passes
  // are done. The default waits for the event on the host, then runs MaskedMaxRuleBatch.
  virtual IoBatchResult MaskedMaxRuleBatchAfter(const void* mask_ready,
                                                const std::vector<IoSentence>& batch,
                                                const uint8_t* device_allowed, bool keep_charts,
                                                std::vector<IoResult>* results,
                                                std::string* error) {
    if (!WaitForEvent(mask_ready, error)) return IoBatchResult::kFailed;
    return MaskedMaxRuleBatch(batch, device_allowed, keep_charts, results, error);
  }

  // The inside and outside passes only (masked as MaskedMaxRuleBatch when device_allowed is
  // given): no max-rule pass, no entries; results carry log P(w) only, and the charts stay on the
  // device for LastBatchCharts. The default (an object without device charts, a test stand-in)
  // fails.
  virtual IoBatchResult InsideOutsideBatch(const std::vector<IoSentence>& batch,
                                           const uint8_t* device_allowed,
                                           std::vector<IoResult>* results, std::string* error) {
    (void)batch, (void)device_allowed, (void)results;
    *error = "this inside-outside object keeps no charts on the device";
    return IoBatchResult::kFailed;
  }
  // After a batch that returned kOk: its charts on the device. False (and *charts untouched) when
  // there is none, or the object keeps none (the default).
  virtual bool LastBatchCharts(DeviceBatchCharts* charts) const {
    (void)charts;
    return false;
  }
  // The max-rule rules on the device; null for an object without them (the default).
  virtual const DeviceMaxRuleRules* MaxRuleRules() const { return nullptr; }
};

}  // namespace cky::cuda
