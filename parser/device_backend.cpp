#include "parser/device_backend.h"

#include <algorithm>

#include "common/timeline.h"

namespace cky {

namespace {

int32_t Length(const SentenceInput& s) { return static_cast<int32_t>(s.words.size()); }

}  // namespace

DeviceBackend::DeviceBackend(const DeviceBackendOptions& options)
    : options_(options), extraction_pool_(options.extraction_threads) {}

DeviceBackend::~DeviceBackend() { FinishExtraction(); }

void DeviceBackend::Extract(std::function<void(ThreadPool& pool)> work) {
  FinishExtraction();
  extraction_ = std::thread([this, work = std::move(work)] { work(extraction_pool_); });
}

void DeviceBackend::FinishExtraction() {
  if (extraction_.joinable()) extraction_.join();
}

void DeviceBackend::BesideNextBatch(std::function<void(ThreadPool& pool)> work) {
  if (next_batch_) {
    held_ = std::move(work);
    return;
  }
  RunBesideDevice();  // the previous batch's first, when this batch did not run it
  FinishExtraction();
  work(extraction_pool_);
}

void DeviceBackend::RunBesideDevice() {
  if (!earlier_) return;
  std::function<void(ThreadPool&)> work = std::move(earlier_);
  earlier_ = nullptr;
  FinishExtraction();
  work(extraction_pool_);
}

void DeviceBackend::Done(size_t index, const ParseOutcome& outcome, bool pruned) {
  if (pruned && outcome.status == ParseStatus::kNoParse) {
    std::lock_guard lock(mutex_);
    unpruned_.push_back(index);
    return;
  }
  if (listener_ && *listener_) (*listener_)(index, outcome);
}

void DeviceBackend::RunOnDevice(std::span<const SentenceInput> sentences, std::vector<size_t> order,
                                bool pruned, const Limits& limits,
                                std::vector<ParseOutcome>* outcomes,
                                std::vector<std::pair<size_t, std::string>>* on_cpu) {
  RunInDeviceBatches(
      std::move(order), [&](size_t i) { return Length(sentences[i]); }, limits.bytes,
      {.max_sentences = options_.max_batch_sentences,
       .budget = limits.budget,
       .also_budget = limits.also_budget,
       .also_bytes = limits.also_bytes},
      [&](const std::vector<size_t>& batch, const std::vector<size_t>* next) {
        next_batch_ = next;
        earlier_ = std::move(held_);
        held_ = nullptr;
        std::optional<DeviceFailure> failure = RunBatch(sentences, batch, pruned, outcomes);
        RunBesideDevice();  // when the batch did not
        return failure;
      },
      [&](size_t i, const DeviceFailure& failure) {
        if (options_.cpu_fallback) {
          on_cpu->emplace_back(i, failure.Why());
        } else {
          (*outcomes)[i] = DeviceFailureOutcome(failure);
          Done(i, (*outcomes)[i], false);
        }
      });
  next_batch_ = nullptr;
  earlier_ = std::move(held_);  // a next batch was announced and never ran
  held_ = nullptr;
  RunBesideDevice();
  FinishExtraction();
}

void DeviceBackend::ParseUnpruned(std::span<const SentenceInput> sentences,
                                  std::vector<size_t> which, std::vector<ParseOutcome>* outcomes) {
  std::vector<std::pair<size_t, std::string>> on_cpu;
  RunOnDevice(sentences, std::move(which), /*pruned=*/false, BatchLimits(), outcomes, &on_cpu);
  ParseOnCpu(sentences, on_cpu, outcomes);
}

std::vector<ParseOutcome> DeviceBackend::Parse(std::span<const SentenceInput> sentences,
                                               const OutcomeListener& listener, bool /*ahead*/) {
  std::vector<ParseOutcome> outcomes(sentences.size());
  listener_ = &listener;
  unpruned_.clear();
  const Limits limits = BatchLimits();
  std::vector<size_t> order;
  std::vector<std::pair<size_t, std::string>> on_cpu;  // with why
  for (size_t i = 0; i < sentences.size(); ++i) {
    const int32_t n = Length(sentences[i]);
    if (n == 0) {
      outcomes[i].status = ParseStatus::kNoParse;
      outcomes[i].message = "empty sentence";
      Done(i, outcomes[i], false);
    } else if (n > limits.max_length) {
      on_cpu.emplace_back(i, "is longer than the device kernels allow (" +
                                 std::to_string(limits.max_length) + " words)");
    } else if (limits.bytes(n) > limits.budget ||
               (limits.also_bytes && limits.also_bytes(n) > limits.also_budget)) {
      on_cpu.emplace_back(i, "does not fit the device batch budget");
    } else {
      order.push_back(i);
    }
  }
  RunOnDevice(sentences, std::move(order), Pruned(), limits, &outcomes, &on_cpu);
  if (!unpruned_.empty()) {
    // As the CPU pruned backend: a sentence pruning lost is parsed without pruning.
    std::vector<size_t> which = std::move(unpruned_);
    unpruned_.clear();
    std::sort(which.begin(), which.end());  // the extraction threads' order varies
    ParseUnpruned(sentences, std::move(which), &outcomes);
  }
  ParseOnCpu(sentences, on_cpu, &outcomes);
  if (timeline::Enabled()) {
    const std::string report = ProfileReport();
    if (!report.empty()) timeline::Note("cuda device (" + name() + ")", report);
  }
  listener_ = nullptr;
  return outcomes;
}

void DeviceBackend::ParseOnCpu(std::span<const SentenceInput> sentences,
                               const std::vector<std::pair<size_t, std::string>>& which,
                               std::vector<ParseOutcome>* outcomes) {
  if (which.empty()) return;
  if (!cpu_) {
    auto made = MakeCpuFallback();
    if (!made.ok()) {
      for (const auto& [i, why] : which) {
        (*outcomes)[i].status = ParseStatus::kFailed;
        (*outcomes)[i].message = "a sentence of " + std::to_string(sentences[i].words.size()) +
                                 " words " + why +
                                 ", and no CPU backend: " + made.status().message();
        Done(i, (*outcomes)[i], false);
      }
      return;
    }
    cpu_ = std::move(*made);
  }
  std::vector<SentenceInput> inputs;
  for (const auto& entry : which) inputs.push_back(sentences[entry.first]);
  std::vector<ParseOutcome> parsed = cpu_->ParseBatch(inputs);
  for (size_t k = 0; k < which.size(); ++k) {
    const size_t i = which[k].first;
    ParseOutcome& outcome = (*outcomes)[i] = std::move(parsed[k]);
    const std::string words = std::to_string(sentences[i].words.size()) + " words";
    if (outcome.status == ParseStatus::kOk) {
      outcome.message = "parsed on the CPU: a sentence of " + words + " " + which[k].second;
    } else if (outcome.status == ParseStatus::kOutOfMemory) {
      // The CPU backend's message says how much its charts would take, when it refused them.
      outcome.message =
          "a sentence of " + words + " " + which[k].second + "; on the CPU, " + outcome.message;
    }
    Done(i, outcome, false);
  }
}

}  // namespace cky
