#include "parser/coarse_to_fine.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "common/thread_pool.h"
#include "parser/child_pair_runs.h"
#include "parser/inside_outside_cpu.h"
#include "parser/max_rule.h"

namespace cky {

PruningOptions PruningOptions::Berkeley(bool accurate) {
  // CoarseToFineMaxRuleParser.doPreParses: level k reads pruningThreshold[k + 1] (its entry 0
  // belongs to a pre-pre-parse that is switched off).
  PruningOptions options;
  if (accurate) {
    options.thresholds = {-12, -12, -11, -12, -12, -14, -14};
  } else {
    options.thresholds = {-9.75, -10, -9.6, -9.66, -8.01, -7.4, -10, -10};
  }
  return options;
}

PruningOptions PruningOptions::Safe() {
  PruningOptions options = Berkeley(/*accurate=*/true);
  for (double& threshold : options.thresholds) threshold -= 4;
  // No floor on projected rules: with en_sm6s (1.7M binary rules) Berkeley's 1e-4 floor keeps
  // 6% of the last pre-parse level's rules and the exact max-rule tree on 38% of the bench
  // sentences; without it, 94% (bench/RESULTS.md). With gum_sm3/gum_sm5 it costs little speed.
  options.min_rule_prob = 0;
  return options;
}

PruningOptions PruningOptions::Balanced() {
  PruningOptions options;
  options.thresholds = {-15, -15, -13.5, -13.5, -13};
  options.min_rule_prob = 0;
  return options;
}

StatusOr<PruningOptions> PruningOptions::Named(const std::string& name) {
  if (name == "fast") return Berkeley(false);
  if (name == "accurate") return Berkeley(true);
  if (name == "safe") return Safe();
  if (name == "balanced") return Balanced();
  return Status::Error("unknown pruning thresholds '" + name +
                       "' (expected fast, accurate, safe or balanced)");
}

StatusOr<PruningOptions> PruningOptions::FromSpec(const std::string& spec) {
  const size_t at = spec.find('@');
  const std::string name = spec.substr(0, at);
  PruningOptions options;
  if (name == "exact") {
    options = Exact();
  } else if (auto named = Named(name); named.ok()) {
    options = *named;
  } else {
    size_t begin = 0;
    while (begin <= name.size()) {
      const size_t slash = std::min(name.find('/', begin), name.size());
      const std::string number = name.substr(begin, slash - begin);
      char* end = nullptr;
      const double threshold = std::strtod(number.c_str(), &end);
      if (number.empty() || *end != '\0' || !(threshold <= 0)) {
        return Status::Error("unknown pruning setting '" + spec +
                             "' (expected fast, accurate, safe, exact or thresholds <= 0 "
                             "separated by '/', then optionally @LEVELS)");
      }
      options.thresholds.push_back(threshold);
      begin = slash + 1;
    }
    options.min_rule_prob = 0;
  }
  if (at != std::string::npos) {
    const std::string levels = spec.substr(at + 1);
    size_t begin = 0;
    while (begin <= levels.size()) {
      const size_t comma = std::min(levels.find(',', begin), levels.size());
      const std::string level = levels.substr(begin, comma - begin);
      char* end = nullptr;
      const long value = std::strtol(level.c_str(), &end, 10);
      if (level.empty() || *end != '\0' || value < 0 || value > 64) {
        return Status::Error("bad pruning levels in '" + spec + "'");
      }
      options.levels.push_back(int32_t(value));
      begin = comma + 1;
    }
  }
  return options;
}

PruningOptions PruningOptions::Exact() {
  PruningOptions options;
  options.thresholds = {kNegInf};
  options.min_rule_prob = 0;
  return options;
}

void PruningStats::Add(const PruningStats& other) {
  if (items_before.size() < other.items_before.size()) {
    items_before.resize(other.items_before.size());
    items_after.resize(other.items_after.size());
    seconds.resize(other.seconds.size());
  }
  for (size_t k = 0; k < other.items_before.size(); ++k) {
    items_before[k] += other.items_before[k];
    items_after[k] += other.items_after[k];
    seconds[k] += other.seconds[k];
  }
}

CoarseToFinePruner::CoarseToFinePruner(const Grammar& fine, PruningOptions options)
    : fine_(fine), options_(std::move(options)) {}

std::vector<int32_t> CoarseToFinePruner::PreParseLevels(const Grammar& fine,
                                                        const PruningOptions& options) {
  std::vector<int32_t> chosen;
  for (int32_t k = 0; k < NumProjectionLevels(fine); ++k) {
    if (options.levels.empty() ||
        std::find(options.levels.begin(), options.levels.end(), k) != options.levels.end()) {
      chosen.push_back(k);
    }
  }
  return chosen;
}

StatusOr<std::unique_ptr<CoarseToFinePruner>> CoarseToFinePruner::Create(
    const Grammar& fine, const PruningOptions& options) {
  if (options.thresholds.empty()) return Status::Error("pruning needs at least one threshold");
  std::unique_ptr<CoarseToFinePruner> pruner(new CoarseToFinePruner(fine, options));
  if (!std::is_sorted(options.levels.begin(), options.levels.end())) {
    return Status::Error("pruning levels must be ascending");
  }
  for (int32_t level : options.levels) {
    if (level < 0 || level >= NumProjectionLevels(fine)) {
      const int32_t coarser = NumProjectionLevels(fine);
      return Status::Error(
          "pruning level " + std::to_string(level) +
          " is not a coarser level of this grammar's split hierarchy (" +
          (coarser == 0 ? std::string("it has none") : "0 to " + std::to_string(coarser - 1)) +
          ")");
    }
  }
  const std::vector<int32_t> chosen = PreParseLevels(fine, options);
  const int32_t levels = int32_t(chosen.size());
  // The levels' projections and their Viterbi passes are independent: one thread each (en_sm6s:
  // about 3 s in a row). They share the fine states' expected counts, computed once.
  const std::vector<double> expected_counts = ExpectedStateCounts(fine);
  std::vector<Level> built(levels);
  std::vector<Status> statuses(levels);
  {
    std::vector<std::thread> threads;
    for (int32_t k = 0; k < levels; ++k) {
      threads.emplace_back([&, k] {
        auto projection = ProjectGrammar(fine, chosen[k], options.min_rule_prob, &expected_counts);
        if (!projection.ok()) {
          statuses[k] = projection.status();
          return;
        }
        // The Viterbi pass keeps a reference to the grammar: made once the grammar has its place.
        built[k].projection = std::make_unique<ProjectedGrammar>(std::move(*projection));
        built[k].viterbi =
            std::make_unique<CpuViterbi>(built[k].projection->grammar, options.order);
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  for (int32_t k = 0; k < levels; ++k) {
    if (!statuses[k].ok()) return statuses[k];
    Level level = std::move(built[k]);
    if (k > 0) {
      // Each state of this level lies inside one state of the previous pre-parse level: read it
      // off any fine state below it.
      const ProjectedGrammar& coarser = *pruner->levels_.back().projection;
      level.to_coarser.assign(level.projection->grammar.num_states(), -1);
      for (int32_t f = 0; f < fine.num_states(); ++f) {
        int32_t& parent = level.to_coarser[level.projection->from_fine[f]];
        const int32_t want = coarser.from_fine[f];
        if (parent >= 0 && parent != want) {
          return Status::Error("split trees of " + fine.SymbolOfState(f) +
                               " are not nested from one level to the next");
        }
        parent = want;
      }
    }
    pruner->levels_.push_back(std::move(level));
  }
  if (levels > 0) pruner->fine_to_last_ = pruner->levels_.back().projection->from_fine;
  return pruner;
}

bool CoarseToFinePruner::Prune(const LexicalScores& fine_lexical, ItemMask* fine_mask,
                               PruningStats* stats, std::vector<ItemMask>* level_survivors) const {
  const int32_t n = fine_lexical.length;
  const int64_t cells = Chart::NumCells(n);
  const int32_t fine_states = fine_.num_states();
  fine_mask->length = n;
  fine_mask->num_states = fine_states;
  if (levels_.empty()) {
    fine_mask->allowed.assign(size_t(cells) * fine_states, 1);
    return true;
  }
  if (stats) {
    stats->items_before.resize(levels_.size());
    stats->items_after.resize(levels_.size());
    stats->seconds.resize(levels_.size());
  }
  ItemMask mask, survivors;
  if (level_survivors) level_survivors->clear();
  LexicalScores lexical;
  Chart post, pre;
  std::vector<double> mm;
  for (size_t k = 0; k < levels_.size(); ++k) {
    const auto level_start = std::chrono::steady_clock::now();
    const Level& level = levels_[k];
    const int32_t states = level.projection->grammar.num_states();
    const double threshold = this->threshold(int32_t(k));
    ProjectLexicalScores(*level.projection, fine_lexical, &lexical);
    if (k > 0) {  // allow the refinements of the previous level's survivors
      mask.length = n;
      mask.num_states = states;
      mask.allowed.resize(size_t(cells) * states);
      for (int64_t c = 0; c < cells; ++c) {
        const uint8_t* kept = survivors.cell(c);
        uint8_t* allowed = mask.allowed.data() + c * states;
        for (int32_t s = 0; s < states; ++s) allowed[s] = kept[level.to_coarser[s]];
      }
    }
    level.viterbi->Inside(lexical, k > 0 ? &mask : nullptr, &post, &pre);
    if (!(post.score(0, n, Grammar::kRootState) > kNegInf)) return false;
    level.viterbi->MaxMarginals(post, pre, &mm);
    survivors.length = n;
    survivors.num_states = states;
    survivors.allowed.assign(mm.size(), 0);
    int64_t before = 0, after = 0;
    for (size_t i = 0; i < mm.size(); ++i) {
      if (k > 0) {
        before += mask.allowed[i];
      } else {
        ++before;
      }
      if (mm[i] > threshold) {
        survivors.allowed[i] = 1;
        ++after;
      }
    }
    if (level_survivors) level_survivors->push_back(survivors);
    if (stats) {
      stats->items_before[k] += before;
      stats->items_after[k] += after;
      stats->seconds[k] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - level_start).count();
    }
  }
  fine_mask->allowed.resize(size_t(cells) * fine_states);
  for (int64_t c = 0; c < cells; ++c) {
    const uint8_t* kept = survivors.cell(c);
    uint8_t* allowed = fine_mask->allowed.data() + c * fine_states;
    for (int32_t f = 0; f < fine_states; ++f) allowed[f] = kept[fine_to_last_[f]];
  }
  return true;
}

}  // namespace cky
