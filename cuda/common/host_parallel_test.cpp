#include "cuda/common/host_parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common/thread_pool.h"

namespace cky::cuda {
namespace {

TEST(HostParallelTest, EveryIndexOnceWhateverTheWork) {
  for (int count : {0, 1, 2, 7, 256, 1000}) {
    for (size_t work : {size_t(0), size_t(1), kValuesPerThread * 3, kValuesPerThread * 1000}) {
      std::vector<std::atomic<int>> calls(count);
      ForEachOnHostThreads(count, work, [&](int i) { calls[i].fetch_add(1); });
      for (int i = 0; i < count; ++i)
        ASSERT_EQ(calls[i].load(), 1) << "count " << count << " work " << work << " index " << i;
    }
  }
}

TEST(HostParallelTest, ThreadsFollowTheWork) {
  const int hardware = std::clamp<int>(ThreadPool::DefaultThreads(), 1, 16);
  EXPECT_EQ(HostThreadsFor(256, 0), 1);
  EXPECT_EQ(HostThreadsFor(256, kValuesPerThread - 1), 1);
  EXPECT_EQ(HostThreadsFor(256, 2 * kValuesPerThread), std::min(2, hardware));
  EXPECT_EQ(HostThreadsFor(256, 1000 * kValuesPerThread), hardware);
  EXPECT_EQ(HostThreadsFor(1, 1000 * kValuesPerThread), 1);  // never more threads than calls
  EXPECT_EQ(HostThreadsFor(0, 1000 * kValuesPerThread), 1);
}

TEST(HostParallelTest, GatherRowsCopiesAnyRangeOfTheRowsEndToEnd) {
  // Pieces of 0 to 300,000 values (empty ones too), read back in ranges that start and end inside
  // pieces, at their edges, and span many: every value lands where the concatenation has it.
  std::vector<std::vector<double>> pieces;
  for (size_t size : {size_t(3), size_t(0), size_t(300000), size_t(1), size_t(0), size_t(77777),
                      size_t(5), kValuesPerThread * 2 + 1}) {
    std::vector<double> piece(size);
    for (size_t i = 0; i < size; ++i) piece[i] = double(pieces.size()) * 1e7 + double(i);
    pieces.push_back(std::move(piece));
  }
  std::vector<size_t> begin{0};
  std::vector<double> whole;
  for (const auto& piece : pieces) {
    begin.push_back(begin.back() + piece.size());
    whole.insert(whole.end(), piece.begin(), piece.end());
  }
  const auto rows = [&](int b) { return pieces[b].data(); };
  for (const auto& [first, n] :
       std::vector<std::pair<size_t, size_t>>{{0, whole.size()},
                                              {0, 1},
                                              {2, 2},
                                              {3, 300000},
                                              {1, 299999},
                                              {300003, 1},
                                              {150000, 200000},
                                              {whole.size() - 1, 1},
                                              {377785, whole.size() - 377785},
                                              {10, 0}}) {
    std::vector<double> out(n, -1.0);
    GatherRows(begin, rows, first, n, out.data());
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], whole[first + i]) << "range [" << first << ", +" << n << ") at " << i;
  }
}

TEST(HostParallelTest, CallsRunOnSeveralThreadsWhenTheWorkIsLarge) {
  if (ThreadPool::DefaultThreads() < 2) GTEST_SKIP() << "one core to run on";
  // Each call waits (10 s at most) until two calls are in flight at once, which only happens when
  // they run on different threads: one after the other, each call sees only itself.
  std::atomic<int> in_flight{0}, most_in_flight{0};
  ForEachOnHostThreads(2, 1000 * kValuesPerThread, [&](int) {
    const int now = in_flight.fetch_add(1) + 1;
    for (int seen = most_in_flight.load(); seen < now;)
      most_in_flight.compare_exchange_weak(seen, now);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (most_in_flight.load() < 2 && std::chrono::steady_clock::now() < give_up)
      std::this_thread::yield();
    in_flight.fetch_sub(1);
  });
  EXPECT_EQ(most_in_flight.load(), 2);
}

}  // namespace
}  // namespace cky::cuda
