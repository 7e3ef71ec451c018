// ProcessInOrder: every batch written once, in the order read, whatever the parse times; never
// more batches parsing or unwritten than allowed; a slow batch does not stop the ones after it;
// no read-ahead when input is not ready (a co-process); a parse's exception reaches the caller.
#include "common/ordered_batches.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace cky {
namespace {

struct Batch {
  int number = -1;
};

// Reads batches 0 .. count-1.
std::function<bool(Batch*)> Counter(int count, int* read) {
  return [count, read](Batch* batch) {
    if (*read == count) return false;
    batch->number = (*read)++;
    return true;
  };
}

std::function<bool()> Always() {
  return [] { return true; };
}

TEST(OrderedBatchesTest, WritesEveryBatchOnceInOrderWithinTheLimits) {
  for (OrderedBatchesOptions options :
       {OrderedBatchesOptions{1, 1}, OrderedBatchesOptions{2, 2}, OrderedBatchesOptions{3, 16}}) {
    int read = 0;
    std::atomic<int> parsing = 0, most_parsing = 0, started = 0, most_unwritten = 0;
    std::atomic<int> written_count = 0;
    std::vector<int> written;
    std::mt19937 rng(options.parsing_at_most);
    std::vector<int> delays_ms(60);
    for (int& d : delays_ms) d = static_cast<int>(rng() % 6);
    ProcessInOrder<Batch, std::string>(
        options, Counter(60, &read), Always(),
        [&](const Batch& batch) {
          const int now = ++parsing;
          most_parsing = std::max(most_parsing.load(), now);
          const int unwritten = ++started - written_count.load();
          most_unwritten = std::max(most_unwritten.load(), unwritten);
          std::this_thread::sleep_for(std::chrono::milliseconds(delays_ms[batch.number]));
          --parsing;
          return "batch " + std::to_string(batch.number);
        },
        [&](Batch& batch, std::string result) {
          EXPECT_EQ(result, "batch " + std::to_string(batch.number));
          written.push_back(batch.number);
          ++written_count;
        });
    ASSERT_EQ(written.size(), 60u);
    for (int i = 0; i < 60; ++i) EXPECT_EQ(written[i], i);
    EXPECT_LE(most_parsing.load(), static_cast<int>(options.parsing_at_most));
    // The batch being written counts until `write` returns, and the next may start before.
    EXPECT_LE(most_unwritten.load(), static_cast<int>(options.unwritten_at_most) + 1);
  }
}

// Batch 0 is held until batch 5 has started: with three parsing and sixteen unwritten, batches 1 to
// 5 are parsed meanwhile (two at a time beside it); two batches in flight would wait for ever.
TEST(OrderedBatchesTest, ASlowBatchDoesNotStopTheOnesAfterIt) {
  int read = 0;
  std::mutex mutex;
  std::condition_variable fifth_started;
  bool released = false;
  std::vector<int> written;
  ProcessInOrder<Batch, int>(
      {.parsing_at_most = 3, .unwritten_at_most = 16}, Counter(8, &read), Always(),
      [&](const Batch& batch) {
        std::unique_lock lock(mutex);
        if (batch.number == 0) {
          EXPECT_TRUE(fifth_started.wait_for(lock, std::chrono::seconds(30), [&] {
            return released;
          })) << "batch 5 never started while batch 0 was parsing";
        } else if (batch.number == 5) {
          released = true;
          fifth_started.notify_all();
        }
        return batch.number;
      },
      [&](Batch& batch, int result) {
        EXPECT_EQ(result, batch.number);
        written.push_back(result);
      });
  EXPECT_EQ(written, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

// A co-process writes a sentence and waits for its tree: while input is not ready, nothing is
// read ahead, so each batch is written before the next is read.
TEST(OrderedBatchesTest, NoReadAheadWhenInputIsNotReady) {
  int read = 0;
  std::vector<std::string> events;
  auto counter = Counter(5, &read);
  ProcessInOrder<Batch, int>(
      {.parsing_at_most = 3, .unwritten_at_most = 16},
      [&](Batch* batch) {
        const bool more = counter(batch);
        if (more) events.push_back("read " + std::to_string(batch->number));
        return more;
      },
      [] { return false; }, [](const Batch& batch) { return batch.number; },
      [&](Batch& batch, int) { events.push_back("write " + std::to_string(batch.number)); });
  EXPECT_EQ(events,
            (std::vector<std::string>{"read 0", "write 0", "read 1", "write 1", "read 2", "write 2",
                                      "read 3", "write 3", "read 4", "write 4"}));
}

TEST(OrderedBatchesTest, AParseExceptionReachesTheCallerAfterTheBatchesBefore) {
  int read = 0;
  std::vector<int> written;
  EXPECT_THROW((ProcessInOrder<Batch, int>(
                   {.parsing_at_most = 3, .unwritten_at_most = 16}, Counter(10, &read), Always(),
                   [](const Batch& batch) {
                     if (batch.number == 4) throw std::runtime_error("out of memory");
                     return batch.number;
                   },
                   [&](Batch& batch, int) { written.push_back(batch.number); })),
               std::runtime_error);
  EXPECT_EQ(written, (std::vector<int>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace cky
