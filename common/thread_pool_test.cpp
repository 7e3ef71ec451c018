#include "common/thread_pool.h"

#include <gtest/gtest.h>

#if defined(__linux__)
#include <sched.h>
#endif

#include <atomic>
#include <cstdlib>
#include <set>
#include <vector>

#include "common/test_limits.h"

namespace cky {
namespace {

#if defined(__linux__)
// "All cores" are those this process may run on: limited to one core (as taskset, a cgroup cpuset
// or a batch scheduler would), the default pool has one thread, not one per core of the machine.
TEST(ThreadPoolTest, DefaultThreadsCountTheCoresThisProcessMayRunOn) {
  cpu_set_t original;
  ASSERT_EQ(sched_getaffinity(0, sizeof(original), &original), 0);
  EXPECT_EQ(ThreadPool::DefaultThreads(), CPU_COUNT(&original));
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &original)) ++first;
  ASSERT_LT(first, CPU_SETSIZE);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  if (sched_setaffinity(0, sizeof(one), &one) != 0) GTEST_SKIP() << "this thread cannot be pinned";
  const int threads = ThreadPool::DefaultThreads();
  const int pool_threads = ThreadPool(0).threads();
  ASSERT_EQ(sched_setaffinity(0, sizeof(original), &original), 0);
  EXPECT_EQ(threads, 1);
  EXPECT_EQ(pool_threads, 1);
}
#endif

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
