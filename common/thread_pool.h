// One pool of worker threads for every CPU path (the parser's CPU backend, the CUDA backend's tree
// extraction, membership's bulk recognizer and circuit minimisation, dense inside), so that
// threads are started, counted and joined one way.
//
// ParallelFor(count, fn) runs fn(index, worker) for every index in [0, count) and returns when all
// have run. The calling thread works too, as worker 0; workers are numbered [0, threads()), so a
// caller can keep per-worker scratch space (a chart, a buffer) indexed by `worker`. Indices are
// handed out one at a time through an atomic counter, so uneven items balance themselves; which
// worker runs which index is not fixed, so results must not depend on it. One ParallelFor at a
// time per pool (from any one thread); fn must not call ParallelFor on the same pool.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cky {

class ThreadPool {
 public:
  // threads <= 0: ThreadPool::DefaultThreads(). Starts threads - 1 threads (the caller of
  // ParallelFor is the last worker); they wait idle between calls. When the system refuses a
  // thread (a process or memory limit), the pool keeps those it started: threads() says how many
  // work, and started_fewer() that it is fewer than asked.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // One thread per core this process may run on (its CPU affinity: taskset, a cgroup cpuset, a
  // batch scheduler's share; else std::thread::hardware_concurrency()), at least 1.
  static int DefaultThreads();
  // `requested` when positive, else DefaultThreads().
  static int ResolveThreads(int requested);

  int threads() const { return threads_; }
  bool started_fewer() const { return started_fewer_; }

  void ParallelFor(int count, const std::function<void(int index, int worker)>& fn);

 private:
  void RunItems(int worker);
  void WorkerLoop(int worker);

  int threads_;
  bool started_fewer_ = false;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(int, int)>* job_ = nullptr;
  int count_ = 0;
  std::atomic<int> next_{0};
  int active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace cky
