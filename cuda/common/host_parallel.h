// Host-side copies into a batch's staging buffers, spread over the host's cores (plain C++; the
// .cu files include it).
//
// A CUDA backend gathers each batch's per-sentence rows (lexical scores) into one staging buffer
// before the upload, and the device waits for it: with a large grammar the rows are gigabytes over
// a corpus, so the copies are spread over the host's cores.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace cky::cuda {

// Calls fn(i) once for every i in [0, count), on up to 16 host threads, the caller's among them;
// returns when all calls have returned. `work` is the calls' total size in values copied: one
// thread per kValuesPerThread of it (at least one, at most ThreadPool::DefaultThreads()), so that a
// small batch is not spread over threads that cost more to start than they save. Calls for
// different i run concurrently, in no fixed order: each must write its own part of the output.
void ForEachOnHostThreads(int count, size_t work, const std::function<void(int)>& fn);

// The share of `work` that makes one more thread worth starting (about 1 MB of doubles).
inline constexpr size_t kValuesPerThread = size_t(1) << 17;

// The number of threads ForEachOnHostThreads uses for `count` calls of `work` values in all.
int HostThreadsFor(int count, size_t work);

// Values [first, first + n) of a batch's rows laid end to end into `out`, on the host threads:
// piece b (0 <= b < begin.size() - 1) holds begin[b + 1] - begin[b] values, from rows(b). begin is
// non-decreasing from 0, and first + n <= begin.back().
void GatherRows(const std::vector<size_t>& begin, const std::function<const double*(int)>& rows,
                size_t first, size_t n, double* out);

}  // namespace cky::cuda
