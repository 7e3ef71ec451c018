#include "cuda/common/host_parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace cky::cuda {

int HostThreadsFor(int count, size_t work) {
  const size_t hardware = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
  const size_t wanted = std::max<size_t>(1, work / kValuesPerThread);
  return static_cast<int>(std::min({hardware, wanted, size_t(std::max(count, 1))}));
}

void ForEachOnHostThreads(int count, size_t work, const std::function<void(int)>& fn) {
  const int threads = HostThreadsFor(count, work);
  // Calls are handed out one at a time, so that sentences of uneven lengths balance.
  std::atomic<int> next{0};
  auto run = [&] {
    for (int i = next.fetch_add(1); i < count; i = next.fetch_add(1)) fn(i);
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) helpers.emplace_back(run);
  run();
  for (std::thread& helper : helpers) helper.join();
}

}  // namespace cky::cuda
