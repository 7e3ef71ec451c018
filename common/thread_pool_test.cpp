#include "common/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <set>
#include <vector>

#include "common/test_limits.h"

namespace cky {
namespace {

TEST(ThreadPoolTest, RunsEveryIndexOnceOnAValidWorker) {
  ThreadPool pool(4);
  ASSERT_EQ(pool.threads(), 4);
  std::vector<std::atomic<int>> runs(1000);
  std::atomic<bool> bad_worker{false};
  pool.ParallelFor(static_cast<int>(runs.size()), [&](int index, int worker) {
    if (worker < 0 || worker >= pool.threads()) bad_worker = true;
    ++runs[index];
  });
  EXPECT_FALSE(bad_worker);
  for (const auto& count : runs) EXPECT_EQ(count.load(), 1);
}

TEST(ThreadPoolTest, IsReusableAndHandlesEmptyAndSingleItems) {
  ThreadPool pool(3);
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> sum{0};
    pool.ParallelFor(round, [&](int index, int) { sum += index; });
    EXPECT_EQ(sum.load(), round * (round - 1) / 2);
  }
}

TEST(ThreadPoolTest, OneThreadRunsInOrderOnTheCaller) {
  ThreadPool pool(1);
  std::vector<int> order;
  pool.ParallelFor(5, [&](int index, int worker) {
    EXPECT_EQ(worker, 0);
    order.push_back(index);
  });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(ThreadPoolTest, NonPositiveMeansOnePerHardwareThread) {
  EXPECT_GE(ThreadPool::DefaultThreads(), 1);
  EXPECT_EQ(ThreadPool::ResolveThreads(0), ThreadPool::DefaultThreads());
  EXPECT_EQ(ThreadPool::ResolveThreads(7), 7);
  ThreadPool pool(0);
  EXPECT_EQ(pool.threads(), ThreadPool::DefaultThreads());
}

TEST(ThreadPoolTest, WorksWithTheThreadsTheSystemAllows) {
  if (kAddressSanitizer) GTEST_SKIP() << "no address-space limit under AddressSanitizer";
  // In a child process whose address space leaves room for a few thread stacks only: 1,000
  // threads were an uncaught std::system_error (`cky parse --threads 100000` aborted).
  auto child = [] {
    LimitAddressSpaceToCurrentPlus(64 << 20);
    ThreadPool pool(1000);
    std::atomic<int> ran{0};
    pool.ParallelFor(5000, [&](int, int worker) {
      if (worker < pool.threads()) ++ran;
    });
    const bool fewer = pool.started_fewer() && pool.threads() >= 1 && pool.threads() < 1000;
    std::exit(fewer && ran == 5000 ? 0 : 1);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
}

TEST(ThreadPoolTest, UsableFromAThreadOtherThanItsCreator) {
  ThreadPool pool(2);
  std::atomic<int> count{0};
  std::thread other([&] { pool.ParallelFor(100, [&](int, int) { ++count; }); });
  other.join();
  EXPECT_EQ(count.load(), 100);
}

}  // namespace
}  // namespace cky
