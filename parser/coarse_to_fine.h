// Hierarchical coarse-to-fine pruning (Petrov & Klein 2007), as the Berkeley parser does it
// (CoarseToFineMaxRuleParser.doPreParses / pruneChart), on the CPU.
//
// The sentence is pre-parsed with the grammar projected to level 0 (one substate per symbol),
// 1, 2, ... up to the level just below the fine grammar (parser/grammar_projection.h). At each
// level the pre-parse computes, for every chart item (span, state) still allowed, its Viterbi
// max-marginal: the log-score of the best complete derivation that uses the item, minus that of
// the best derivation overall,
//   mm(item) = max(in_post + out_post, in_pre + out_pre) - best,
// (post: the item as its cell's unary layer leaves it, read by parents; pre: as binary rules or the
// lexicon build it, below a unary). Items with mm <= the level's threshold are pruned; the next
// level allows only the substates whose projection survived. The fine grammar then parses inside
// the surviving items only, with Viterbi or max-rule decoding. With every threshold -infinity (and
// no rule floor) an item survives exactly when some complete derivation uses it, so the trees are
// the exact ones: that is how the pruned paths are tested.
//
// Thresholds (log max-marginals): Berkeley's default ("fast") and -accurate ones, both with its
// 1e-4 floor on the projected grammars' rules, and "safe", the -accurate ones 4 nats lower and no
// floor, chosen to keep F1 within 0.05 of exact parsing (GUM test documents, gum_sm3.gr and
// gum_sm5.gr, both decoders). bench/RESULTS-LOG.md has the figures of each setting, and how often
// each keeps the exact tree.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "grammar_io/grammar.h"
#include "parser/backend.h"
#include "parser/grammar_projection.h"
#include "parser/viterbi_cpu.h"
#include "parser/viterbi_reference.h"

namespace cky {

struct PruningOptions {
  // thresholds[k] is level k's (natural-log max-marginal); levels past the end use the last one.
  std::vector<double> thresholds;
  // Projected rules below this probability are left out of the pre-parse grammars (Berkeley: 1e-4).
  double min_rule_prob = 1e-4;
  // The levels of the split hierarchy to pre-parse with, ascending (0: X-bar); empty: every level
  // below the fine grammar (Berkeley's). Levels past the hierarchy are ignored. A level's mask
  // allows the refinements of the survivors of the level run before it; thresholds stay indexed
  // by the level itself.
  std::vector<int32_t> levels;
  // The pre-parses' order of additions (parser/viterbi_cpu.h): the device pruner's pair-factored
  // kernels add each child pair first; pruning kernels 1 to 3 add the rule first. The pruners of
  // both sides must agree for their survivors to be the same bit for bit.
  AdditionOrder order = AdditionOrder::kPairFirst;

  static PruningOptions Berkeley(bool accurate);
  static PruningOptions Safe();
  // -15 at hierarchy levels 0 and 1 (one nat above safe's), -13.5 at levels 2 and 3, -13 from
  // level 4 on, no rule floor: the finer levels, whose survivors the fine passes pay for, prune
  // more.
  // Chosen on the GUM dev documents for the GPU's default (levels 0, 2, 4; bench/RESULTS.md).
  static PruningOptions Balanced();
  // "fast" (Berkeley's default), "accurate" (Berkeley's -accurate), "safe" or "balanced"; fails
  // otherwise.
  static StatusOr<PruningOptions> Named(const std::string& name);
  // Every threshold -infinity and no rule floor: pre-parses that prune nothing a derivation uses.
  static PruningOptions Exact();
  // NAME[@LEVELS] (benches and experiments): NAME is fast, accurate, safe, balanced, exact, or
  // numbers separated by '/' (hierarchy level k's threshold the k-th, the last for the levels past
  // it; no rule floor); LEVELS a comma list of hierarchy levels (`levels`), e.g. "safe@0,2,4" or
  // "-16/-16/-13@0,2,4".
  static StatusOr<PruningOptions> FromSpec(const std::string& spec);
};

// Items considered and kept at one pre-parse level, summed over sentences.
struct PruningStats {
  std::vector<int64_t> items_before;  // per level: allowed items going in
  std::vector<int64_t> items_after;   // per level: items surviving
  std::vector<double> seconds;        // per level: time spent (projection of the lexicon, passes)
  void Add(const PruningStats& other);
};

// The projections of one fine grammar and the pruning passes over them. Thread-safe after
// construction (Prune keeps its work in locals).
class CoarseToFinePruner {
 public:
  static StatusOr<std::unique_ptr<CoarseToFinePruner>> Create(const Grammar& fine,
                                                              const PruningOptions& options);

  // The fine-grammar items that survive every pre-parse level. Returns false when a pre-parse
  // finds no derivation (the caller then parses without pruning, as Berkeley does).
  // `level_survivors`, when given, gets each pre-parse level's survivors (the levels run so far).
  bool Prune(const LexicalScores& fine_lexical, ItemMask* fine_mask, PruningStats* stats = nullptr,
             std::vector<ItemMask>* level_survivors = nullptr) const;
  // The hierarchy levels Create pre-parses `fine` with under `options` (its levels within the
  // hierarchy, or every level below the fine grammar), ascending.
  static std::vector<int32_t> PreParseLevels(const Grammar& fine, const PruningOptions& options);
  // The pre-parse levels run (PruningOptions::levels), k = 0 .. num_levels() - 1 below.
  int32_t num_levels() const { return int32_t(levels_.size()); }
  const ProjectedGrammar& level(int32_t k) const { return *levels_[k].projection; }
  // Pre-parse k's state -> pre-parse k - 1's state (empty for k = 0).
  const std::vector<int32_t>& to_coarser(int32_t k) const { return levels_[k].to_coarser; }
  // Fine state -> the last pre-parse level's state (empty without levels).
  const std::vector<int32_t>& fine_to_last() const { return fine_to_last_; }
  // Pre-parse k's threshold (the thresholds entry of its hierarchy level).
  double threshold(int32_t k) const {
    const size_t level = size_t(levels_[k].projection->level);
    return options_.thresholds[std::min(level, options_.thresholds.size() - 1)];
  }
  const Grammar& fine() const { return fine_; }
  // The pre-parses' order of additions (PruningOptions::order); the pruned fine Viterbi pass adds
  // in it too, on the CPU and on the device.
  AdditionOrder order() const { return options_.order; }

 private:
  struct Level {
    std::unique_ptr<ProjectedGrammar> projection;
    std::unique_ptr<CpuViterbi> viterbi;
    std::vector<int32_t> to_coarser;  // this level's state -> the previous level's state
  };
  CoarseToFinePruner(const Grammar& fine, PruningOptions options);
  const Grammar& fine_;
  PruningOptions options_;
  std::vector<Level> levels_;
  std::vector<int32_t> fine_to_last_;  // fine state -> the last pre-parse level's state
};

}  // namespace cky
