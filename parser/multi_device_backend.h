// A backend that owns several backends (one per GPU, or any others) and deals each batch out to
// them, behind the same interface (parser/backend.h): `cky parse --devices 0,1,2,3`.
//
//   std::vector<BackendSlot> slots;
//   for (int d : {0, 1}) slots.push_back({.label = "cuda:" + std::to_string(d), .cuda_device = d,
//                                         .make = [&] { return MakeCudaMaxRuleBackend(g); }});
//   auto multi = MakeMultiDeviceBackend(std::move(slots), {.make_fallback = ...});
//   (*multi)->ParseBatch(sentences)   // one outcome per sentence, in input order
//
// Each slot's backend is made, used and destroyed on a thread of its own, which first makes the
// slot's CUDA device current (cuda/common/device.h: the current device is per host thread), so the
// slots' devices work at once. A batch is sorted longest first and cut into chunks of about equal
// work (words cubed, the CKY cost), a few per slot; the slots take chunks from one queue as they
// finish the last, so a slow or busy device takes fewer and all finish together. Several threads
// may call ParseBatch at once (ParsesConcurrentBatches): a call's chunks queue behind those of the
// calls before it, so that the devices go on to the next batch while the last chunks of the one
// before are parsed, instead of waiting for the slowest at the end of each batch (`cky parse`
// keeps three batches in flight); a ParseBatchAhead call's chunks (a batch's retries, which that
// batch waits for) go before every other call's. Which slot parses a sentence never changes its
// outcome (every backend gives the same trees), so the output is byte-identical to one backend's.
//
// Failures: a slot whose backend cannot be made, whose ParseBatch throws (a device lost, a CUDA
// error the backend does not handle), or that fails every sentence of a chunk of several
// sentences of more than one length (kOutOfMemory or kFailed: a broken device, when its backend
// reports device failures instead of parsing on the CPU itself, DeviceBackendOptions::cpu_fallback;
// failures of one length only are that length's, as a launch limit is) is retired with a warning
// and its chunk goes back to the queue for the others; when no slot is left, the fallback backend
// (the CPU) parses what remains. A sentence whose outcome is kOutOfMemory or kFailed is parsed once
// more by the fallback, and its message says so. Warnings come back through TakeWarnings(); this
// module prints nothing.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "parser/backend.h"

namespace cky {

using BackendFactory = std::function<StatusOr<std::unique_ptr<Backend>>()>;

struct BackendSlot {
  std::string label;     // for messages and name(): "cuda:0", "cpu#1"
  int cuda_device = -1;  // made current on the slot's thread before `make`; -1: none (CPU)
  BackendFactory make;   // called on the slot's thread
};

struct MultiDeviceOptions {
  // Chunks per live slot in each batch (one chunk when one slot is live): more balance better,
  // fewer keep device batches large.
  int chunks_per_slot = 2;
  // Made (on the calling thread) the first time something is left to it: the sentences of retired
  // slots when none is left, and sentences that failed with kOutOfMemory or kFailed. Empty: those
  // outcomes stay as they are.
  BackendFactory make_fallback;
};

// Starts one thread per slot and makes the slots' backends there. Fails only when no slot's
// backend can be made (the message gives each slot's error); a slot that fails alone is retired
// and reported by the first TakeWarnings().
StatusOr<std::unique_ptr<Backend>> MakeMultiDeviceBackend(
    std::vector<BackendSlot> slots, const MultiDeviceOptions& options = {});

// The --devices argument: "all" (every device, 0 .. device_count-1) or a comma-separated list of
// device numbers, e.g. "0,1,3"; a number may repeat ("0,0": two backends on device 0, which tests
// the multi-device path on one GPU). Fails naming the bad part, a device past device_count, or
// "all" when there is no device.
StatusOr<std::vector<int>> ParseDeviceList(const std::string& spec, int device_count);

// Cuts `lengths` (indices into it) into at most `chunks` groups of consecutive indices of the
// longest-first order, each about total/chunks in words cubed; exposed for tests.
std::vector<std::vector<size_t>> ChunksByLength(const std::vector<int>& lengths, int chunks);

}  // namespace cky
