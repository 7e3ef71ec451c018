#include "cuda/common/host_parallel.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <thread>
#include <vector>

#include "common/thread_pool.h"

namespace cky::cuda {

int HostThreadsFor(int count, size_t work) {
  const size_t hardware = std::clamp<size_t>(ThreadPool::DefaultThreads(), 1, 16);
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

void GatherRows(const std::vector<size_t>& begin, const std::function<const double*(int)>& rows,
                size_t first, size_t n, double* out) {
  const int parts = HostThreadsFor(std::numeric_limits<int>::max(), n);
  ForEachOnHostThreads(parts, n, [&](int part) {
    size_t at = first + n * part / parts;
    const size_t end = first + n * (part + 1) / parts;
    // The piece holding value `at`: the last b with begin[b] <= at.
    int b = static_cast<int>(std::upper_bound(begin.begin(), begin.end(), at) - begin.begin()) - 1;
    for (; at < end; ++b) {
      const size_t take = std::min(end, begin[b + 1]) - at;
      if (take == 0) continue;  // an empty piece
      const double* row = rows(b) + (at - begin[b]);
      std::copy(row, row + take, out + (at - first));
      at += take;
    }
  });
}

}  // namespace cky::cuda
