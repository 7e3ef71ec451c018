// Coarse-to-fine pruned Viterbi parsing on a CUDA device, in plain C++ (no CUDA types): the device
// side of parser/cuda_pruner.h, the GPU twin of parser/coarse_to_fine.h's CPU path.
//
// The grammars of every pre-parse level and the fine grammar are uploaded once. A batch of
// sentences then goes through the levels on the device, all sentences of the batch at once: at
// each pre-parse level a masked max-plus inside pass (span by span; a cell's items not allowed by
// the previous level are skipped whole, one warp per allowed parent state), a max-marginal pass
// (span by span from the root down, pulling each item's outside score from its parent cells), and
// the threshold, which gives the level's survivors; the next level allows the refinements of the
// survivors. The fine grammar then runs the masked inside pass, and either its best trees are read
// on the device (device_trees: cuda/viterbi's tree search over the doubles) or its chart's finite
// entries (doubles, indices in the CPU chart's layout: parser/chart.h) are copied back for tree
// extraction on the host.
//
// Arithmetic: everything is double, and every candidate score is formed with the same additions in
// the same order as the CPU pruner's passes (parser/viterbi_cpu.h; inside: (rule + left) + right,
// or rule + (left + right) with AdditionOrder::kPairFirst, and unary + below; outside:
// (outside_pre(parent) + rule) + sibling, or rule + (outside_pre(parent) + sibling), and
// outside_post(parent) + unary; max-marginal max(in_post + out_post, in_pre + out_pre) - best).
// Maxima are exact whatever the order, so the device's charts and max-marginals are bit-identical
// to the CPU's, given the same lexical scores (the caller projects them on the host with the CPU's
// code): an item whose max-marginal lies next to the threshold is decided the same way on both,
// there are no ties to break. (The kernels are compiled without fused multiply-add; they multiply
// nothing anyway.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cuda/common/grammar_view.h"
#include "cuda/inside_outside/sum_layouts.h"
#include "cuda/viterbi/viterbi.h"

namespace cky::cuda {

// One level: its grammar and how it hangs on the previous one.
struct PruningLevel {
  // The level's grammar (the fine grammar's symbols, this level's substates): the binary rules
  // and closed Viterbi unaries are read.
  GrammarView grammar;
  // This level's state -> the previous level's state (num_states entries); null for level 0.
  const int32_t* to_coarser = nullptr;
  // Items with max-marginal <= threshold are pruned (natural log); unused for the fine level.
  double threshold = 0;
  // The level's inside pair layout, BuildPairSumLayout(grammar, kInside, kLogProbabilities,
  // DevicePrunedViterbiOptions::sparse_below), when the caller built it beside other work; null:
  // built here if the level runs the pair kernels.
  const PairSumLayout* inside_pairs = nullptr;
  // The pair kernels' tiles and presence flags by these groups of the level's states instead of
  // by symbols (StateGroups: cuda/inside_outside/sum_layouts.h); inside_pairs, when given, is
  // then built over pair_groups->AsSymbols(grammar). Null: by symbols.
  const StateGroups* pair_groups = nullptr;
};

// DevicePrunedViterbiOptions::pruning_kernels' default.
constexpr int kDefaultPruningKernels = 6;

// Whether a level's passes run on the pair kernels under `pruning_kernels` (4 and up, at a level
// with enough substates a symbol); a parsed fine grammar's inside pass too. False without CUDA.
bool LevelRunsPairKernels(const GrammarView& grammar, int pruning_kernels);

struct DevicePrunedViterbiOptions {
  // Device bytes a batch may use; 0 = free_memory_share of the free memory at creation (the rest
  // is left to an exact backend that takes the sentences pruning loses).
  size_t max_batch_bytes = 0;
  double free_memory_share = 0.6;
  // Copy every pre-parse level's survivors back (tests compare them with the CPU's).
  bool keep_level_survivors = false;
  // For pruned max-rule (parser/cuda_max_rule_backend.h): the fine grammar is not parsed;
  // ParseBatch leaves its allowed items on the device (FineMask) for the inside-outside passes of
  // cuda/inside_outside/inside_outside.h, and copies back no chart (fine_count 0). The fine
  // level's PruningLevel then need only num_states and to_coarser.
  bool fine_mask_only = false;
  // Pre-parse kernels. 4: the binary part of both passes pair-factored over work lists, as the
  // sum-product passes' masked dispatch 3 (cuda/inside_outside/pair_sum.cuh with kMax): per
  // span, the (child symbol pair, target cell)s live under the mask and the presence of the
  // children, then per tile and group of such cells the maximum over partners of X + Y per
  // substate pair and the rules on it; the pre-parse's work follows what the previous level kept.
  // Candidates add rule + (X + Y) (parser/viterbi_cpu.h's AdditionOrder::kPairFirst, the CPU
  // pruner's with these kernels). Levels of fewer than 4 substates a symbol on average (the coarse
  // ones, where a pair's tiles hold little work) and grammars of more than 256 symbols run as 2,
  // adding pair first too. The fine grammar's masked inside pass (no fine_mask_only) is chosen the
  // same way and adds pair first as well (the CPU's pruned fine pass adds in its pruner's order),
  // so that its work follows the mask too. 5: as 4, and kernels 1 and 2 (the coarse levels)
  // spread a cell's states over several blocks where a span has too few cells to fill the device,
  // with the unary layer (inside) and the outside's unary layer, max-marginals and threshold in a
  // launch of their own after them. 6 (kDefaultPruningKernels): as 5, and at the first level (no
  // mask) when it runs kernels 1 and 2 with at most 256 states their binary phase dense: a
  // cell's block stages its split points' (parent cells') rows in shared memory and its threads
  // share the live states' rules evenly, each rule over every staged split point (the maxima over
  // more candidates, absent ones -infinity, cheaper each). 1 to 3 (the CPU's kRuleFirst): a block
  // per cell, a warp per allowed parent state over its rules and split points; 2 at levels of at
  // least 100 binary rules a state also keeps each child cell's present states (inside: per split
  // point; outside: per parent and sibling cell) in shared memory, so that a (rule, split point or
  // parent cell) whose child, parent or sibling is absent there is skipped without reading the
  // chart (spans whose masks do not fit, about 200 split points at 722 states, run as 1); 3 the
  // same at every level (tests); 1 tests only the states present at some split point or parent
  // cell. Survivors: the CPU pruner's bit for bit when it adds in the same order.
  int pruning_kernels = kDefaultPruningKernels;
  // The fine grammar's best trees read on the device (cuda/viterbi/viterbi.h's ParseTrees search:
  // parser/tree_extraction.h's order and tolerance, on the fine chart's doubles), and only their
  // nodes copied back (PrunedBatchCharts::trees), instead of the chart's finite entries. Not with
  // fine_mask_only. Needs the fine grammar's symbol_is_phrasal.
  bool device_trees = false;
  // Tests: node slots of a sentence's tree (0: 6n + 32, room for any tree); a tree that does not
  // fit comes back as kChart, so that the caller's host path is exercised.
  int tree_node_slots = 0;
  // Tests: pruning kernels 6 stage this many split points (parent cells) at a time (0: as many
  // as fit in shared memory), so that small grammars take the path long sentences take.
  int dense_chunk = 0;
  // The pair layouts built here: BuildPairSumLayout's sparse_below (tests: 0 every tile dense,
  // above 1 every tile sparse).
  double sparse_below = kMaxPlusSparseBelow;
  // Tests: target cells a pair-kernel group at every level, 8 or 16; 0: by the level (16 at levels
  // tiled by symbols with fewer than 6 substates a symbol, else 8).
  int pair_cells = 0;
};

// One sentence: its length and, per level (pre-parse levels, then the fine grammar), its lexical
// log-scores (length x that level's num_states, row-major).
struct PrunedSentenceRef {
  int32_t length = 0;
  std::vector<const double*> lexical;
};

// A batch's results, valid until the next call.
struct PrunedBatchCharts {
  // The fine grammar's masked inside charts, sparse: the batch's charts laid end to end
  // (sentence b's Chart::NumCells(length) * num_states doubles from fine_offset[b]), and their
  // fine_count finite entries, fine_index[i] -> fine_score[i], in no particular order; every other
  // entry is -infinity (pruned or underivable).
  std::vector<int64_t> fine_offset;
  size_t fine_count = 0;
  const long long* fine_index = nullptr;
  const double* fine_score = nullptr;
  // keep_level_survivors only: [sentence][level] -> NumCells(length) * level states bytes (1:
  // kept).
  std::vector<std::vector<const uint8_t*>> survivors;
  // device_trees (instead of the entries above, fine_count 0): per sentence its tree's nodes
  // (DeviceTree::kTree), no parse (kNoParse: the fine chart's root is -infinity), or kChart with
  // no chart: the device search stopped where the host's goes further (a one-word phrasal node
  // without a unary to a tag, the unary chain bound, full buffers), so the caller parses that
  // sentence on the host. root_score[b]: the fine chart's ROOT score over the sentence (double).
  std::vector<DeviceTree> trees;
  std::vector<double> root_score;
  // Per level: allowed items going in and surviving, summed over the batch.
  std::vector<int64_t> items_before, items_after;
};

enum class PrunedBatchResult { kOk, kOutOfMemory, kFailed };

class DevicePrunedViterbi {
 public:
  virtual ~DevicePrunedViterbi() = default;
  // levels: the pre-parse levels, coarsest first, then the fine grammar (its to_coarser maps fine
  // states to the last pre-parse level). Returns null and sets *error without a device or when the
  // grammars do not fit.
  static std::unique_ptr<DevicePrunedViterbi> Create(const std::vector<PruningLevel>& levels,
                                                     const DevicePrunedViterbiOptions& options,
                                                     std::string* error);

  // Device bytes one sentence of `length` words needs in a batch.
  virtual size_t BytesForSentence(int32_t length) const = 0;
  virtual size_t BatchBudget() const = 0;
  // fine_mask_only: device memory with the last batch's fine-grammar items allowed by pruning,
  // per batch cell (sentences in batch order, each in parser/chart.h's cell order) the fine
  // grammar's num_states bytes, 1 = allowed (the refinements of the last pre-parse level's
  // survivors; all 0 for a sentence where a pre-parse found no derivation). Valid until the next
  // ParseBatch. Null in the default mode.
  virtual const uint8_t* FineMask() const = 0;
  // fine_mask_only: an opaque CUDA event (a cudaEvent_t) recorded on the object's stream once the
  // fine mask is written, before ParseBatch calls before_level(levels.size()): work the caller
  // queues on another stream behind it (DeviceInsideOutside::MaskedMaxRuleBatchAfter) may read the
  // mask, and must be finished before the next ParseBatch. Null in the default mode.
  virtual const void* FineMaskReady() const = 0;

  // Turns on timing of each level's inside and max-marginal passes and the copy back (CUDA
  // events); ProfileReport() sums them since.
  virtual void SetProfiling(bool on) = 0;
  virtual std::string ProfileReport() const = 0;

  // Prunes and parses every sentence of the batch (lengths >= 1). kOutOfMemory: the batch did not
  // fit, no results (split the batch and retry). before_level (may be empty) lets the caller's host
  // work run beside the device's: before_level(k) is called before level k's lexical rows are read,
  // once the coarser levels' kernels are queued, and may set them (batch[b].lexical[k] of the
  // caller's vector); before_level(levels.size()) once every kernel is queued, before the wait
  // for them.
  virtual PrunedBatchResult ParseBatch(const std::vector<PrunedSentenceRef>& batch,
                                       PrunedBatchCharts* charts, std::string* error,
                                       const std::function<void(size_t)>& before_level) = 0;
};

}  // namespace cky::cuda
