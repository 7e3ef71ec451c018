#include "parser/coarse_to_fine.h"

#include <algorithm>
#include <chrono>
#include <new>
#include <string>
#include <thread>

#include "common/thread_pool.h"
#include "parser/child_pair_runs.h"
#include "parser/inside_outside.h"
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

StatusOr<PruningOptions> PruningOptions::Named(const std::string& name) {
  if (name == "fast") return Berkeley(false);
  if (name == "accurate") return Berkeley(true);
  if (name == "safe") return Safe();
  return Status::Error("unknown pruning thresholds '" + name +
                       "' (expected fast, accurate or safe)");
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

MaskedViterbi::MaskedViterbi(const Grammar& g) : grammar_(g) {
  ChildPairRuns runs(g);
  for (int32_t r : runs.order) {
    parent_.push_back(g.binary_parent[r]);
    log_prob_.push_back(g.binary_log_prob[r]);
  }
  left_begin_ = std::move(runs.left_pair_begin);
  pair_right_ = std::move(runs.pair_right);
  pair_begin_ = std::move(runs.pair_begin);
}

void MaskedViterbi::Inside(const LexicalScores& lexical, const ItemMask* mask, Chart* post,
                           Chart* pre) const {
  const Grammar& g = grammar_;
  const int32_t n = lexical.length;
  const int32_t states = g.num_states();
  *post = Chart(n, states);
  if (pre) *pre = Chart(n, states);
  std::vector<double> below(states);
  std::vector<std::vector<int32_t>> present(Chart::NumCells(n));
  for (int32_t span = 1; span <= n; ++span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      const int32_t end = start + span;
      const int64_t index = post->CellIndex(start, end);
      const uint8_t* allowed = mask ? mask->cell(index) : nullptr;
      std::fill(below.begin(), below.end(), kNegInf);
      if (span == 1) {
        const double* word = lexical.word(start);
        for (int32_t s = 0; s < states; ++s) {
          if (!allowed || allowed[s]) below[s] = word[s];
        }
      } else {
        for (int32_t split = start + 1; split < end; ++split) {
          const double* left = post->cell(start, split);
          const double* right = post->cell(split, end);
          for (int32_t l : present[post->CellIndex(start, split)]) {
            const double left_score = left[l];
            for (int32_t pair = left_begin_[l]; pair < left_begin_[l + 1]; ++pair) {
              const double right_score = right[pair_right_[pair]];
              if (right_score == kNegInf) continue;
              // Parents not allowed are scored too and cleared below: no test in this loop.
              for (int32_t k = pair_begin_[pair]; k < pair_begin_[pair + 1]; ++k) {
                // The reference's order of additions, so that unpruned charts are bit-identical.
                const double score = log_prob_[k] + left_score + right_score;
                double& best = below[parent_[k]];
                best = std::max(best, score);
              }
            }
          }
        }
        if (allowed) {
          for (int32_t s = 0; s < states; ++s) {
            if (!allowed[s]) below[s] = kNegInf;
          }
        }
      }
      double* out = post->cell(start, end);
      for (int32_t a = 0; a < states; ++a) {
        if (allowed && !allowed[a]) continue;  // stays -infinity
        double best = below[a];
        for (int32_t u = g.unary_parent_begin[a]; u < g.unary_parent_begin[a + 1]; ++u) {
          const double score = g.unary_log_prob[u] + below[g.unary_child[u]];
          if (score > best) best = score;
        }
        out[a] = best;
      }
      if (pre) std::copy(below.begin(), below.end(), pre->cell(start, end));
      PresentLeftStates(out, kNegInf, left_begin_, &present[index]);
    }
  }
}

void MaskedViterbi::MaxMarginals(const Chart& post, const Chart& pre,
                                 std::vector<double>* mm) const {
  const Grammar& g = grammar_;
  const int32_t n = post.length();
  const int32_t states = g.num_states();
  const double best = post.score(0, n, Grammar::kRootState);
  Chart out_post(n, states), out_pre(n, states);
  out_post.cell(0, n)[Grammar::kRootState] = 0;
  std::vector<std::vector<int32_t>> present(Chart::NumCells(n));
  for (int32_t span = 1; span < n; ++span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      PresentLeftStates(post.cell(start, start + span), kNegInf, left_begin_,
                        &present[post.CellIndex(start, start + span)]);
    }
  }
  mm->assign(post.data().size(), kNegInf);
  std::vector<double> down(states);
  for (int32_t span = n; span >= 1; --span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      const int32_t end = start + span;
      const double* in_post = post.cell(start, end);
      const double* in_pre = pre.cell(start, end);
      const double* above = out_post.cell(start, end);
      double* below = out_pre.cell(start, end);
      // The unary layer: the node below is read as is (identity) or under a closed unary.
      for (int32_t c = 0; c < states; ++c) below[c] = in_pre[c] > kNegInf ? above[c] : kNegInf;
      for (int32_t a = 0; a < states; ++a) {
        if (above[a] == kNegInf || in_post[a] == kNegInf) continue;
        for (int32_t u = g.unary_parent_begin[a]; u < g.unary_parent_begin[a + 1]; ++u) {
          const int32_t c = g.unary_child[u];
          if (in_pre[c] == kNegInf) continue;
          const double score = above[a] + g.unary_log_prob[u];
          if (score > below[c]) below[c] = score;
        }
      }
      double* marginal = mm->data() + post.CellIndex(start, end) * states;
      for (int32_t s = 0; s < states; ++s) {
        const double m = std::max(in_post[s] + above[s], in_pre[s] + below[s]);
        if (m > kNegInf) marginal[s] = m - best;
      }
      if (span == 1) continue;
      // A parent's outside score below its unary layer where it has an inside one, else
      // -infinity: a rule into it then adds -infinity, which no maximum takes, so the rule loop
      // needs no test.
      for (int32_t s = 0; s < states; ++s) down[s] = in_pre[s] > kNegInf ? below[s] : kNegInf;
      for (int32_t split = start + 1; split < end; ++split) {
        const double* left = post.cell(start, split);
        const double* right = post.cell(split, end);
        double* left_out = out_post.cell(start, split);
        double* right_out = out_post.cell(split, end);
        for (int32_t l : present[post.CellIndex(start, split)]) {
          const double left_score = left[l];
          double left_best = left_out[l];  // in a register across the rules of l
          for (int32_t pair = left_begin_[l]; pair < left_begin_[l + 1]; ++pair) {
            const int32_t r = pair_right_[pair];
            const double right_score = right[r];
            if (right_score == kNegInf) continue;
            double right_best = right_out[r];
            for (int32_t k = pair_begin_[pair]; k < pair_begin_[pair + 1]; ++k) {
              const double through = down[parent_[k]] + log_prob_[k];
              left_best = std::max(left_best, through + right_score);
              right_best = std::max(right_best, through + left_score);
            }
            right_out[r] = right_best;
          }
          left_out[l] = left_best;
        }
      }
    }
  }
}

CoarseToFinePruner::CoarseToFinePruner(const Grammar& fine, PruningOptions options)
    : fine_(fine), options_(std::move(options)) {}

StatusOr<std::unique_ptr<CoarseToFinePruner>> CoarseToFinePruner::Create(
    const Grammar& fine, const PruningOptions& options) {
  if (options.thresholds.empty()) return Status::Error("pruning needs at least one threshold");
  std::unique_ptr<CoarseToFinePruner> pruner(new CoarseToFinePruner(fine, options));
  const int32_t levels = NumProjectionLevels(fine);
  // The levels' projections and their Viterbi passes are independent: one thread each (en_sm6s:
  // about 3 s in a row). They share the fine states' expected counts, computed once (each level
  // computed them again: one core loaded en_sm6s's pruner in 3.6-3.8 s so, 2.7-2.8 s then).
  const std::vector<double> expected_counts = ExpectedStateCounts(fine);
  std::vector<Level> built(levels);
  std::vector<Status> statuses(levels);
  {
    std::vector<std::thread> threads;
    for (int32_t k = 0; k < levels; ++k) {
      threads.emplace_back([&, k] {
        auto projection = ProjectGrammar(fine, k, options.min_rule_prob, &expected_counts);
        if (!projection.ok()) {
          statuses[k] = projection.status();
          return;
        }
        // The Viterbi pass keeps a reference to the grammar: made once the grammar has its place.
        built[k].projection = std::make_unique<ProjectedGrammar>(std::move(*projection));
        built[k].viterbi = std::make_unique<MaskedViterbi>(built[k].projection->grammar);
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  for (int32_t k = 0; k < levels; ++k) {
    if (!statuses[k].ok()) return statuses[k];
    Level level = std::move(built[k]);
    if (k > 0) {
      // Each state of this level lies inside one state of the previous level: read it off any
      // fine state below it.
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

namespace {

class PrunedCpuBackend : public ViterbiBackend {
 public:
  PrunedCpuBackend(const Grammar& grammar, bool max_rule,
                   std::unique_ptr<CoarseToFinePruner> pruner, int threads,
                   const DecoderOptions& decoder)
      : grammar_(grammar),
        max_rule_(max_rule),
        decoder_(decoder),
        pruner_(std::move(pruner)),
        viterbi_(grammar),
        pool_(threads) {
    if (max_rule_) rules_ = std::make_unique<SumProductRules>(grammar);
  }
  std::string name() const override { return max_rule_ ? "cpu/pruned-max-rule" : "cpu/pruned"; }
  std::vector<ParseOutcome> ParseBatch(std::span<const SentenceInput> sentences) override {
    std::vector<ParseOutcome> outcomes(sentences.size());
    pool_.ParallelFor(int(sentences.size()), [&](int i, int /*worker*/) {
      try {
        outcomes[i] = ParseOne(sentences[i]);
      } catch (const std::bad_alloc&) {  // beyond the estimate below (other threads' charts)
        outcomes[i] = {.status = ParseStatus::kOutOfMemory, .message = "out of memory"};
      }
    });
    return outcomes;
  }

 private:
  ParseOutcome ParseOne(const SentenceInput& sentence) const {
    if (sentence.words.empty()) {
      ParseOutcome outcome;
      outcome.status = ParseStatus::kNoParse;
      outcome.message = "empty sentence";
      return outcome;
    }
    // The fine mask (a byte an item) and the fine charts: max-rule's inside and outside, or
    // Viterbi's.
    const int32_t n = static_cast<int32_t>(sentence.words.size());
    const double states = grammar_.num_states();
    const double per_cell = max_rule_ ? 17 * states + 24.0 * grammar_.num_symbols() : 9 * states;
    if (std::string why = ChartsDoNotFit(n, ChartBytes(n, per_cell)); !why.empty()) {
      return {.status = ParseStatus::kOutOfMemory, .message = why};
    }
    ItemMask mask;
    const bool pruned = pruner_->Prune(sentence.lexical, &mask);
    ParseOutcome outcome = Decode(sentence, pruned ? &mask : nullptr);
    // Pruning can in rare cases cut every derivation of the fine grammar: parse such a sentence
    // unpruned rather than lose it.
    if (pruned && outcome.status == ParseStatus::kNoParse) outcome = Decode(sentence, nullptr);
    return outcome;
  }
  ParseOutcome Decode(const SentenceInput& sentence, const ItemMask* mask) const {
    if (max_rule_) {
      return ParseMaxRule(grammar_, *rules_, sentence, mask ? &mask->allowed : nullptr, decoder_);
    }
    Chart chart;
    viterbi_.Inside(sentence.lexical, mask, &chart, nullptr);
    return ParseWithChart(grammar_, sentence, chart);
  }

  const Grammar& grammar_;
  bool max_rule_;
  DecoderOptions decoder_;
  std::unique_ptr<CoarseToFinePruner> pruner_;
  MaskedViterbi viterbi_;
  std::unique_ptr<SumProductRules> rules_;
  ThreadPool pool_;
};

}  // namespace

StatusOr<std::unique_ptr<ViterbiBackend>> MakePrunedCpuBackend(const Grammar& grammar,
                                                               const std::string& decoder,
                                                               const PruningOptions& options,
                                                               int threads,
                                                               const DecoderOptions& decoding) {
  if (decoder != "viterbi" && decoder != "max-rule") {
    return Status::Error("unknown decoder '" + decoder + "' (expected max-rule or viterbi)");
  }
  auto pruner = CoarseToFinePruner::Create(grammar, options);
  if (!pruner.ok()) return pruner.status();
  return std::unique_ptr<ViterbiBackend>(
      new PrunedCpuBackend(grammar, decoder == "max-rule", std::move(*pruner), threads, decoding));
}

}  // namespace cky
