#include "parser/cuda_pruned_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "common/thread_pool.h"
#include "cuda/common/device.h"
#include "cuda/pruning/pruned_viterbi.h"
#include "parser/cuda_backend.h"
#include "parser/cuda_max_rule_backend.h"
#include "parser/device_batches.h"

namespace cky {

struct CudaCoarseToFine::Impl {
  std::unique_ptr<CoarseToFinePruner> pruner;
  std::unique_ptr<cuda::DevicePrunedViterbi> device;
  CudaPrunedOptions options;
  ThreadPool pool;
  explicit Impl(const CudaPrunedOptions& o) : options(o), pool(o.threads) {}
};

CudaCoarseToFine::CudaCoarseToFine(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)), pruner_(impl_->pruner.get()) {}
CudaCoarseToFine::~CudaCoarseToFine() = default;

StatusOr<std::unique_ptr<CudaCoarseToFine>> CudaCoarseToFine::Create(
    const Grammar& fine, const PruningOptions& pruning, const CudaPrunedOptions& options) {
  if (!cuda::BuiltWithCuda()) return Status::Error("this build has no CUDA support");
  if (!cuda::DeviceAvailable()) return Status::Error("no CUDA device");
  auto pruner = CoarseToFinePruner::Create(fine, pruning);
  if (!pruner.ok()) return pruner.status();
  auto impl = std::make_unique<Impl>(options);
  impl->pruner = std::move(*pruner);
  const CoarseToFinePruner& p = *impl->pruner;
  std::vector<cuda::PruningLevelArrays> levels;
  auto arrays = [](const Grammar& g) {
    const cuda::GrammarArrays v = CudaGrammarArrays(g);  // the exact backend's view of g
    return cuda::PruningLevelArrays{v.num_states,          v.num_binary,        v.binary_parent,
                                    v.binary_left,         v.binary_right,      v.binary_log_prob,
                                    v.binary_parent_begin, v.num_unary,         v.unary_child,
                                    v.unary_log_prob,      v.unary_parent_begin};
  };
  for (int32_t k = 0; k < p.num_levels(); ++k) {
    cuda::PruningLevelArrays a = arrays(p.level(k).grammar);
    if (k > 0) a.to_coarser = p.to_coarser(k).data();
    a.threshold = p.threshold(k);
    levels.push_back(a);
  }
  cuda::PruningLevelArrays fine_arrays = arrays(fine);
  if (p.num_levels() > 0) fine_arrays.to_coarser = p.fine_to_last().data();
  levels.push_back(fine_arrays);
  std::string error;
  cuda::DevicePrunedViterbiOptions device_options{
      .max_batch_bytes = options.max_batch_bytes,
      .keep_level_survivors = options.keep_level_survivors,
      .fine_mask_only = options.fine_mask_only};
  if (options.pruning_kernels > 0) device_options.pruning_kernels = options.pruning_kernels;
  impl->device = cuda::DevicePrunedViterbi::Create(levels, device_options, &error);
  if (!impl->device) return Status::Error("CUDA pruned backend: " + error);
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

void CudaCoarseToFine::SetBatchLimit(std::function<size_t(int32_t)> also_needs,
                                     size_t also_budget) {
  impl_->options.also_needs = std::move(also_needs);
  impl_->options.also_budget = also_budget;
}

void CudaCoarseToFine::SetProfiling(bool on) {
  impl_->device->SetProfiling(on);
  project_seconds_ = device_seconds_ = sort_seconds_ = visit_seconds_ = 0;
}

std::string CudaCoarseToFine::ProfileReport() const {
  char host[256];
  std::snprintf(host, sizeof host,
                "; host s: projected lexical scores %.3f, device batches %.3f, entry sort %.3f, "
                "visits %.3f",
                project_seconds_, device_seconds_, sort_seconds_, visit_seconds_);
  return impl_->device->ProfileReport() + host;
}

void CudaCoarseToFine::Run(std::span<const LexicalScores* const> sentences,
                           const std::function<void(CudaPrunedBatch&)>& visit,
                           std::vector<size_t>* failed, std::string* why, PruningStats* stats) {
  cuda::DevicePrunedViterbi& device = *impl_->device;
  const CudaPrunedOptions& options = impl_->options;
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
      [&](const std::vector<size_t>& batch) { return RunBatch(sentences, batch, visit, stats); },
      [&](size_t i, const DeviceFailure& failure) {
        failed->push_back(i);
        *why = failure.Why();
      });
}

std::optional<DeviceFailure> CudaCoarseToFine::RunBatch(
    std::span<const LexicalScores* const> sentences, const std::vector<size_t>& batch,
    const std::function<void(CudaPrunedBatch&)>& visit, PruningStats* stats) {
  const CoarseToFinePruner& p = *impl_->pruner;
  const int32_t levels = p.num_levels();
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto seconds = [](auto since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  };
  auto started = now();
  // Each sentence's lexical scores at every pre-parse level, projected on the host.
  std::vector<std::vector<LexicalScores>> projected(batch.size());
  impl_->pool.ParallelFor(int(batch.size()), [&](int b, int) {
    projected[b].resize(levels);
    for (int32_t k = 0; k < levels; ++k) {
      ProjectLexicalScores(p.level(k), *sentences[batch[b]], &projected[b][k]);
    }
  });
  std::vector<cuda::PrunedSentenceRef> refs(batch.size());
  for (size_t b = 0; b < batch.size(); ++b) {
    refs[b].length = sentences[batch[b]]->length;
    for (int32_t k = 0; k < levels; ++k) refs[b].lexical.push_back(projected[b][k].scores.data());
    refs[b].lexical.push_back(sentences[batch[b]]->scores.data());
  }
  project_seconds_ += seconds(started);
  started = now();
  cuda::PrunedBatchCharts charts;
  std::string error;
  const cuda::PrunedBatchResult result = impl_->device->ParseBatch(refs, &charts, &error);
  device_seconds_ += seconds(started);
  started = now();
  if (result != cuda::PrunedBatchResult::kOk) {
    return DeviceFailure{.out_of_memory = result == cuda::PrunedBatchResult::kOutOfMemory,
                         .error = error};
  }
  if (stats) {
    PruningStats batch_stats;
    batch_stats.items_before = charts.items_before;
    batch_stats.items_after = charts.items_after;
    batch_stats.seconds.assign(charts.items_before.size(), 0.0);
    stats->Add(batch_stats);
  }
  // The device's finite entries, in no order, grouped by sentence (a counting sort, in parallel).
  CudaPrunedBatch out;
  out.indices = batch;
  out.survivors = std::move(charts.survivors);
  out.fine_mask = impl_->device->FineMask();
  const int32_t states = p.fine().num_states();
  const size_t sentences_in_batch = batch.size();
  out.num_states = states;
  std::vector<int32_t> sentence_of_cell;  // batch cell -> batch sentence
  for (size_t b = 0; b < sentences_in_batch; ++b) {
    out.lengths.push_back(refs[b].length);
    sentence_of_cell.insert(sentence_of_cell.end(), Chart::NumCells(refs[b].length), int32_t(b));
  }
  const int chunks = impl_->pool.threads();
  const size_t count = charts.fine_count;
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

namespace {

class CudaPrunedBackend : public ViterbiBackend {
 public:
  CudaPrunedBackend(const Grammar& grammar, std::unique_ptr<CudaCoarseToFine> device, int threads)
      : grammar_(grammar),
        device_(std::move(device)),
        threads_(threads),
        pool_(threads),
        charts_(pool_.threads()) {}
  std::string name() const override { return "cuda/pruned"; }

  std::vector<ParseOutcome> ParseBatch(std::span<const SentenceInput> sentences) override {
    std::vector<ParseOutcome> outcomes(sentences.size());
    std::vector<const LexicalScores*> lexical;
    std::vector<size_t> index;  // lexical[j] is sentences[index[j]]
    for (size_t i = 0; i < sentences.size(); ++i) {
      if (sentences[i].words.empty()) {
        outcomes[i].status = ParseStatus::kNoParse;
        outcomes[i].message = "empty sentence";
        continue;
      }
      lexical.push_back(&sentences[i].lexical);
      index.push_back(i);
    }
    std::vector<size_t> failed, unpruned;
    std::string why;
    std::mutex mutex;
    // Trees are extracted in the background, in parallel, while the device runs the next batch.
    std::thread extraction;
    auto finish = [&] {
      if (extraction.joinable()) extraction.join();
    };
    device_->Run(
        lexical,
        [&](CudaPrunedBatch& batch) {
          finish();
          extraction = std::thread([&, batch = std::move(batch)] {
            pool_.ParallelFor(int(batch.indices.size()), [&](int b, int worker) {
              const size_t i = index[batch.indices[b]];
              Chart& chart = charts_[worker];
              batch.FillChart(b, &chart);
              outcomes[i] = ParseWithChart(grammar_, sentences[i], chart);
              batch.ClearChart(b, &chart);
              if (outcomes[i].status == ParseStatus::kNoParse) {
                std::lock_guard<std::mutex> lock(mutex);
                unpruned.push_back(i);
              }
            });
          });
        },
        &failed, &why);
    finish();
    for (size_t j : failed) unpruned.push_back(index[j]);
    if (!unpruned.empty()) ParseExactly(sentences, unpruned, &outcomes);
    return outcomes;
  }

 private:
  // As the CPU pruned backend: a sentence pruning loses is parsed without pruning.
  void ParseExactly(std::span<const SentenceInput> sentences, std::vector<size_t> which,
                    std::vector<ParseOutcome>* outcomes) {
    std::sort(which.begin(), which.end());
    if (!exact_) {
      auto cuda = MakeCudaBackend(grammar_, CudaBackendOptions{.extraction_threads = threads_});
      exact_ = cuda.ok() ? std::move(*cuda) : MakeCpuBackend(grammar_, threads_);
    }
    std::vector<SentenceInput> inputs;
    for (size_t i : which) inputs.push_back(sentences[i]);
    std::vector<ParseOutcome> exact = exact_->ParseBatch(inputs);
    for (size_t j = 0; j < which.size(); ++j) (*outcomes)[which[j]] = std::move(exact[j]);
  }

  const Grammar& grammar_;
  std::unique_ptr<CudaCoarseToFine> device_;
  int threads_;
  ThreadPool pool_;
  std::vector<Chart> charts_;  // one per extraction worker, all -infinity between sentences
  std::unique_ptr<ViterbiBackend> exact_;
};

}  // namespace

StatusOr<std::unique_ptr<ViterbiBackend>> MakeCudaPrunedBackend(const Grammar& grammar,
                                                                const PruningOptions& pruning,
                                                                const CudaPrunedOptions& options) {
  auto device = CudaCoarseToFine::Create(grammar, pruning, options);
  if (!device.ok()) return device.status();
  return std::unique_ptr<ViterbiBackend>(
      new CudaPrunedBackend(grammar, std::move(*device), options.threads));
}

namespace {

// Pruned max-rule on the device: CudaCoarseToFine leaves each batch's fine mask on the device,
// the inside-outside passes run over the same batch with it. The sentences whose pruned chart has
// no parse are parsed again by the same inside-outside passes without a mask (exactly).
class CudaPrunedMaxRuleBackend : public ViterbiBackend {
 public:
  CudaPrunedMaxRuleBackend(const Grammar& grammar, const PruningOptions& pruning,
                           std::unique_ptr<CudaCoarseToFine> pruner,
                           std::unique_ptr<cuda::DeviceInsideOutside> device,
                           const CudaPrunedOptions& options, const DecoderOptions& decoding)
      : grammar_(grammar),
        pruning_(pruning),
        pruner_(std::move(pruner)),
        device_(std::move(device)),
        threads_(options.threads),
        max_batch_sentences_(options.max_batch_sentences),
        decoding_(decoding),
        pool_(options.threads) {
    if (decoding_.kbest > 1) host_rules_ = std::make_unique<SumProductRules>(grammar);
  }
  ~CudaPrunedMaxRuleBackend() override { FinishExtraction(); }
  std::string name() const override { return "cuda/pruned-max-rule"; }

  std::vector<ParseOutcome> ParseBatch(std::span<const SentenceInput> sentences) override {
    std::vector<ParseOutcome> outcomes(sentences.size());
    std::vector<const LexicalScores*> lexical;
    std::vector<size_t> index;   // lexical[j] is sentences[index[j]]
    std::vector<size_t> on_cpu;  // sentences the device cannot take: CPU pruned max-rule
    for (size_t i = 0; i < sentences.size(); ++i) {
      if (sentences[i].words.empty()) {
        outcomes[i].status = ParseStatus::kNoParse;
        outcomes[i].message = "empty sentence";
      } else if (Length(sentences[i]) > device_->MaxLength()) {
        on_cpu.push_back(i);
      } else {
        lexical.push_back(&sentences[i].lexical);
        index.push_back(i);
      }
    }
    std::vector<size_t> failed;
    std::string why;
    unpruned_.clear();
    pruner_->Run(
        lexical,
        [&](CudaPrunedBatch& batch) {
          // The batch's fine mask holds its sentences' cells one after another, so a retry of
          // positions [b, e) of the batch starts at the cells of positions [0, b).
          std::vector<size_t> which, positions;  // sentence indices, batch order; 0, 1, ...
          std::vector<int64_t> cells_before = {0};
          for (size_t b : batch.indices) {
            positions.push_back(which.size());
            which.push_back(index[b]);
            cells_before.push_back(cells_before.back() +
                                   Chart::NumCells(Length(sentences[which.back()])));
          }
          RunSplittingFailedBatches(
              positions,
              [&](const std::vector<size_t>& range) {
                std::vector<size_t> subset;
                for (size_t k : range) subset.push_back(which[k]);
                const uint8_t* mask = batch.fine_mask;
                if (mask) mask += cells_before[range[0]] * grammar_.num_states();
                return RunDeviceBatch(sentences, subset, mask, &outcomes);
              },
              [&](size_t k, const DeviceFailure&) { on_cpu.push_back(which[k]); });
        },
        &failed, &why);
    FinishExtraction();
    // As the CPU pruned backend: a sentence pruning loses is parsed without pruning, here in
    // batches that fit the device.
    std::sort(unpruned_.begin(), unpruned_.end());  // the extraction threads' order varies
    RunInDeviceBatches(
        std::move(unpruned_), [&](size_t i) { return Length(sentences[i]); },
        [&](int32_t n) { return device_->BytesForSentence(n); },
        {.max_sentences = max_batch_sentences_, .budget = device_->BatchBudget()},
        [&](const std::vector<size_t>& batch) {
          return RunDeviceBatch(sentences, batch, nullptr, &outcomes);
        },
        [&](size_t i, const DeviceFailure&) { on_cpu.push_back(i); });
    unpruned_.clear();
    FinishExtraction();
    for (size_t j : failed) on_cpu.push_back(index[j]);
    if (!on_cpu.empty()) ParseOnCpu(sentences, on_cpu, &outcomes);
    return outcomes;
  }

 private:
  static int32_t Length(const SentenceInput& s) { return int32_t(s.words.size()); }

  // The inside-outside and max-rule passes over sentences `which`, whose fine masks start at
  // `mask` (device memory, the sentences' cells one after another; null: unpruned, exact). On a
  // device failure it returns what failed (the caller retries smaller; a sentence that fails alone
  // goes to the CPU pruned backend).
  std::optional<DeviceFailure> RunDeviceBatch(std::span<const SentenceInput> sentences,
                                              const std::vector<size_t>& which, const uint8_t* mask,
                                              std::vector<ParseOutcome>* outcomes) {
    std::vector<cuda::IoSentence> refs;
    for (size_t i : which)
      refs.push_back({Length(sentences[i]), sentences[i].lexical.scores.data()});
    std::vector<cuda::IoResult> results;
    std::string error;
    const bool charts = host_rules_ != nullptr;  // k-best decodes from the device's charts
    const cuda::IoBatchResult result =
        device_->MaskedMaxRuleBatch(refs, mask, charts, &results, &error);
    if (result != cuda::IoBatchResult::kOk) {
      FinishExtraction();  // a retry writes the host buffer the extraction may read
      return DeviceFailure{.out_of_memory = result == cuda::IoBatchResult::kOutOfMemory,
                           .error = error};
    }
    // Trees are extracted in the background while the device runs the next batch (the device
    // keeps two host result buffers).
    FinishExtraction();
    const bool pruned = mask != nullptr;
    extraction_ = std::thread(
        [this, sentences, range = which, results = std::move(results), outcomes, pruned] {
          pool_.ParallelFor(int(range.size()), [&](int k, int) {
            ParseOutcome& outcome = (*outcomes)[range[k]];
            outcome = DeviceMaxRuleOutcome(grammar_, sentences[range[k]], results[k],
                                           host_rules_.get(), decoding_);
            if (pruned && outcome.status == ParseStatus::kNoParse) {
              std::lock_guard<std::mutex> lock(mutex_);
              unpruned_.push_back(range[k]);
            }
          });
        });
    return std::nullopt;
  }

  void FinishExtraction() {
    if (extraction_.joinable()) extraction_.join();
  }

  // The CPU pruned max-rule backend (the same results: it falls back to exact parsing as we do).
  void ParseOnCpu(std::span<const SentenceInput> sentences, std::vector<size_t> which,
                  std::vector<ParseOutcome>* outcomes) {
    if (!pruned_cpu_) {
      auto cpu = MakePrunedCpuBackend(grammar_, "max-rule", pruning_, threads_, decoding_);
      pruned_cpu_ = std::move(*cpu);  // cannot fail: the decoder is known, the options were used
    }
    std::sort(which.begin(), which.end());
    std::vector<SentenceInput> inputs;
    for (size_t i : which) inputs.push_back(sentences[i]);
    std::vector<ParseOutcome> parsed = pruned_cpu_->ParseBatch(inputs);
    for (size_t j = 0; j < which.size(); ++j) {
      (*outcomes)[which[j]] = std::move(parsed[j]);
      ParseOutcome& outcome = (*outcomes)[which[j]];
      if (outcome.status == ParseStatus::kOk && outcome.message.empty()) {
        outcome.message = "parsed on the CPU: a sentence of " +
                          std::to_string(sentences[which[j]].words.size()) +
                          " words the device could not take";
      }
    }
  }

  const Grammar& grammar_;
  PruningOptions pruning_;
  std::unique_ptr<CudaCoarseToFine> pruner_;
  std::unique_ptr<cuda::DeviceInsideOutside> device_;
  int threads_;
  int max_batch_sentences_;
  DecoderOptions decoding_;
  ThreadPool pool_;
  std::thread extraction_;
  std::mutex mutex_;
  std::vector<size_t> unpruned_;  // this call's sentences whose pruned chart had no parse
  std::unique_ptr<SumProductRules> host_rules_;  // k-best only
  std::unique_ptr<ViterbiBackend> pruned_cpu_;
};

}  // namespace

StatusOr<std::unique_ptr<ViterbiBackend>> MakeCudaPrunedMaxRuleBackend(
    const Grammar& grammar, const PruningOptions& pruning, const CudaPrunedOptions& options,
    const DecoderOptions& decoding) {
  if (!cuda::BuiltWithCuda()) return Status::Error("this build has no CUDA support");
  if (!cuda::DeviceAvailable()) return Status::Error("no CUDA device");
  size_t free_bytes = 0, total_bytes = 0;
  cuda::DeviceMemory(&free_bytes, &total_bytes);
  const double pool =
      options.max_batch_bytes ? double(options.max_batch_bytes) : double(free_bytes);
  const size_t pruner_bytes = size_t((options.max_batch_bytes ? 0.4 : 0.3) * pool);
  const size_t io_bytes = size_t((options.max_batch_bytes ? 0.6 : 0.45) * pool);
  // The inside-outside passes' rule layouts (sorting every binary rule three ways) are built on
  // another thread while the projections are (each a few seconds with en_sm6s). Pruning is not
  // offered with several devices, so both run on device 0.
  std::string error;
  std::unique_ptr<cuda::DeviceInsideOutside> device;
  std::thread io_thread([&] {
    cuda::DeviceInsideOutsideOptions io_options{.max_batch_bytes = io_bytes};
    if (options.masked_dispatch > 0) io_options.masked_dispatch = options.masked_dispatch;
    device = cuda::DeviceInsideOutside::Create(CudaSumGrammarArrays(grammar), io_options, &error);
  });
  CudaPrunedOptions pruner_options = options;
  pruner_options.max_batch_bytes = pruner_bytes;
  pruner_options.fine_mask_only = true;
  auto pruner = CudaCoarseToFine::Create(grammar, pruning, pruner_options);
  io_thread.join();
  if (!device) return Status::Error("CUDA pruned max-rule backend: " + error);
  if (!pruner.ok()) return pruner.status();
  const cuda::DeviceInsideOutside* io = device.get();
  (*pruner)->SetBatchLimit([io](int32_t length) { return io->BytesForSentence(length); },
                           io->BatchBudget());
  return std::unique_ptr<ViterbiBackend>(new CudaPrunedMaxRuleBackend(
      grammar, pruning, std::move(*pruner), std::move(device), options, decoding));
}

}  // namespace cky
