#include "parser/cuda_max_rule_backend.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <thread>

#include "common/thread_pool.h"
#include "common/timeline.h"
#include "cuda/common/device.h"
#include "parser/cpu_backend.h"
#include "parser/cuda_backend.h"
#include "parser/cuda_pruner.h"
#include "parser/device_batches.h"

namespace cky {

void DeviceMaxRuleChart(const cuda::IoResult& r, int32_t length, int32_t symbols,
                        MaxRuleChart* maxc) {
  maxc->Reset(length, symbols);  // every entry -infinity, -1
  for (size_t j = 0; j < r.entries; ++j) {
    const int32_t e = r.entry_index[j];
    const int32_t* info = r.entry_split_left_right_unary + 4 * j;
    maxc->score[e] = r.entry_score[j];
    maxc->split[e] = info[0];
    maxc->left[e] = info[1];
    maxc->right[e] = info[2];
    maxc->unary_child[e] = info[3];
  }
}

void DeviceInsideOutsideCharts(const cuda::IoResult& r, int32_t length, int32_t states,
                               InsideOutsideCharts* charts) {
  charts->log_likelihood = r.log_likelihood;
  for (auto [chart, values, scales] : {std::tuple{&charts->inside, r.inside, r.inside_scale},
                                       std::tuple{&charts->outside, r.outside, r.outside_scale}}) {
    chart->Reset(length, states);
    std::copy(values, values + chart->values.size(), chart->values.begin());
    std::copy(scales, scales + chart->log_scale.size(), chart->log_scale.begin());
  }
}

ParseOutcome DeviceMaxRuleOutcome(const Grammar& grammar, const SentenceInput& sentence,
                                  const cuda::IoResult& result, const SumProductRules* host_rules,
                                  const DecoderOptions& decoder) {
  const int32_t length = static_cast<int32_t>(sentence.words.size());
  // One chart a thread, kept from sentence to sentence: a fresh one's pages (about 1 MB for a
  // sentence of 30 words) were most of the extraction's time.
  thread_local MaxRuleChart maxc;
  DeviceMaxRuleChart(result, length, grammar.num_symbols(), &maxc);
  ParseOutcome outcome = MaxRuleOutcome(grammar, sentence.words, result.log_likelihood, maxc);
  if (host_rules != nullptr && outcome.status == ParseStatus::kOk) {
    InsideOutsideCharts io;
    DeviceInsideOutsideCharts(result, length, grammar.num_states(), &io);
    MaxRuleChart host;
    FastMaxRuleChart(grammar, *host_rules, sentence.lexical, io, &host);
    AddKBest(grammar, sentence.words, io, host, decoder, &outcome);
  }
  return outcome;
}

namespace {

int32_t Length(const SentenceInput& s) { return static_cast<int32_t>(s.words.size()); }

class CudaMaxRuleBackend : public DeviceBackend {
 public:
  CudaMaxRuleBackend(const Grammar& g, std::unique_ptr<cuda::DeviceInsideOutside> device,
                     std::unique_ptr<CudaCoarseToFine> pruner, const CudaMaxRuleOptions& options)
      : DeviceBackend(options.device),
        grammar_(g),
        device_(std::move(device)),
        pruner_(std::move(pruner)),
        decoder_(options.decoder) {
    if (decoder_.kbest > 1) host_rules_ = std::make_unique<SumProductRules>(g);
    if (timeline::Enabled()) {
      device_->SetProfiling(true);
      if (pruner_) pruner_->SetProfiling(true);
    }
  }

  std::string name() const override { return pruner_ ? "cuda/pruned-max-rule" : "cuda/max-rule"; }

 protected:
  Limits BatchLimits() const override {
    Limits limits{.budget = device_->BatchBudget(),
                  .bytes = [this](int32_t n) { return device_->BytesForSentence(n); },
                  .max_length = device_->MaxLength()};
    if (pruner_) {  // a batch fits the pre-parses' budget and the passes'
      limits.also_budget = limits.budget;
      limits.also_bytes = limits.bytes;
      limits.budget = pruner_->BatchBudget();
      limits.bytes = [this](int32_t n) { return pruner_->BytesForSentence(n); };
    }
    return limits;
  }
  bool Pruned() const override { return pruner_ != nullptr; }
  StatusOr<std::unique_ptr<Backend>> MakeCpuFallback() override {
    CpuBackendOptions cpu{.decoder = DecoderKind::kMaxRule,
                          .threads = options().extraction_threads,
                          .decoding = decoder_};
    if (pruner_) cpu.pruner = pruner_->shared_pruner();
    return MakeCpuBackend(grammar_, cpu);
  }
  std::string ProfileReport() const override {
    std::string report = device_->ProfileReport();
    if (pruner_) report = "pre-parses: " + pruner_->ProfileReport() + "; passes: " + report;
    return report;
  }

  std::optional<DeviceFailure> RunBatch(std::span<const SentenceInput> sentences,
                                        const std::vector<size_t>& batch, bool pruned,
                                        std::vector<ParseOutcome>* outcomes) override {
    if (!pruned) return RunExact(sentences, batch, outcomes);
    std::vector<const LexicalScores*> lexical;
    for (size_t i : batch) lexical.push_back(&sentences[i].lexical);
    std::vector<size_t> positions(batch.size());
    std::iota(positions.begin(), positions.end(), size_t{0});
    std::optional<DeviceFailure> failure;
    std::vector<cuda::IoResult> results;
    bool passes_ran = false;
    std::optional<DeviceFailure> pre_parse = pruner_->RunBatch(
        lexical, positions,
        [&](CudaPrunedBatch& device_batch) {
          // The fine mask holds the batch's cells in the pruner's order (device_batch.indices:
          // `positions`, the batch's order, as the passes below took them).
          std::vector<size_t> which;
          for (size_t b : device_batch.indices) which.push_back(batch[b]);
          if (!passes_ran)
            failure = RunPasses(sentences, which, device_batch.fine_mask, nullptr, &results);
          if (!failure) ExtractOutcomes(sentences, which, std::move(results), true, outcomes);
        },
        /*stats=*/nullptr,
        // The passes queued while the device pre-parses, behind the fine mask's event: their host
        // set-up and rows' upload run beside the last pre-parse level, and the device goes on to
        // them without waiting for the host. Outcomes are written only once the pruner is done.
        [&](const uint8_t* fine_mask, const void* mask_ready) {
          if (!fine_mask || !mask_ready) return;  // then the visit runs them
          failure = RunPasses(sentences, batch, fine_mask, mask_ready, &results);
          passes_ran = true;
        });
    return pre_parse ? pre_parse : failure;
  }

 private:
  static std::vector<cuda::IoSentence> PassInputs(std::span<const SentenceInput> sentences,
                                                  const std::vector<size_t>& which) {
    std::vector<cuda::IoSentence> refs;
    for (size_t i : which)
      refs.push_back({Length(sentences[i]), sentences[i].lexical.scores.data()});
    return refs;
  }

  // The exact passes over sentences[batch], then their outcomes.
  std::optional<DeviceFailure> RunExact(std::span<const SentenceInput> sentences,
                                        const std::vector<size_t>& batch,
                                        std::vector<ParseOutcome>* outcomes) {
    std::vector<cuda::IoResult> results;
    std::optional<DeviceFailure> failure = RunPasses(sentences, batch, nullptr, nullptr, &results);
    if (!failure) ExtractOutcomes(sentences, batch, std::move(results), false, outcomes);
    return failure;
  }

  // The inside-outside and max-rule passes over sentences `which`, whose fine masks are at `mask`
  // (device memory, the sentences' cells one after another; null: unpruned, exact), on the device
  // behind the CUDA event `mask_ready` when given (MaskedMaxRuleBatchAfter).
  std::optional<DeviceFailure> RunPasses(std::span<const SentenceInput> sentences,
                                         const std::vector<size_t>& which, const uint8_t* mask,
                                         const void* mask_ready,
                                         std::vector<cuda::IoResult>* results) {
    const std::vector<cuda::IoSentence> refs = PassInputs(sentences, which);
    std::string error;
    const bool charts = host_rules_ != nullptr;  // k-best decodes from the device's charts
    cuda::IoBatchResult result;
    {
      timeline::Scope scope(mask ? "cuda batch (pruned passes)" : "cuda batch (passes)");
      result = mask_ready ? device_->MaskedMaxRuleBatchAfter(mask_ready, refs, mask, charts,
                                                             results, &error)
                          : device_->MaskedMaxRuleBatch(refs, mask, charts, results, &error);
    }
    if (result != cuda::IoBatchResult::kOk) {
      // The previous batch's extraction may read the host buffer a retry writes: finish it.
      FinishExtraction();
      return DeviceFailure{.out_of_memory = result == cuda::IoBatchResult::kOutOfMemory,
                           .error = error};
    }
    return std::nullopt;
  }

  // The outcomes of sentences `which` from their passes' results, extracted in the background
  // while the device computes the next batch (the device keeps two host result buffers).
  void ExtractOutcomes(std::span<const SentenceInput> sentences, const std::vector<size_t>& which,
                       std::vector<cuda::IoResult> results, bool pruned,
                       std::vector<ParseOutcome>* outcomes) {
    Extract(
        [this, sentences, which, results = std::move(results), outcomes, pruned](ThreadPool& pool) {
          timeline::Scope scope("tree extraction on the host");
          pool.ParallelFor(static_cast<int>(which.size()), [&](int k, int) {
            ParseOutcome& outcome = (*outcomes)[which[k]];
            outcome = DeviceMaxRuleOutcome(grammar_, sentences[which[k]], results[k],
                                           host_rules_.get(), decoder_);
            Done(which[k], outcome, pruned);
          });
        });
  }

  const Grammar& grammar_;
  std::unique_ptr<cuda::DeviceInsideOutside> device_;
  std::unique_ptr<CudaCoarseToFine> pruner_;  // null: exact
  DecoderOptions decoder_;
  std::unique_ptr<SumProductRules> host_rules_;  // k-best only: the host max-rule pass's index
};

}  // namespace

StatusOr<std::unique_ptr<cuda::DeviceInsideOutside>> CreateDeviceInsideOutside(
    const Grammar& grammar, const cuda::DeviceInsideOutsideOptions& options) {
  if (!cuda::BuiltWithCuda()) {
    return Status::Error("this build has no CUDA support; use --backend cpu");
  }
  // Create builds the rule layouts (host work) before its first CUDA call, so that they run
  // while the process's CUDA context is made (apps/parse_command.cpp); whether there is a device
  // is asked after.
  std::string error;
  auto device = cuda::DeviceInsideOutside::Create(CudaGrammarView(grammar), options, &error);
  if (!cuda::DeviceAvailable()) return Status::Error("no CUDA device; use --backend cpu");
  if (!device) return Status::Error("CUDA max-rule backend: " + error);
  return device;
}

StatusOr<std::unique_ptr<Backend>> MakeCudaMaxRuleBackend(const Grammar& grammar,
                                                          const CudaMaxRuleOptions& options) {
  if (!cuda::BuiltWithCuda()) {
    return Status::Error("this build has no CUDA support; use --backend cpu");
  }
  CudaMaxRuleOptions made = options;
  cuda::DeviceInsideOutsideOptions device_options{.max_batch_bytes = options.device.max_batch_bytes,
                                                  .cells_per_group = options.cells_per_group};
  if (options.pair_sum_kernel > 0) device_options.pair_sum_kernel = options.pair_sum_kernel;
  if (options.max_rule_kernel > 0) device_options.max_rule_kernel = options.max_rule_kernel;
  if (options.masked_dispatch > 0) device_options.masked_dispatch = options.masked_dispatch;
  if (!options.pruning) {
    auto device = CreateDeviceInsideOutside(grammar, device_options);
    if (!device.ok()) return device.status();
    return std::unique_ptr<Backend>(
        std::make_unique<CudaMaxRuleBackend>(grammar, std::move(*device), nullptr, made));
  }
  // Pruned: the pre-parses and the passes share the memory, 30% and 45% of what is free when each
  // is made (or 40% and 60% of a given budget); the rest is left for the sentences pruning loses.
  // The passes' rule layouts (sorting every binary rule three ways) are built on another thread
  // while the projections are (each a few seconds with en_sm6s), both before their first CUDA
  // call: the process's CUDA context is made meanwhile (apps/parse_command.cpp).
  const size_t given = options.device.max_batch_bytes;
  device_options.max_batch_bytes = size_t(0.6 * double(given));
  device_options.free_memory_share = 0.45;
  if (options.device.max_batch_sentences == DeviceBackendOptions{}.max_batch_sentences) {
    made.device.max_batch_sentences = 1024;
  }
  std::optional<StatusOr<std::unique_ptr<cuda::DeviceInsideOutside>>> device;
  std::thread io_thread([&] {
    timeline::Scope scope("load: the passes' grammar on the device");
    device.emplace(CreateDeviceInsideOutside(grammar, device_options));
  });
  auto pruner = CudaCoarseToFine::Create(grammar, *options.pruning,
                                         {.max_batch_bytes = size_t(0.4 * double(given)),
                                          .free_memory_share = 0.3,
                                          .threads = options.device.extraction_threads,
                                          .fine_mask_only = true,
                                          .pruning_kernels = options.pruning_kernels});
  io_thread.join();
  if (!device->ok()) return device->status();
  if (!pruner.ok()) return pruner.status();
  return std::unique_ptr<Backend>(
      std::make_unique<CudaMaxRuleBackend>(grammar, std::move(**device), std::move(*pruner), made));
}

StatusOr<std::vector<CudaInsideOutsideResult>> CudaInsideOutsideBatch(
    const Grammar& grammar, const std::vector<const LexicalScores*>& sentences,
    const cuda::DeviceInsideOutsideOptions& options) {
  auto device = CreateDeviceInsideOutside(grammar, options);
  if (!device.ok()) return device.status();
  std::vector<cuda::IoSentence> refs;
  for (const LexicalScores* s : sentences) refs.push_back({s->length, s->scores.data()});
  std::vector<cuda::IoResult> results;
  std::string error;
  if ((*device)->MaxRuleBatch(refs, true, &results, &error) != cuda::IoBatchResult::kOk) {
    return Status::Error("CUDA inside-outside batch: " + error);
  }
  const int32_t states = grammar.num_states();
  std::vector<CudaInsideOutsideResult> out(sentences.size());
  for (size_t i = 0; i < sentences.size(); ++i) {
    const int32_t n = sentences[i]->length;
    const cuda::IoResult& r = results[i];
    CudaInsideOutsideResult& o = out[i];
    DeviceInsideOutsideCharts(r, n, states, &o.charts);
    DeviceMaxRuleChart(r, n, grammar.num_symbols(), &o.maxc);
  }
  return out;
}

}  // namespace cky
