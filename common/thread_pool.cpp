#include "common/thread_pool.h"

#if defined(__linux__)
#include <sched.h>
#endif

#include <algorithm>
#include <system_error>
#include <thread>

namespace cky {

int ThreadPool::DefaultThreads() {
#if defined(__linux__)
  // The cores this process may run on, not the machine's: under taskset, a cgroup cpuset or a
  // batch scheduler's share of 2 of 128 cores, 128 threads would only take turns.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) > 0) {
    return CPU_COUNT(&allowed);
  }
#endif
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int ThreadPool::ResolveThreads(int requested) {
  return requested > 0 ? requested : DefaultThreads();
}

ThreadPool::ThreadPool(int threads) : threads_(ResolveThreads(threads)) {
  for (int id = 1; id < threads_; ++id) {
    try {
      workers_.emplace_back([this, id] { WorkerLoop(id); });
    } catch (const std::system_error&) {
      // "Resource temporarily unavailable": work with the threads there are (the caller, at
      // least) rather than end the process.
      threads_ = id;
      started_fewer_ = true;
      break;
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::ParallelFor(int count, const std::function<void(int, int)>& fn) {
  if (threads_ == 1 || count <= 1) {
    for (int index = 0; index < count; ++index) fn(index, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    count_ = count;
    next_.store(0);
    active_ = threads_ - 1;
    ++generation_;
  }
  start_.notify_all();
  RunItems(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return active_ == 0; });
}

void ThreadPool::RunItems(int worker) {
  for (;;) {
    const int index = next_.fetch_add(1);
    if (index >= count_) return;
    (*job_)(index, worker);
  }
}

void ThreadPool::WorkerLoop(int worker) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    RunItems(worker);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--active_ == 0) done_.notify_one();
  }
}

}  // namespace cky
