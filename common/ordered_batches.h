// Batches read on the calling thread, parsed on threads of their own and written back in the
// order read: the pipeline of `cky parse` (apps/parse_command.cpp).
//
//   ProcessInOrder<Batch, Result>({.parsing_at_most = 3, .unwritten_at_most = 16},
//                                 read, ready, parse, write);
//
// - `read(Batch*)` fills the next batch; false when the input is over. It may block.
// - `ready()` says whether `read` would return at once. While batches are in flight the pipeline
//   reads ahead only then, so that a co-process that waits for its tree before it sends more input
//   gets that tree.
// - `parse(const Batch&)` runs on a thread of its own for each batch, up to `parsing_at_most` at
//   once.
// - `write(Batch&, Result)` runs on the calling thread, once per batch, in the order read.
//
// Up to `unwritten_at_most` batches may be started and not yet written, so a batch that takes
// long (a sentence parsed again on the CPU) does not stop the batches after it from being parsed.
// When the oldest batch is taken to be written, a batch that waits to start starts first. An
// exception from `parse` is rethrown on the calling thread when its batch's turn to be written
// comes, once the batches still being parsed have finished.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>

#include "common/timeline.h"

namespace cky {

struct OrderedBatchesOptions {
  size_t parsing_at_most = 1;    // batches being parsed at once
  size_t unwritten_at_most = 1;  // batches started and not yet written (parsed or not)
};

template <typename Batch, typename Result>
void ProcessInOrder(const OrderedBatchesOptions& options, const std::function<bool(Batch*)>& read,
                    const std::function<bool()>& ready,
                    const std::function<Result(const Batch&)>& parse,
                    const std::function<void(Batch&, Result)>& write) {
  struct InFlight {
    Batch batch;
    std::future<Result> result;
    bool finished = false;  // parse returned or threw (guarded by `mutex`)
  };
  const size_t parsing_at_most = std::max<size_t>(options.parsing_at_most, 1);
  const size_t unwritten_at_most = std::max<size_t>(options.unwritten_at_most, 1);
  std::mutex mutex;
  std::condition_variable batch_finished;
  size_t parsing = 0;                               // guarded by `mutex`
  std::deque<std::unique_ptr<InFlight>> unwritten;  // oldest first; only this thread changes it
  std::optional<Batch> next;                        // read, not yet parsing
  bool input_left = true;

  auto start = [&] {
    auto in_flight = std::make_unique<InFlight>();
    in_flight->batch = std::move(*next);
    next.reset();
    InFlight* raw = in_flight.get();
    {
      std::lock_guard lock(mutex);
      ++parsing;
    }
    raw->result = std::async(std::launch::async, [&, raw] {
      struct Finish {  // also when parse throws
        std::mutex& mutex;
        std::condition_variable& finished;
        size_t& parsing;
        InFlight* batch;
        ~Finish() {
          {
            std::lock_guard lock(mutex);
            batch->finished = true;
            --parsing;
          }
          finished.notify_all();
        }
      } finish{mutex, batch_finished, parsing, raw};
      return parse(raw->batch);
    });
    unwritten.push_back(std::move(in_flight));
  };
  // Under `mutex`.
  auto can_start = [&] {
    return next.has_value() && parsing < parsing_at_most && unwritten.size() < unwritten_at_most;
  };
  auto oldest_parsed = [&] { return !unwritten.empty() && unwritten.front()->finished; };

  while (input_left || next || !unwritten.empty()) {
    if (input_left && !next && (unwritten.empty() || ready())) {
      timeline::Scope scope("read");
      Batch batch;
      input_left = read(&batch);
      if (input_left) next = std::move(batch);
    }
    bool start_next, write_oldest;
    {
      std::unique_lock lock(mutex);
      if (!can_start() && !oldest_parsed() && !unwritten.empty()) {
        timeline::Scope scope("wait for a batch");
        batch_finished.wait(lock, [&] { return can_start() || oldest_parsed(); });
      }
      start_next = can_start();
      write_oldest = oldest_parsed();
    }
    if (start_next) {  // the parsers first; writing can wait
      start();
      continue;
    }
    if (!write_oldest) continue;
    std::unique_ptr<InFlight> done = std::move(unwritten.front());
    unwritten.pop_front();
    Result result = done->result.get();
    {
      std::lock_guard lock(mutex);
      start_next = can_start();
    }
    if (start_next) start();  // the batch read meanwhile, before this one is written
    write(done->batch, std::move(result));
  }
}

}  // namespace cky
