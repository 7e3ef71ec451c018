// The skeleton every CUDA backend shares, held once: the sentences of a call sorted longest first
// and cut into device batches that fit (parser/device_batches.h); a batch the device fails run
// again in halves down to single sentences; what the device cannot take (too long for its kernels,
// over the batch budget, failing alone) parsed on the CPU by a fallback backend of the same decoder
// (or reported, without cpu_fallback); trees extracted on host threads in the background while the
// device runs the next batch; with pruning, a sentence whose pruned chart has no parse parsed again
// unpruned in a second round, as the CPU pruned backend does. Outcomes come back one per input, in
// input order, each told to the listener as soon as it is final.
//
// A backend derives from DeviceBackend and says what a batch may hold (Limits) and how to run one
// (RunBatch), and which backend parses on the CPU (MakeCpuFallback).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/thread_pool.h"
#include "parser/backend.h"
#include "parser/device_batches.h"

namespace cky {

struct DeviceBackendOptions {
  size_t max_batch_bytes = 0;     // device bytes per batch; 0 = the device object's default
  int max_batch_sentences = 256;  // sentences per device batch at most
  int extraction_threads = 0;     // CPU threads for tree extraction and the CPU fallback; 0 = all
  // A sentence that fails on the device on its own (out of memory, a device error) is parsed on
  // the CPU; false: its outcome says kOutOfMemory or kFailed instead (the multi-device backend then
  // hands it, or the whole device's work, elsewhere). Sentences the device can never take (too
  // long, over the budget) are parsed on the CPU either way.
  bool cpu_fallback = true;
};

class DeviceBackend : public Backend {
 public:
  ~DeviceBackend() override;

 protected:
  // What one batch may hold: sentences within `budget` by `bytes` and, when `also_bytes` is set,
  // within `also_budget` by it (a second device object of the same batch); lengths up to
  // max_length.
  struct Limits {
    size_t budget = 0;
    std::function<size_t(int32_t length)> bytes;
    size_t also_budget = 0;
    std::function<size_t(int32_t length)> also_bytes;
    int32_t max_length = std::numeric_limits<int32_t>::max();
  };

  explicit DeviceBackend(const DeviceBackendOptions& options);

  virtual Limits BatchLimits() const = 0;
  // One device batch, sentences[batch] (lengths >= 1), pruned or exact. Writes each sentence's
  // outcome and hands it to Done(), usually from the extraction thread (Extract); on a device
  // failure returns it and writes nothing, and the batch is run again in halves.
  virtual std::optional<DeviceFailure> RunBatch(std::span<const SentenceInput> sentences,
                                                const std::vector<size_t>& batch, bool pruned,
                                                std::vector<ParseOutcome>* outcomes) = 0;
  // True when the first round runs pruned (RunBatch's `pruned`), and a second round exact.
  virtual bool Pruned() const { return false; }
  // The backend of the same decoder (and pruning) on the CPU, for what the device cannot parse.
  virtual StatusOr<std::unique_ptr<Backend>> MakeCpuFallback() = 0;
  // The device's profile since the last call, for `cky parse --timeline` ("" = none).
  virtual std::string ProfileReport() const { return ""; }
  // The sentences of `which` that pruning lost, parsed exactly; by default RunBatch(pruned = false)
  // in device batches.
  virtual void ParseUnpruned(std::span<const SentenceInput> sentences, std::vector<size_t> which,
                             std::vector<ParseOutcome>* outcomes);

  // Sentences the device cannot take (or finish), each with why, parsed by the CPU fallback
  // (MakeCpuFallback, made at the first need); their outcomes are final (Done, not pruned).
  void ParseOnCpu(std::span<const SentenceInput> sentences,
                  const std::vector<std::pair<size_t, std::string>>& which,
                  std::vector<ParseOutcome>* outcomes);

  // Runs `work` on the background extraction thread once the previous batch's is finished.
  void Extract(std::function<void(ThreadPool& pool)> work);
  void FinishExtraction();
  // Host work of the batch RunBatch is running that may wait until the next batch's device work
  // is queued (building trees read on the device): held, and run when RunBatch of the next batch
  // calls RunBesideDevice, so that the device need not wait for it between the batches (a thread
  // beside the next batch's host work slowed that work). Run at once when no next batch is known;
  // after the next RunBatch returns when it did not call RunBesideDevice (it failed first). Every
  // piece runs from the calling thread, in batch order, before RunOnDevice returns, with the
  // extraction threads (no extraction runs meanwhile).
  void BesideNextBatch(std::function<void(ThreadPool& pool)> work);
  // For RunBatch, once its device work is queued and the host would wait for it: runs the previous
  // batch's held work (BesideNextBatch), if any.
  void RunBesideDevice();
  // Sentence `index`'s outcome is written: final, or (pruned, no parse) to be parsed unpruned.
  // Thread-safe.
  void Done(size_t index, const ParseOutcome& outcome, bool pruned);

  const DeviceBackendOptions& options() const { return options_; }
  // The device batch RunBatch gets after the one it is running, or null (none, or unknown): host
  // work for it may start beside the running batch's device work.
  const std::vector<size_t>* NextBatch() const { return next_batch_; }

 private:
  std::vector<ParseOutcome> Parse(std::span<const SentenceInput> sentences,
                                  const OutcomeListener& listener, bool ahead) final;
  // Runs sentences[order] on the device in batches of `limits` (RunBatch, pruned or not), then
  // waits for their extraction. A sentence the device fails goes to *on_cpu with why
  // (options.cpu_fallback) or gets the failure as its outcome.
  void RunOnDevice(std::span<const SentenceInput> sentences, std::vector<size_t> order, bool pruned,
                   const Limits& limits, std::vector<ParseOutcome>* outcomes,
                   std::vector<std::pair<size_t, std::string>>* on_cpu);

  DeviceBackendOptions options_;
  ThreadPool extraction_pool_;
  std::thread extraction_;  // the previous batch's extraction
  std::unique_ptr<Backend> cpu_;
  std::mutex mutex_;
  const OutcomeListener* listener_ = nullptr;  // this call's
  std::vector<size_t> unpruned_;               // this call's sentences pruning lost
  const std::vector<size_t>* next_batch_ = nullptr;
  std::function<void(ThreadPool&)> held_;     // the running batch's BesideNextBatch work
  std::function<void(ThreadPool&)> earlier_;  // the previous batch's, for RunBesideDevice
};

}  // namespace cky
