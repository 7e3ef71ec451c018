#include "parser/device_batches.h"

#include <algorithm>

namespace cky {

std::vector<std::vector<size_t>> LongestFirstBatches(
    std::vector<size_t> candidates, const std::function<int32_t(size_t index)>& length,
    const std::function<size_t(int32_t length)>& bytes, const DeviceBatchLimits& limits) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](size_t a, size_t b) { return length(a) > length(b); });
  std::vector<std::vector<size_t>> batches;
  size_t used = 0, also_used = 0;
  for (size_t i : candidates) {
    const int32_t n = length(i);
    const size_t need = bytes(n);
    const size_t also = limits.also_bytes ? limits.also_bytes(n) : 0;
    if (batches.empty() || used + need > limits.budget ||
        (limits.also_bytes && also_used + also > limits.also_budget) ||
        static_cast<int>(batches.back().size()) >= limits.max_sentences) {
      batches.emplace_back();
      used = also_used = 0;
    }
    batches.back().push_back(i);
    used += need;
    also_used += also;
  }
  return batches;
}

std::string DeviceFailure::Why() const {
  return out_of_memory ? "does not fit in device memory" : "failed on the device (" + error + ")";
}

void RunSplittingFailedBatches(
    const std::vector<size_t>& batch,
    const std::function<std::optional<DeviceFailure>(const std::vector<size_t>& batch)>& run,
    const std::function<void(size_t index, const DeviceFailure& failure)>& failed_alone) {
  if (batch.empty()) return;
  const std::optional<DeviceFailure> failure = run(batch);
  if (!failure) return;
  if (batch.size() == 1) {
    failed_alone(batch[0], *failure);
    return;
  }
  const auto middle = batch.begin() + static_cast<std::ptrdiff_t>(batch.size() / 2);
  RunSplittingFailedBatches(std::vector<size_t>(batch.begin(), middle), run, failed_alone);
  RunSplittingFailedBatches(std::vector<size_t>(middle, batch.end()), run, failed_alone);
}

void RunInDeviceBatches(
    std::vector<size_t> candidates, const std::function<int32_t(size_t index)>& length,
    const std::function<size_t(int32_t length)>& bytes, const DeviceBatchLimits& limits,
    const std::function<std::optional<DeviceFailure>(const std::vector<size_t>& batch,
                                                     const std::vector<size_t>* next)>& run,
    const std::function<void(size_t index, const DeviceFailure& failure)>& failed_alone) {
  const std::vector<std::vector<size_t>> batches =
      LongestFirstBatches(std::move(candidates), length, bytes, limits);
  for (size_t k = 0; k < batches.size(); ++k) {
    const std::vector<size_t>* next = k + 1 < batches.size() ? &batches[k + 1] : nullptr;
    RunSplittingFailedBatches(
        batches[k], [&](const std::vector<size_t>& batch) { return run(batch, next); },
        failed_alone);
  }
}

ParseOutcome DeviceFailureOutcome(const DeviceFailure& failure) {
  ParseOutcome outcome;
  outcome.status = failure.out_of_memory ? ParseStatus::kOutOfMemory : ParseStatus::kFailed;
  outcome.message = failure.Why();
  return outcome;
}

}  // namespace cky
