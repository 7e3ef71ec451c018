#include "parser/multi_device_backend.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "common/timeline.h"
#include "cuda/common/device.h"

namespace cky {

std::vector<std::vector<size_t>> ChunksByLength(const std::vector<int>& lengths, int chunks) {
  std::vector<size_t> order(lengths.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
  // CKY's work grows with the cube of the length; +1 so that empty sentences count at all.
  auto cost = [&](size_t i) {
    const double n = lengths[i];
    return n * n * n + 1.0;
  };
  double total = 0;
  for (size_t i : order) total += cost(i);
  const double target = total / std::max(chunks, 1);
  std::vector<std::vector<size_t>> out;
  std::vector<size_t> current;
  double accumulated = 0;
  for (size_t i : order) {
    current.push_back(i);
    accumulated += cost(i);
    if (accumulated >= target && static_cast<int>(out.size()) < chunks - 1) {
      out.push_back(std::move(current));
      current.clear();
      accumulated = 0;
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

StatusOr<std::vector<int>> ParseDeviceList(const std::string& spec, int device_count) {
  std::vector<int> devices;
  if (spec == "all") {
    if (device_count <= 0) return Status::Error("--devices all: no CUDA device on this machine");
    for (int d = 0; d < device_count; ++d) devices.push_back(d);
    return devices;
  }
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string part = spec.substr(start, comma - start);
    const bool digits =
        !part.empty() && part.size() <= 6 &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) {
      return Status::Error("--devices " + spec + ": '" + part +
                           "' is not a device number (expected all or a list such as 0,1,2)");
    }
    const int device = std::stoi(part);
    if (device >= device_count) {
      return Status::Error("--devices " + spec + ": no CUDA device " + part +
                           " (this machine has " + std::to_string(device_count) + ")");
    }
    devices.push_back(device);
    start = comma + 1;
  }
  return devices;
}

namespace {

bool Failed(const ParseOutcome& outcome) {
  return outcome.status == ParseStatus::kOutOfMemory || outcome.status == ParseStatus::kFailed;
}

// Whether `chunk` is k, k+1, k+2, ...
bool IsRun(const std::vector<size_t>& chunk) {
  for (size_t i = 1; i < chunk.size(); ++i) {
    if (chunk[i] != chunk[0] + i) return false;
  }
  return !chunk.empty();
}

// Whether sentences[indices] all have the same number of words.
bool OneLength(std::span<const SentenceInput> sentences, const std::vector<size_t>& indices) {
  return std::all_of(indices.begin(), indices.end(), [&](size_t i) {
    return sentences[i].words.size() == sentences[indices[0]].words.size();
  });
}

class MultiDeviceBackend : public Backend {
 public:
  MultiDeviceBackend(std::vector<BackendSlot> slots, const MultiDeviceOptions& options)
      : options_(options), slots_(slots.size()) {
    for (size_t i = 0; i < slots.size(); ++i) slots_[i].spec = std::move(slots[i]);
    for (size_t i = 0; i < slots_.size(); ++i) {
      slots_[i].thread = std::thread([this, i] { SlotLoop(i); });
    }
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return created_ == slots_.size(); });
    for (const Slot& slot : slots_) {  // in slot order, whichever thread finished first
      if (!slot.creation_error.empty()) warnings_.push_back(slot.creation_error);
    }
  }

  ~MultiDeviceBackend() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_.notify_all();
    for (Slot& slot : slots_) {
      if (slot.thread.joinable()) slot.thread.join();
    }
  }

  int live() const { return live_; }
  // Every slot's creation error, when none is live.
  std::string CreationErrors() {
    std::string all;
    for (const std::string& w : warnings_) all += (all.empty() ? "" : "; ") + w;
    return all;
  }

  std::string name() const override {
    std::string labels;
    std::string inner;
    for (const Slot& slot : slots_) {
      if (slot.inner_name.empty()) continue;
      if (inner.empty()) inner = slot.inner_name;
      labels += (labels.empty() ? "" : ",") + slot.spec.label;
    }
    return inner + " on " + labels;
  }

  std::vector<std::string> TakeWarnings() override {
    std::lock_guard lock(mutex_);
    return std::exchange(warnings_, {});
  }

  bool ParsesConcurrentBatches() const override { return true; }

 protected:
  std::vector<ParseOutcome> Parse(std::span<const SentenceInput> sentences,
                                  const OutcomeListener& listener, bool ahead) override {
    std::vector<ParseOutcome> outcomes(sentences.size());
    if (sentences.empty()) return outcomes;
    std::vector<int> lengths;
    for (const SentenceInput& s : sentences) lengths.push_back(static_cast<int>(s.words.size()));
    std::vector<std::vector<size_t>> leftovers;
    {
      Call call{.sentences = sentences, .outcomes = &outcomes, .listener = &listener};
      std::unique_lock lock(mutex_);
      auto chunks = ChunksByLength(lengths, live_ <= 1 ? 1 : live_ * options_.chunks_per_slot);
      if (chunks.size() == 1) {
        // The whole batch, in input order: the slot parses the caller's sentences, uncopied.
        for (size_t i = 0; i < chunks[0].size(); ++i) chunks[0][i] = i;
      }
      if (live_ == 0) {
        leftovers = std::move(chunks);
      } else {
        // Behind the chunks of batches queued before (other callers'), so that each batch is
        // done as early as it can be, and the devices move on to the next without a pause; a
        // ParseBatchAhead call's behind those of earlier such calls only.
        auto position = queue_.end();
        if (ahead) {
          position = std::find_if(queue_.begin(), queue_.end(),
                                  [](const Work& work) { return !work.ahead; });
        }
        for (std::vector<size_t>& chunk : chunks) {
          position = std::next(queue_.insert(position, {&call, std::move(chunk), ahead}));
        }
        call.chunks_left = static_cast<int>(chunks.size());
        work_.notify_all();
        done_.wait(lock,
                   [&] { return call.chunks_left == 0 || (live_ == 0 && call.in_flight == 0); });
        for (auto it = queue_.begin(); it != queue_.end();) {  // left when every slot retired
          if (it->call != &call) {
            ++it;
            continue;
          }
          leftovers.push_back(std::move(it->chunk));
          it = queue_.erase(it);
        }
      }
    }
    for (const std::vector<size_t>& chunk : leftovers) {
      ParseOnFallback(sentences, chunk, "every device was retired", &outcomes, /*failed=*/false,
                      listener);
    }
    std::vector<size_t> failed;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      if (Failed(outcomes[i])) failed.push_back(i);
    }
    if (!failed.empty()) {
      ParseOnFallback(sentences, failed, "", &outcomes, /*failed=*/true, listener);
    }
    return outcomes;
  }

 private:
  // One ParseBatch call: its sentences, where their outcomes go, and its chunks' progress.
  struct Call {
    std::span<const SentenceInput> sentences;
    std::vector<ParseOutcome>* outcomes = nullptr;
    const OutcomeListener* listener = nullptr;  // told each outcome a slot's backend settles
    int chunks_left = 0;  // not yet parsed
    int in_flight = 0;    // being parsed by a slot
  };
  struct Work {
    Call* call;
    std::vector<size_t> chunk;  // indices into call->sentences
    bool ahead = false;         // a ParseBatchAhead call's: before the others
  };

  struct Slot {
    BackendSlot spec;
    std::thread thread;
    std::string inner_name;      // the backend's name(), once made
    std::string creation_error;  // why it could not be made
  };

  // Parses sentences[indices] on the fallback backend. `failed`: they already have a failed
  // outcome, which is kept when the fallback fails too; otherwise `why` says why they come here.
  // Tells the listener each outcome.
  void ParseOnFallback(std::span<const SentenceInput> sentences, const std::vector<size_t>& indices,
                       const std::string& why, std::vector<ParseOutcome>* outcomes, bool failed,
                       const OutcomeListener& listener) {
    ParseOnFallback(sentences, indices, why, outcomes, failed);
    if (!listener) return;
    for (size_t i : indices) listener(i, (*outcomes)[i]);
  }
  void ParseOnFallback(std::span<const SentenceInput> sentences, const std::vector<size_t>& indices,
                       const std::string& why, std::vector<ParseOutcome>* outcomes, bool failed) {
    std::lock_guard fallback_lock(fallback_mutex_);  // callers of ParseBatch may come at once
    if (!fallback_ && options_.make_fallback) {
      auto made = options_.make_fallback();
      if (made.ok()) {
        fallback_ = std::move(*made);
      } else {
        std::lock_guard lock(mutex_);
        warnings_.push_back("the fallback backend cannot be made: " + made.status().message());
        options_.make_fallback = nullptr;  // do not try again
      }
    }
    if (!fallback_) {
      if (failed) return;
      for (size_t i : indices) {
        (*outcomes)[i].status = ParseStatus::kFailed;
        (*outcomes)[i].message = why + " and there is no fallback backend";
      }
      return;
    }
    std::vector<SentenceInput> inputs;
    for (size_t i : indices) inputs.push_back(sentences[i]);
    std::vector<ParseOutcome> parsed = fallback_->ParseBatch(inputs);
    for (size_t k = 0; k < indices.size(); ++k) {
      ParseOutcome& outcome = (*outcomes)[indices[k]];
      if (failed) {
        if (Failed(parsed[k])) continue;  // the device's reason stays
        if (parsed[k].status == ParseStatus::kOk) {
          parsed[k].message = "parsed on the " + fallback_->name() + " backend after the " +
                              "device's failure (" + outcome.message + ")";
        }
      }
      outcome = std::move(parsed[k]);
    }
  }

  void SlotLoop(size_t index) {
    Slot& slot = slots_[index];
    std::unique_ptr<Backend> backend;
    std::string error;
    if (slot.spec.cuda_device < 0 || cuda::SetDevice(slot.spec.cuda_device, &error)) {
      try {
        auto made = slot.spec.make();
        if (made.ok()) {
          backend = std::move(*made);
        } else {
          error = made.status().message();
        }
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    {
      std::lock_guard lock(mutex_);
      if (backend) {
        slot.inner_name = backend->name();
        ++live_;
      } else {
        slot.creation_error = slot.spec.label + ": " + error + "; not used";
      }
      ++created_;
    }
    done_.notify_all();
    if (!backend) return;
    for (;;) {
      Call* call;
      std::vector<size_t> chunk;
      {
        std::unique_lock lock(mutex_);
        timeline::Scope waiting("device slot waiting for a chunk");
        work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) {
          waiting.Cancel();  // not idle: the work is over
          break;
        }
        call = queue_.front().call;
        chunk = std::move(queue_.front().chunk);
        queue_.pop_front();
        ++call->in_flight;
      }
      const std::span<const SentenceInput> sentences = call->sentences;
      std::vector<ParseOutcome>* outcomes = call->outcomes;
      std::vector<ParseOutcome> parsed;
      error.clear();
      try {
        if (IsRun(chunk)) {
          // Consecutive sentences (the one chunk, or a run of a batch that came longest first,
          // as Parser::Parse sends it): parsed where they are, uncopied.
          parsed = backend->ParseBatch(sentences.subspan(chunk.front(), chunk.size()));
        } else {
          std::vector<SentenceInput> inputs;
          inputs.reserve(chunk.size());
          for (size_t i : chunk) inputs.push_back(sentences[i]);
          parsed = backend->ParseBatch(inputs);
        }
        if (parsed.size() != chunk.size()) {
          error = "returned " + std::to_string(parsed.size()) + " outcomes for " +
                  std::to_string(chunk.size()) + " sentences";
        }
      } catch (const std::exception& e) {
        error = std::string("failed: ") + e.what();
      } catch (...) {
        error = "failed";
      }
      if (error.empty() && chunk.size() >= 2 && std::all_of(parsed.begin(), parsed.end(), Failed) &&
          !OneLength(sentences, chunk)) {
        // Not one sentence of several: the device, not the sentences (each of which fits the
        // device's budget, or the backend would have sent it to the CPU itself). Sentences of one
        // length can all fail for a reason of that length (a launch limit at that span, as in
        // issue 16), which every device shares: those go to the fallback one by one instead, and
        // the device stays.
        error = "failed every sentence of a chunk (" + parsed[0].message + ")";
      }
      std::vector<std::string> inner_warnings = backend->TakeWarnings();
      bool retire = !error.empty();
      if (!retire) {
        for (size_t k = 0; k < chunk.size(); ++k) {
          ParseOutcome& outcome = (*outcomes)[chunk[k]] = std::move(parsed[k]);
          // A failed one goes to the fallback after the call's chunks: told then.
          if (!Failed(outcome) && *call->listener) (*call->listener)(chunk[k], outcome);
        }
      }
      {
        std::lock_guard lock(mutex_);
        for (std::string& w : inner_warnings) warnings_.push_back(slot.spec.label + ": " + w);
        --call->in_flight;
        if (retire) {
          warnings_.push_back(slot.spec.label + " (" + slot.inner_name + ") " + error + "; its " +
                              std::to_string(chunk.size()) +
                              " sentences and the rest go to the other devices" +
                              (live_ == 1 ? " (none left: the fallback backend)" : ""));
          // Back at the front (its call is under way), where later retries queue behind it.
          queue_.push_front({call, std::move(chunk), /*ahead=*/true});
          --live_;
          slot.inner_name.clear();
        } else {
          --call->chunks_left;
        }
      }
      done_.notify_all();
      if (retire) {
        work_.notify_all();
        break;
      }
    }
    backend.reset();  // on this thread, with its device current
  }

  MultiDeviceOptions options_;
  std::vector<Slot> slots_;
  std::mutex fallback_mutex_;  // guards fallback_ and options_.make_fallback
  std::unique_ptr<Backend> fallback_;

  std::mutex mutex_;
  std::condition_variable work_, done_;  // work_: slots wait for chunks; done_: the caller waits
  size_t created_ = 0;                   // slots whose backend is made (or failed to be)
  int live_ = 0;                         // slots with a working backend
  bool stop_ = false;
  std::deque<Work> queue_;  // chunks not yet taken, of every ParseBatch call in progress
  std::vector<std::string> warnings_;
};

}  // namespace

StatusOr<std::unique_ptr<Backend>> MakeMultiDeviceBackend(
    std::vector<BackendSlot> slots, const MultiDeviceOptions& options) {
  if (slots.empty()) return Status::Error("no device to parse on");
  auto backend = std::make_unique<MultiDeviceBackend>(std::move(slots), options);
  if (backend->live() == 0) return Status::Error(backend->CreationErrors());
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace cky
