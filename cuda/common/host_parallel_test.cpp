#include "cuda/common/host_parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

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
  const int hardware = std::clamp<int>(std::thread::hardware_concurrency(), 1, 16);
  EXPECT_EQ(HostThreadsFor(256, 0), 1);
  EXPECT_EQ(HostThreadsFor(256, kValuesPerThread - 1), 1);
  EXPECT_EQ(HostThreadsFor(256, 2 * kValuesPerThread), std::min(2, hardware));
  EXPECT_EQ(HostThreadsFor(256, 1000 * kValuesPerThread), hardware);
  EXPECT_EQ(HostThreadsFor(1, 1000 * kValuesPerThread), 1);  // never more threads than calls
  EXPECT_EQ(HostThreadsFor(0, 1000 * kValuesPerThread), 1);
}

TEST(HostParallelTest, CallsRunOnSeveralThreadsWhenTheWorkIsLarge) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one hardware thread";
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
