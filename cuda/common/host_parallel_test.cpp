#include "cuda/common/host_parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
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
  // Each call waits until a second call has started: on one thread this would never end, so a
  // call gives up after a while and the test fails instead of hanging.
  std::atomic<int> started{0};
  std::atomic<bool> overlapped{false};
  ForEachOnHostThreads(2, 1000 * kValuesPerThread, [&](int) {
    started.fetch_add(1);
    for (int k = 0; k < 200000000 && started.load() < 2; ++k) std::this_thread::yield();
    if (started.load() == 2) overlapped = true;
  });
  EXPECT_TRUE(overlapped.load());
}

}  // namespace
}  // namespace cky::cuda
