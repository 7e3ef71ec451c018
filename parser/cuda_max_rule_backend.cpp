#include "parser/cuda_max_rule_backend.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "common/thread_pool.h"
#include "cuda/common/device.h"
#include "parser/device_batches.h"

namespace cky {

cuda::SumGrammarArrays CudaSumGrammarArrays(const Grammar& g) {
  cuda::SumGrammarArrays a;
  a.num_states = g.num_states();
  a.num_symbols = g.num_symbols();
  a.state_symbol = g.state_symbol.data();
  a.symbol_first_state = g.symbol_first_state.data();
  a.symbol_num_substates = g.symbol_num_substates.data();
  a.num_binary = g.num_binary_rules();
  a.binary_parent = g.binary_parent.data();
  a.binary_left = g.binary_left.data();
  a.binary_right = g.binary_right.data();
  a.binary_log_prob = g.binary_log_prob.data();
  a.num_sum_unary = static_cast<int64_t>(g.sum_unary_parent.size());
  a.sum_unary_parent = g.sum_unary_parent.data();
  a.sum_unary_child = g.sum_unary_child.data();
  a.sum_unary_log_prob = g.sum_unary_log_prob.data();
  return a;
}

namespace {

// One sentence's device results as the host's structures: the max-rule arrays, and the inside and
// outside charts (when the batch kept them).
void FillMaxRuleChart(const cuda::IoResult& r, int32_t length, int32_t symbols,
                      MaxRuleChart* maxc) {
  maxc->Reset(length, symbols);
  const size_t entries = maxc->score.size();
  std::copy(r.score, r.score + entries, maxc->score.begin());
  for (size_t e = 0; e < entries; ++e) {
    const int32_t* info = r.split_left_right_unary + 4 * e;
    maxc->split[e] = info[0];
    maxc->left[e] = info[1];
    maxc->right[e] = info[2];
    maxc->unary_child[e] = info[3];
  }
}

void FillCharts(const cuda::IoResult& r, int32_t length, int32_t states,
                InsideOutsideCharts* charts) {
  charts->log_likelihood = r.log_likelihood;
  for (auto [chart, values, scales] : {std::tuple{&charts->inside, r.inside, r.inside_scale},
                                       std::tuple{&charts->outside, r.outside, r.outside_scale}}) {
    chart->Reset(length, states);
    std::copy(values, values + chart->values.size(), chart->values.begin());
    std::copy(scales, scales + chart->log_scale.size(), chart->log_scale.begin());
  }
}

}  // namespace

ParseOutcome DeviceMaxRuleOutcome(const Grammar& grammar, const SentenceInput& sentence,
                                  const cuda::IoResult& result, const SumProductRules* host_rules,
                                  const DecoderOptions& decoder) {
  const int32_t length = static_cast<int32_t>(sentence.words.size());
  MaxRuleChart maxc;
  FillMaxRuleChart(result, length, grammar.num_symbols(), &maxc);
  ParseOutcome outcome = MaxRuleOutcome(grammar, sentence.words, result.log_likelihood, maxc);
  if (host_rules != nullptr && outcome.status == ParseStatus::kOk) {
    InsideOutsideCharts io;
    FillCharts(result, length, grammar.num_states(), &io);
    MaxRuleChart host;
    FastMaxRuleChart(grammar, *host_rules, sentence.lexical, io, &host);
    AddKBest(grammar, sentence.words, io, host, decoder, &outcome);
  }
  return outcome;
}

namespace {

class CudaMaxRuleBackend : public ViterbiBackend {
 public:
  CudaMaxRuleBackend(const Grammar& g, std::unique_ptr<cuda::DeviceInsideOutside> device,
                     const CudaMaxRuleOptions& options)
      : grammar_(g),
        device_(std::move(device)),
        options_(options),
        extraction_pool_(options.extraction_threads) {
    if (options_.decoder.kbest > 1) host_rules_ = std::make_unique<SumProductRules>(g);
  }
  ~CudaMaxRuleBackend() override { FinishExtraction(); }

  std::string name() const override { return "cuda/max-rule"; }

  std::vector<ParseOutcome> ParseBatch(std::span<const SentenceInput> sentences) override {
    std::vector<ParseOutcome> outcomes(sentences.size());
    std::vector<size_t> order;
    for (size_t i = 0; i < sentences.size(); ++i) {
      if (sentences[i].words.empty()) {
        outcomes[i].status = ParseStatus::kNoParse;
        outcomes[i].message = "empty sentence";
      } else if (Length(sentences[i]) > device_->MaxLength()) {
        ParseOnCpu(sentences[i],
                   "is longer than the device kernels allow (" +
                       std::to_string(device_->MaxLength()) + " words)",
                   &outcomes[i]);
      } else if (device_->BytesForSentence(Length(sentences[i])) > device_->BatchBudget()) {
        ParseOnCpu(sentences[i], "does not fit the device batch budget", &outcomes[i]);
      } else {
        order.push_back(i);
      }
    }
    RunInDeviceBatches(
        std::move(order), [&](size_t i) { return Length(sentences[i]); },
        [&](int32_t n) { return device_->BytesForSentence(n); },
        {.max_sentences = options_.max_batch_sentences, .budget = device_->BatchBudget()},
        [&](const std::vector<size_t>& batch) { return RunBatch(sentences, batch, &outcomes); },
        [&](size_t i, const DeviceFailure& failure) {
          if (options_.cpu_fallback) {
            ParseOnCpu(sentences[i], failure.Why(), &outcomes[i]);
          } else {
            outcomes[i] = DeviceFailureOutcome(failure);
          }
        });
    FinishExtraction();
    return outcomes;
  }

 private:
  static int32_t Length(const SentenceInput& s) { return static_cast<int32_t>(s.words.size()); }

  void ParseOnCpu(const SentenceInput& s, const std::string& why, ParseOutcome* outcome) {
    try {
      // The fast CPU path, made at the first fallback (its rule index costs a pass over the
      // grammar) and kept for the next.
      if (!cpu_) cpu_ = MakeCpuMaxRuleBackend(grammar_, 1, options_.decoder);
      *outcome = std::move(cpu_->ParseBatch(std::span<const SentenceInput>(&s, 1))[0]);
      if (outcome->status == ParseStatus::kOk) {
        outcome->message =
            "parsed on the CPU: a sentence of " + std::to_string(s.words.size()) + " words " + why;
      }
    } catch (const std::bad_alloc&) {
      outcome->status = ParseStatus::kOutOfMemory;
      outcome->message = "out of memory for the charts of " + std::to_string(s.words.size()) +
                         " words, on the device and on the CPU";
    }
  }

  // One device batch; on a failure (out of memory or any other) it returns what failed, and the
  // caller retries smaller (RunSplittingFailedBatches, as parser/cuda_backend.cpp).
  std::optional<DeviceFailure> RunBatch(std::span<const SentenceInput> sentences,
                                        const std::vector<size_t>& batch,
                                        std::vector<ParseOutcome>* outcomes) {
    std::vector<cuda::IoSentence> refs;
    for (size_t i : batch)
      refs.push_back({Length(sentences[i]), sentences[i].lexical.scores.data()});
    std::vector<cuda::IoResult> results;
    std::string error;
    const bool charts = host_rules_ != nullptr;  // k-best decodes from the device's charts
    const cuda::IoBatchResult result = device_->MaxRuleBatch(refs, charts, &results, &error);
    if (result != cuda::IoBatchResult::kOk) {
      // The previous batch's extraction may read the host buffer a retry writes: finish it.
      FinishExtraction();
      return DeviceFailure{.out_of_memory = result == cuda::IoBatchResult::kOutOfMemory,
                           .error = error};
    }
    // Extraction in the background while the device computes the next batch (the device keeps
    // two host result buffers).
    FinishExtraction();
    extraction_ = std::thread([this, sentences, batch, results = std::move(results), outcomes] {
      extraction_pool_.ParallelFor(static_cast<int>(batch.size()), [&](int k, int) {
        (*outcomes)[batch[k]] = DeviceMaxRuleOutcome(grammar_, sentences[batch[k]], results[k],
                                                     host_rules_.get(), options_.decoder);
      });
    });
    return std::nullopt;
  }

  void FinishExtraction() {
    if (extraction_.joinable()) extraction_.join();
  }

  const Grammar& grammar_;
  std::unique_ptr<cuda::DeviceInsideOutside> device_;
  CudaMaxRuleOptions options_;
  // Tree extraction runs on extraction_, one background thread per batch (so that the device
  // computes the next batch meanwhile), which spreads the batch's sentences over extraction_pool_.
  ThreadPool extraction_pool_;
  std::thread extraction_;
  std::unique_ptr<ViterbiBackend> cpu_;  // sentences the device cannot parse; see ParseOnCpu
  std::unique_ptr<SumProductRules> host_rules_;  // k-best only: the host max-rule pass's index
};

StatusOr<std::unique_ptr<cuda::DeviceInsideOutside>> CreateDevice(
    const Grammar& grammar, const cuda::DeviceInsideOutsideOptions& options) {
  if (!cuda::BuiltWithCuda()) {
    return Status::Error("this build has no CUDA support; use --backend cpu");
  }
  if (!cuda::DeviceAvailable()) return Status::Error("no CUDA device; use --backend cpu");
  std::string error;
  auto device = cuda::DeviceInsideOutside::Create(CudaSumGrammarArrays(grammar), options, &error);
  if (!device) return Status::Error("CUDA max-rule backend: " + error);
  return device;
}

}  // namespace

StatusOr<std::unique_ptr<ViterbiBackend>> MakeCudaMaxRuleBackend(
    const Grammar& grammar, const CudaMaxRuleOptions& options) {
  cuda::DeviceInsideOutsideOptions device_options{.max_batch_bytes = options.max_batch_bytes,
                                                  .cells_per_group = options.cells_per_group};
  if (options.pair_sum_kernel > 0) device_options.pair_sum_kernel = options.pair_sum_kernel;
  if (options.max_rule_kernel > 0) device_options.max_rule_kernel = options.max_rule_kernel;
  auto device = CreateDevice(grammar, device_options);
  if (!device.ok()) return device.status();
  return std::unique_ptr<ViterbiBackend>(
      std::make_unique<CudaMaxRuleBackend>(grammar, std::move(*device), options));
}

StatusOr<std::vector<CudaInsideOutsideResult>> CudaInsideOutsideBatch(
    const Grammar& grammar, const std::vector<const LexicalScores*>& sentences,
    const cuda::DeviceInsideOutsideOptions& options) {
  auto device = CreateDevice(grammar, options);
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
    FillCharts(r, n, states, &o.charts);
    FillMaxRuleChart(r, n, grammar.num_symbols(), &o.maxc);
  }
  return out;
}

}  // namespace cky
