// How the CUDA backends cut the sentences of one ParseBatch call into device batches, and how a
// device failure stays local to the sentences it concerns: one policy for the Viterbi,
// max-rule and pruned backends.
//
// Batches: the sentences longest first (equal lengths keep their input order), cut into
// consecutive runs that stay within a sentence count and one or two byte budgets, so that a batch
// holds sentences of similar length. Failures: a batch the device fails is run again in halves,
// down to single sentences; a sentence that fails alone goes to the caller (which parses it on
// the CPU, or reports it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "parser/backend.h"

namespace cky {

struct DeviceBatchLimits {
  int max_sentences = 1;
  size_t budget = 0;  // bytes a batch may take by `bytes` below
  // A second budget, by `also_bytes` (for example host or device memory of a later pass); 0 and
  // no function: none.
  size_t also_budget = 0;
  std::function<size_t(int32_t length)> also_bytes;
};

// `candidates` (indices into the caller's sentences) longest first, cut into batches: a batch
// takes the next sentence unless that would pass max_sentences or a budget. Every candidate must
// fit a batch alone (the caller sends the others elsewhere first); each lands in exactly one
// batch.
std::vector<std::vector<size_t>> LongestFirstBatches(
    std::vector<size_t> candidates, const std::function<int32_t(size_t index)>& length,
    const std::function<size_t(int32_t length)>& bytes, const DeviceBatchLimits& limits);

struct DeviceFailure {
  bool out_of_memory = false;
  std::string error;  // the device's message, when not out of memory
  // "does not fit in device memory" or "failed on the device (<error>)": what a warning says.
  std::string Why() const;
};

// Runs `run` on `batch` (nullopt: it succeeded). A failed batch of several sentences is run again
// in two halves, recursively, so that every sentence the device can parse gets its result;
// `failed_alone` receives each sentence that fails in a batch of its own, with that failure.
void RunSplittingFailedBatches(
    const std::vector<size_t>& batch,
    const std::function<std::optional<DeviceFailure>(const std::vector<size_t>& batch)>& run,
    const std::function<void(size_t index, const DeviceFailure& failure)>& failed_alone);

// LongestFirstBatches, each batch through RunSplittingFailedBatches: what every CUDA backend does
// with the sentences of one call. `run` also gets the batch that comes after (null for the last),
// so that host work for it may start beside the device's (a failed batch's halves get the same).
void RunInDeviceBatches(
    std::vector<size_t> candidates, const std::function<int32_t(size_t index)>& length,
    const std::function<size_t(int32_t length)>& bytes, const DeviceBatchLimits& limits,
    const std::function<std::optional<DeviceFailure>(const std::vector<size_t>& batch,
                                                     const std::vector<size_t>* next)>& run,
    const std::function<void(size_t index, const DeviceFailure& failure)>& failed_alone);

// The outcome of a sentence that failed on the device and that no CPU parses:
// kOutOfMemory or kFailed, with DeviceFailure::Why() as the message.
ParseOutcome DeviceFailureOutcome(const DeviceFailure& failure);

}  // namespace cky
