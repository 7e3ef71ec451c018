#include "parser/cuda_pruner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "common/thread_pool.h"
#include "common/timeline.h"
#include "cuda/common/device.h"
#include "cuda/inside_outside/sum_layouts.h"
#include "cuda/pruning/pruned_viterbi.h"
#include "parser/cuda_grammar_view.h"
#include "parser/device_batches.h"

namespace cky {

struct CudaCoarseToFine::Impl {
  std::shared_ptr<const CoarseToFinePruner> pruner;
  std::unique_ptr<cuda::DevicePrunedViterbi> device;
  CudaPrunerOptions options;
  ThreadPool pool;
  // Each batch sentence's projected lexical scores per level, kept from batch to batch so that
  // their memory is reused (fresh allocations of gigabytes a corpus cost page faults on every
  // thread).
  std::vector<std::vector<LexicalScores>> projected;
  // The first pre-parse level's projections of the next batch's sentences (RunBatch's
  // `next_batch`), made while the device computes the current batch: ahead[b] belongs to
  // ahead_of[b].
  std::vector<const LexicalScores*> ahead_of;
  std::vector<LexicalScores> ahead;
  // The first pre-parse level's projections of the sentences options.first_lexical gave Create,
  // by their ahead_id, until a batch does not find its sentences here.
  std::unordered_map<uint64_t, LexicalScores> first;
  std::vector<int32_t> pair_groups;  // CudaCoarseToFine::pair_groups()
  explicit Impl(const CudaPrunerOptions& o) : options(o), pool(o.threads) {}
};

CudaCoarseToFine::CudaCoarseToFine(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)), pruner_(impl_->pruner) {}
CudaCoarseToFine::~CudaCoarseToFine() = default;

namespace {

// Which earlier pre-parse level's states tile a level's pair kernels (cuda::GroupStates), given
// the level's state count and the earlier levels' (coarsest first): the finest with at least
// kMinGroupStates of the level's states a group on average and at most cuda::kMaxPairSymbols
// states (the live lists' masks); -1 for none. The groups skip a (group pair, cell) whose groups
// are absent from the cell's children, where symbol tiles walk every substate of a symbol present
// (a pruned chart keeps only some of a symbol's coarse states); smaller tiles leave most of a
// pair kernel's block idle (groups of 2 states made levels slower: bench/RESULTS-LOG.md).
int32_t PairGroupLevel(int32_t states, const std::vector<int32_t>& earlier) {
  constexpr int64_t kMinGroupStates = 4;
  for (int32_t j = int32_t(earlier.size()) - 1; j >= 0; --j) {
    if (earlier[j] <= cuda::kMaxPairSymbols && earlier[j] * kMinGroupStates <= states) return j;
  }
  return -1;
}

// CudaPrunerOptions::pair_group_substates' default. Cutting smaller symbols too made the fine
// pass slower (their tiles of a few states leave most of a pair kernel's block idle): 16 and 8
// gained less than 32, and with en_sm6s (flatter posteriors: a cell keeps most of a symbol's
// coarse states) cutting every symbol was slower than none (bench/RESULTS-LOG.md).
constexpr int32_t kPairGroupSubstates = 32;

// A level's pair-kernel groups from `coarse`, its states' states at an earlier level: a symbol of
// at least `split` states cut where its coarse state changes, a smaller one whole. Each group is
// one run of states, as cuda::GroupStates requires.
std::optional<cuda::StateGroups> PairGroups(const cuda::GrammarView& g, const int32_t* coarse,
                                            int32_t split) {
  std::vector<int32_t> group_of(g.num_states);
  int32_t groups = 0;
  for (int32_t s = 0; s < g.num_states; ++s) {
    const int32_t symbol = g.state_symbol[s];
    const bool first = s == 0 || g.state_symbol[s - 1] != symbol;
    if (first || (g.symbol_num_substates[symbol] >= split && coarse[s] != coarse[s - 1])) ++groups;
    group_of[s] = groups - 1;
  }
  return cuda::GroupStates(g, group_of.data(), groups);
}

// Moves the first-level projection that Create made for the scores numbered `id`
// (LexicalScores::ahead_id) into *to and forgets it; false when there is none.
bool TakeFirstProjection(std::unordered_map<uint64_t, LexicalScores>& first, uint64_t id,
                         LexicalScores* to) {
  auto made = first.find(id);
  if (made == first.end()) return false;
  *to = std::move(made->second);
  first.erase(made);
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<CudaCoarseToFine>> CudaCoarseToFine::Create(
    const Grammar& fine, const PruningOptions& pruning, const CudaPrunerOptions& options) {
  if (!cuda::BuiltWithCuda()) return Status::Error("this build has no CUDA support");
  // The device's pre-parse kernels and the CPU pruner add in the same order (pair first with
  // kernels 4 to 6, 6 the default; the rule first with 1 to 3), so that their survivors are the
  // same.
  const int kernels =
      options.pruning_kernels > 0 ? options.pruning_kernels : cuda::kDefaultPruningKernels;
  PruningOptions ordered = pruning;
  ordered.order = kernels >= 4 ? AdditionOrder::kPairFirst : AdditionOrder::kRuleFirst;
  // Pruned Viterbi parses the fine grammar: when on the pair kernels, their inside layout (the
  // load's longest host work with en_sm6s) is built while the projections are, tiled by the
  // states of a pre-parse level (PairGroupLevel). The jthread joins before its results go.
  const int32_t split = options.pair_group_substates > 0    ? options.pair_group_substates
                        : options.pair_group_substates == 0 ? kPairGroupSubstates
                                                            : std::numeric_limits<int32_t>::max();
  const double sparse_below =
      options.pair_sparse_below < 0 ? cuda::kMaxPlusSparseBelow : options.pair_sparse_below;
  const cuda::GrammarView fine_view = CudaGrammarView(fine);
  const std::vector<int32_t> pre_parse_levels = CoarseToFinePruner::PreParseLevels(fine, ordered);
  std::optional<cuda::PairSumLayout> fine_pairs;
  std::optional<cuda::StateGroups> fine_groups;
  std::jthread fine_pairs_builder;
  if (!options.fine_mask_only && cuda::LevelRunsPairKernels(fine_view, kernels)) {
    fine_pairs_builder = std::jthread([&] {
      timeline::Scope scope("load: the fine grammar's pair layout (beside the projections)");
      std::vector<std::vector<int32_t>> maps(pre_parse_levels.size());
      std::vector<int32_t> states(pre_parse_levels.size());
      for (size_t j = 0; j < pre_parse_levels.size(); ++j) {
        // A level whose projection fails is never chosen (the pruner then fails the same way).
        const StatusOr<int32_t> count = ProjectStates(fine, pre_parse_levels[j], &maps[j]);
        states[j] = count.ok() ? *count : std::numeric_limits<int32_t>::max();
      }
      const int j = PairGroupLevel(fine_view.num_states, states);
      if (j >= 0) fine_groups = PairGroups(fine_view, maps[j].data(), split);
      fine_pairs = cuda::BuildPairSumLayout(
          fine_groups ? fine_groups->AsSymbols(fine_view) : fine_view, cuda::PairSumPass::kInside,
          cuda::PairWeights::kLogProbabilities, sparse_below);
    });
  }
  StatusOr<std::unique_ptr<CoarseToFinePruner>> pruner = [&] {
    timeline::Scope scope("load: pre-parse grammars (projections)");
    return CoarseToFinePruner::Create(fine, ordered);
  }();
  if (!pruner.ok()) return pruner.status();
  // The projections (host work) first: they run while the CUDA context is made
  // (apps/parse_command.cpp).
  if (!cuda::DeviceAvailable()) return Status::Error("no CUDA device");
  auto impl = std::make_unique<Impl>(options);
  impl->pruner = std::move(*pruner);
  const CoarseToFinePruner& p = *impl->pruner;
  // The first batch's sentences, scored beside the load: their first level's projections are made
  // while the device's part below waits for the CUDA context, so that the first batch's kernels
  // need not wait for them (RunBatch). Joined before Create returns (the caller may then move the
  // scores).
  std::jthread first_projections;
  if (options.first_lexical && p.num_levels() > 0) {
    first_projections = std::jthread([&options, &p, &fine, im = impl.get()] {
      timeline::Scope scope("load: the first batch's projections (beside the device)");
      const std::span<const LexicalScores> given = options.first_lexical();
      std::vector<LexicalScores> made(given.size());
      im->pool.ParallelFor(static_cast<int>(given.size()), [&](int i, int) {
        if (given[i].ahead_id == 0 || given[i].num_states != fine.num_states()) return;
        ProjectLexicalScores(p.level(0), given[i], &made[i]);
      });
      for (size_t i = 0; i < given.size(); ++i) {
        if (given[i].ahead_id != 0 && made[i].num_states > 0) {
          im->first.emplace(given[i].ahead_id, std::move(made[i]));
        }
      }
    });
  }
  std::vector<cuda::PruningLevel> levels;
  std::vector<std::optional<cuda::StateGroups>> level_groups(p.num_levels());
  for (int32_t k = 0; k < p.num_levels(); ++k) {
    levels.push_back({.grammar = CudaGrammarView(p.level(k).grammar),
                      .to_coarser = k > 0 ? p.to_coarser(k).data() : nullptr,
                      .threshold = p.threshold(k)});
    // Level k's pair kernels by the states of an earlier level j: the to_coarser maps composed.
    std::vector<int32_t> states(k);
    for (int32_t j = 0; j < k; ++j) states[j] = p.level(j).grammar.num_states();
    const int32_t j = PairGroupLevel(levels[k].grammar.num_states, states);
    if (j < 0) continue;
    std::vector<int32_t> to_j(levels[k].grammar.num_states);
    for (int32_t s = 0; s < int32_t(to_j.size()); ++s) {
      int32_t state = s;
      for (int32_t i = k; i > j; --i) state = p.to_coarser(i)[state];
      to_j[s] = state;
    }
    level_groups[k] = PairGroups(levels[k].grammar, to_j.data(), split);
    if (level_groups[k]) levels[k].pair_groups = &*level_groups[k];
  }
  if (fine_pairs_builder.joinable()) fine_pairs_builder.join();
  levels.push_back({.grammar = fine_view,
                    .to_coarser = p.num_levels() > 0 ? p.fine_to_last().data() : nullptr,
                    .inside_pairs = fine_pairs ? &*fine_pairs : nullptr,
                    .pair_groups = fine_groups ? &*fine_groups : nullptr});
  for (const cuda::PruningLevel& level : levels)
    impl->pair_groups.push_back(level.pair_groups ? level.pair_groups->num_groups() : 0);
  std::string error;
  cuda::DevicePrunedViterbiOptions device_options{
      .max_batch_bytes = options.max_batch_bytes,
      .free_memory_share = options.free_memory_share,
      .keep_level_survivors = options.keep_level_survivors,
      .fine_mask_only = options.fine_mask_only};
  device_options.pruning_kernels = kernels;
  device_options.device_trees = options.device_trees;
  device_options.tree_node_slots = options.tree_node_slots;
  device_options.dense_chunk = options.dense_chunk;
  device_options.sparse_below = sparse_below;
  device_options.pair_cells = options.pair_cells;
  {
    timeline::Scope scope("load: pre-parse grammars on the device");
    impl->device = cuda::DevicePrunedViterbi::Create(levels, device_options, &error);
  }
  if (!impl->device) return Status::Error("CUDA pruned backend: " + error);
  if (first_projections.joinable()) first_projections.join();
  return std::unique_ptr<CudaCoarseToFine>(new CudaCoarseToFine(std::move(impl)));
}

void CudaPrunedBatch::FillChart(size_t b, Chart* chart) const {
  chart->Resize(lengths[b], num_states);
  double* scores = chart->data().data();
  for (int64_t j = entry_begin[b]; j < entry_begin[b + 1]; ++j)
    scores[entry_index[j]] = entry_score[j];
}

void CudaPrunedBatch::ClearChart(size_t b, Chart* chart) const {
  double* scores = chart->data().data();
  for (int64_t j = entry_begin[b]; j < entry_begin[b + 1]; ++j) scores[entry_index[j]] = kNegInf;
}

const std::vector<int32_t>& CudaCoarseToFine::pair_groups() const { return impl_->pair_groups; }

size_t CudaCoarseToFine::BytesForSentence(int32_t length) const {
  return impl_->device->BytesForSentence(length);
}

size_t CudaCoarseToFine::BatchBudget() const { return impl_->device->BatchBudget(); }

void CudaCoarseToFine::SetProfiling(bool on) {
  impl_->device->SetProfiling(on);
  project_seconds_ = device_seconds_ = sort_seconds_ = visit_seconds_ = 0;
  profiling_ = on;
  kept_ = PruningStats();
}

std::string CudaCoarseToFine::ProfileReport() const {
  char host[256];
  std::snprintf(
      host, sizeof host,
      "; host s: projected lexical scores %.3f, device batches (less the host work beside) %.3f, "
      "entry sort %.3f, visits %.3f",
      project_seconds_, device_seconds_, sort_seconds_, visit_seconds_);
  // Which hierarchy level each device level L<k> is, and the share of the items it was given
  // that it kept.
  std::string levels = "; L0.. are hierarchy levels";
  const CoarseToFinePruner& p = *impl_->pruner;
  for (int32_t k = 0; k < p.num_levels(); ++k) {
    levels += (k ? ", " : " ") + std::to_string(p.level(k).level);
  }
  if (!kept_.items_before.empty()) {
    levels += "; kept";
    for (size_t k = 0; k < kept_.items_before.size(); ++k) {
      char share[64];
      std::snprintf(share, sizeof share, "%s L%zu %.1f%% of %.3g", k ? "," : "", k,
                    kept_.items_before[k] > 0
                        ? 100.0 * double(kept_.items_after[k]) / double(kept_.items_before[k])
                        : 0.0,
                    double(kept_.items_before[k]));
      levels += share;
    }
  }
  return impl_->device->ProfileReport() + levels + host;
}

void CudaCoarseToFine::Run(std::span<const LexicalScores* const> sentences,
                           const std::function<void(CudaPrunedBatch&)>& visit,
                           std::vector<size_t>* failed, std::string* why, PruningStats* stats) {
  cuda::DevicePrunedViterbi& device = *impl_->device;
  const CudaPrunerOptions& options = impl_->options;
  std::vector<size_t> order;
  for (size_t i = 0; i < sentences.size(); ++i) {
    if (sentences[i]->length < 1 ||
        device.BytesForSentence(sentences[i]->length) > device.BatchBudget() ||
        (options.also_needs && options.also_needs(sentences[i]->length) > options.also_budget)) {
      failed->push_back(i);
      *why = "does not fit the device batch budget";
    } else {
      order.push_back(i);
    }
  }
  RunInDeviceBatches(
      std::move(order), [&](size_t i) { return sentences[i]->length; },
      [&](int32_t n) { return device.BytesForSentence(n); },
      {.max_sentences = options.max_batch_sentences,
       .budget = device.BatchBudget(),
       .also_budget = options.also_budget,
       .also_bytes = options.also_needs},
      [&](const std::vector<size_t>& batch, const std::vector<size_t>* next) {
        std::vector<const LexicalScores*> coming;
        if (next) {
          for (size_t i : *next) coming.push_back(sentences[i]);
        }
        return RunBatch(sentences, batch, visit, stats, /*beside_device=*/{}, coming);
      },
      [&](size_t i, const DeviceFailure& failure) {
        failed->push_back(i);
        *why = failure.Why();
      });
}

std::optional<DeviceFailure> CudaCoarseToFine::RunBatch(
    std::span<const LexicalScores* const> sentences, const std::vector<size_t>& batch,
    const std::function<void(CudaPrunedBatch&)>& visit, PruningStats* stats,
    const BesideDevice& beside_device, std::span<const LexicalScores* const> next_batch) {
  const CoarseToFinePruner& p = *impl_->pruner;
  const int32_t levels = p.num_levels();
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto seconds = [](auto since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  };
  auto started = now();
  // Each sentence's lexical scores at every pre-parse level, projected on the host level by level
  // when the device asks for them (the next level's while it computes the previous one).
  std::vector<std::vector<LexicalScores>>& projected = impl_->projected;
  if (projected.size() < batch.size()) projected.resize(batch.size());
  std::vector<cuda::PrunedSentenceRef> refs(batch.size());
  for (size_t b = 0; b < batch.size(); ++b) {
    projected[b].resize(levels);
    refs[b].length = sentences[batch[b]]->length;
    refs[b].lexical.assign(levels, nullptr);
    refs[b].lexical.push_back(sentences[batch[b]]->scores.data());
  }
  // The first level's projections made ahead (the previous batch's `next_batch`), when they are
  // this batch's sentences': no kernel has to wait for them. Swapped, so that buffers are reused.
  std::vector<const LexicalScores*>& ahead_of = impl_->ahead_of;
  bool first_ahead = levels > 0 && ahead_of.size() == batch.size();
  for (size_t b = 0; first_ahead && b < batch.size(); ++b) {
    first_ahead = ahead_of[b] == sentences[batch[b]];
  }
  ahead_of.clear();
  // Else those made while the device's part was created, when every sentence has one (the first
  // batch); a batch that misses one ends them.
  if (levels > 0 && !first_ahead && !impl_->first.empty()) {
    bool all = true;
    for (size_t b = 0; all && b < batch.size(); ++b) {
      all = impl_->first.count(sentences[batch[b]]->ahead_id) > 0;
    }
    if (all) {
      if (impl_->ahead.size() < batch.size()) impl_->ahead.resize(batch.size());
      for (size_t b = 0; b < batch.size(); ++b) {
        TakeFirstProjection(impl_->first, sentences[batch[b]]->ahead_id, &impl_->ahead[b]);
      }
      first_ahead = true;
    } else {
      impl_->first.clear();
    }
  }
  double host_seconds = 0;  // the projections and the caller's work, apart from the device's
  const auto before_level = [&](size_t k) {
    const auto begun = now();
    if (k == 0 && first_ahead) {
      for (size_t b = 0; b < batch.size(); ++b) {
        std::swap(projected[b][0], impl_->ahead[b]);
        refs[b].lexical[0] = projected[b][0].scores.data();
      }
    } else if (k < size_t(levels)) {
      impl_->pool.ParallelFor(int(batch.size()), [&](int b, int) {
        ProjectLexicalScores(p.level(int32_t(k)), *sentences[batch[b]], &projected[b][k]);
        refs[b].lexical[k] = projected[b][k].scores.data();
      });
    } else if (k == size_t(levels) + 1) {
      // Every kernel of this batch is queued and the host would only wait (k == levels, before
      // the fine rows' upload, asks for nothing: work there held up the fine pass): the caller's
      // work, then the next batch's first level, which its kernels would otherwise wait for.
      if (beside_device) beside_device(impl_->device->FineMask(), impl_->device->FineMaskReady());
      if (levels > 0 && !next_batch.empty()) {
        const auto projecting = now();
        if (impl_->ahead.size() < next_batch.size()) impl_->ahead.resize(next_batch.size());
        // (Those made beside the device's creation are taken, not made again.)
        std::vector<char> taken(next_batch.size(), 0);
        for (size_t b = 0; b < next_batch.size() && !impl_->first.empty(); ++b) {
          taken[b] = TakeFirstProjection(impl_->first, next_batch[b]->ahead_id, &impl_->ahead[b]);
        }
        impl_->pool.ParallelFor(int(next_batch.size()), [&](int b, int) {
          if (!taken[b]) ProjectLexicalScores(p.level(0), *next_batch[b], &impl_->ahead[b]);
        });
        ahead_of.assign(next_batch.begin(), next_batch.end());
        project_seconds_ += seconds(projecting);
      }
    }
    if (k < size_t(levels)) project_seconds_ += seconds(begun);
    host_seconds += seconds(begun);
  };
  cuda::PrunedBatchCharts charts;
  std::string error;
  const cuda::PrunedBatchResult result =
      impl_->device->ParseBatch(refs, &charts, &error, before_level);
  device_seconds_ += seconds(started) - host_seconds;
  started = now();
  if (result != cuda::PrunedBatchResult::kOk) {
    return DeviceFailure{.out_of_memory = result == cuda::PrunedBatchResult::kOutOfMemory,
                         .error = error};
  }
  if (stats || profiling_) {
    PruningStats batch_stats;
    batch_stats.items_before = charts.items_before;
    batch_stats.items_after = charts.items_after;
    batch_stats.seconds.assign(charts.items_before.size(), 0.0);
    if (stats) stats->Add(batch_stats);
    if (profiling_) kept_.Add(batch_stats);
  }
  // The device's finite entries, in no order, grouped by sentence (a counting sort, in parallel).
  CudaPrunedBatch out;
  out.indices = batch;
  out.survivors = std::move(charts.survivors);
  out.fine_mask = impl_->device->FineMask();
  out.trees = std::move(charts.trees);
  out.root_score = std::move(charts.root_score);
  const int32_t states = p.fine().num_states();
  const size_t sentences_in_batch = batch.size();
  out.num_states = states;
  const size_t count = charts.fine_count;  // 0 with device trees or the fine mask only
  std::vector<int32_t> sentence_of_cell;   // batch cell -> batch sentence, when entries came back
  for (size_t b = 0; b < sentences_in_batch; ++b) {
    out.lengths.push_back(refs[b].length);
    if (count > 0)
      sentence_of_cell.insert(sentence_of_cell.end(), Chart::NumCells(refs[b].length), int32_t(b));
  }
  const int chunks = impl_->pool.threads();
  auto chunk_begin = [&](int c) { return count * c / chunks; };
  std::vector<std::vector<int64_t>> placed(chunks, std::vector<int64_t>(sentences_in_batch, 0));
  impl_->pool.ParallelFor(chunks, [&](int c, int) {
    for (size_t e = chunk_begin(c); e < chunk_begin(c + 1); ++e) {
      ++placed[c][sentence_of_cell[charts.fine_index[e] / states]];
    }
  });
  out.entry_begin.assign(sentences_in_batch + 1, 0);
  int64_t next = 0;
  for (size_t b = 0; b < sentences_in_batch; ++b) {
    out.entry_begin[b] = next;
    for (int c = 0; c < chunks; ++c) {
      const int64_t here = placed[c][b];
      placed[c][b] = next;
      next += here;
    }
  }
  out.entry_begin[sentences_in_batch] = next;
  out.entry_index.resize(count);
  out.entry_score.resize(count);
  impl_->pool.ParallelFor(chunks, [&](int c, int) {
    for (size_t e = chunk_begin(c); e < chunk_begin(c + 1); ++e) {
      const int64_t index = charts.fine_index[e];
      const int32_t b = sentence_of_cell[index / states];
      const int64_t slot = placed[c][b]++;
      out.entry_index[slot] = index - charts.fine_offset[b];
      out.entry_score[slot] = charts.fine_score[e];
    }
  });
  sort_seconds_ += seconds(started);
  started = now();
  visit(out);
  visit_seconds_ += seconds(started);
  return std::nullopt;
}

}  // namespace cky
