// Helpers that several kernels' .cu files share (CUDA types: include only from .cu files). Plain
// C++ callers use cuda/common/device.h instead.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "cuda/common/host_parallel.h"

namespace cky::cuda {

// A Status naming the failed CUDA call `what` and the runtime's description of `err`.
inline Status CudaError(cudaError_t err, const char* what) {
  return Status::Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(err));
}

// Cell index within one sentence's chart, parser/chart.h's layout (span length, then start).
__host__ __device__ __forceinline__ int ChartCellIndex(int n, int start, int end) {
  const int span = end - start;
  return (span - 1) * (2 * n - span + 2) / 2 + start;
}

// The base of the holders below: each owns a CUDA resource that it frees once, so none is copied.
class NoCopy {
 public:
  NoCopy() = default;
  NoCopy(const NoCopy&) = delete;
  NoCopy& operator=(const NoCopy&) = delete;
};

// A buffer that only grows (contents are not kept): device memory, or pinned host memory for
// kPinned. Reserve is false when the allocation fails.
template <typename T, bool kPinned>
class CudaBuffer : NoCopy {
 public:
  ~CudaBuffer() { Free(); }
  void Free() {
    if (data_) kPinned ? cudaFreeHost(data_) : cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
  }
  // Grows to at least `count` elements.
  bool Reserve(size_t count) {
    if (count <= size_) return true;
    Free();
    const size_t bytes = std::max<size_t>(count, 1) * sizeof(T);
    const cudaError_t status = kPinned ? cudaMallocHost(reinterpret_cast<void**>(&data_), bytes)
                                       : cudaMalloc(reinterpret_cast<void**>(&data_), bytes);
    if (status != cudaSuccess) {
      cudaGetLastError();
      data_ = nullptr;
      return false;
    }
    size_ = count;
    return true;
  }
  bool Upload(const std::vector<T>& host) {
    if (!Reserve(host.size())) return false;
    return host.empty() || cudaMemcpy(data_, host.data(), host.size() * sizeof(T),
                                      cudaMemcpyHostToDevice) == cudaSuccess;
  }
  // Queued on `stream` (after what is queued there; the host vector may go when this returns).
  bool Upload(const std::vector<T>& host, cudaStream_t stream) {
    return Upload(host.data(), host.size(), stream);
  }
  bool Upload(const T* host, size_t count, cudaStream_t stream) {
    if (!Reserve(count)) return false;
    return count == 0 || cudaMemcpyAsync(data_, host, count * sizeof(T), cudaMemcpyHostToDevice,
                                         stream) == cudaSuccess;
  }
  // Grows with a quarter of headroom, so that a long run's slightly larger batches do not each
  // free and allocate again; the exact size when the headroom does not fit. For device memory
  // (pinned growth costs more: Reserve).
  bool Grow(size_t count) { return count <= size_ || Reserve(count + count / 4) || Reserve(count); }
  T* get() const { return data_; }
  size_t size() const { return size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

template <typename T>
using DeviceArray = CudaBuffer<T, false>;
template <typename T>
using PinnedArray = CudaBuffer<T, true>;

// Host twins of CUDA's vector types (e.g. cuda/inside_outside/sum_layouts.h's int4 and int2, same
// size and member order) as the device types.
template <typename Device, typename Host>
std::vector<Device> AsDevice(const std::vector<Host>& host) {
  static_assert(sizeof(Device) == sizeof(Host));
  std::vector<Device> out(host.size());
  if (!host.empty()) std::memcpy(out.data(), host.data(), host.size() * sizeof(Host));
  return out;
}

// False, with *error = "no CUDA device", when the process sees no usable device.
inline bool RequireDevice(std::string* error) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    *error = "no CUDA device";
    return false;
  }
  return true;
}

// The device bytes a batch may use: `requested` when set, else `share` of the memory free now.
inline size_t DefaultBatchBudget(size_t requested, double share = 0.85) {
  if (requested > 0) return requested;
  size_t free_bytes = 0, total = 0;
  cudaMemGetInfo(&free_bytes, &total);
  return static_cast<size_t>(free_bytes * share);
}

// A stream owned by one device object (destroyed with it).
class CudaStream : NoCopy {
 public:
  ~CudaStream() {
    if (stream_) cudaStreamDestroy(stream_);
  }
  bool Create(std::string* error) {
    if (cudaStreamCreate(&stream_) == cudaSuccess) return true;
    stream_ = nullptr;
    *error = "cudaStreamCreate failed";
    return false;
  }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Host-to-device copies of a batch's rows through a small pinned ring: two chunks, each filled by
// the caller while the other one's copy runs, on a copy stream of the object's own; the consumer
// stream's later work waits for the copies on the device. Instead of a pinned buffer the size of
// a batch's rows: pinning hundreds of MB (cudaMallocHost) and unpinning them (cudaFreeHost, or the
// driver at the process's end) cost tens of ms each, at the first batch and at the end
// (bench/RESULTS-LOG.md).
template <typename T>
class RingUpload : NoCopy {
 public:
  explicit RingUpload(size_t chunk_values = size_t(1) << 20) : chunk_(chunk_values) {}
  ~RingUpload() {
    if (stream_) cudaStreamSynchronize(stream_);
    for (cudaEvent_t e : events_)
      if (e) cudaEventDestroy(e);
    if (stream_) cudaStreamDestroy(stream_);
  }
  // Copies `count` values to device memory `device`: fill(first, n, out) writes values [first,
  // first + n) to `out`. Returns once the last chunk is queued (the host has filled them all);
  // work queued on `consumer` after this waits for the copies. The copies may start at once:
  // nothing queued earlier on any stream may still use `device`. False when a CUDA call fails.
  bool Upload(T* device, size_t count, const std::function<void(size_t, size_t, T*)>& fill,
              cudaStream_t consumer) {
    if (count == 0) return true;
    if (!stream_ && !Init()) return false;
    for (size_t first = 0, i = 0; first < count; first += chunk_, ++i) {
      cudaEvent_t& free_again = events_[i % 2];  // this slot's last copy, done
      if (cudaEventSynchronize(free_again) != cudaSuccess) return false;
      const size_t n = std::min(chunk_, count - first);
      T* out = ring_.get() + (i % 2) * chunk_;
      fill(first, n, out);
      if (cudaMemcpyAsync(device + first, out, n * sizeof(T), cudaMemcpyHostToDevice, stream_) !=
              cudaSuccess ||
          cudaEventRecord(free_again, stream_) != cudaSuccess) {
        return false;
      }
    }
    return cudaEventRecord(events_[2], stream_) == cudaSuccess &&
           cudaStreamWaitEvent(consumer, events_[2], 0) == cudaSuccess;
  }
  // Upload of the first `count` values of a batch's rows laid end to end (GatherRows: piece b
  // holds begin[b + 1] - begin[b] values from rows(b), gathered on the host threads); T = double.
  bool UploadRows(T* device, size_t count, const std::vector<size_t>& begin,
                  const std::function<const T*(int)>& rows, cudaStream_t consumer) {
    return Upload(
        device, count,
        [&](size_t first, size_t n, T* out) { GatherRows(begin, rows, first, n, out); }, consumer);
  }

 private:
  bool Init() {
    if (!ring_.Reserve(2 * chunk_)) return false;
    for (cudaEvent_t& e : events_) {
      if (!e && cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
        e = nullptr;
        return false;
      }
    }
    if (cudaStreamCreate(&stream_) != cudaSuccess) {
      stream_ = nullptr;
      return false;
    }
    return true;
  }

  size_t chunk_;
  PinnedArray<T> ring_;
  cudaEvent_t events_[3] = {};  // the two slots' last copies, the last copy of an upload
  cudaStream_t stream_ = nullptr;
};

// Waits for everything queued on `stream`; false, with *error = "CUDA error: ...", when a call or
// a kernel on it failed (the runtime's last error is read, and so cleared, either way).
inline bool WaitForStream(cudaStream_t stream, std::string* error) {
  cudaError_t status = cudaStreamSynchronize(stream);
  const cudaError_t last = cudaGetLastError();  // e.g. the launch error of the last kernel
  if (status == cudaSuccess) status = last;
  if (status == cudaSuccess) return true;
  *error = std::string("CUDA error: ") + cudaGetErrorString(status);
  return false;
}

// Events for timing phases on a stream, by index (created when first recorded, destroyed with
// the object): Record(i) at each phase boundary, Elapsed(i, j) once the stream is done.
class EventMarks : NoCopy {
 public:
  ~EventMarks() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  void Record(int index, cudaStream_t stream) {
    while (static_cast<int>(events_.size()) <= index) {
      cudaEvent_t e;
      cudaEventCreate(&e);
      events_.push_back(e);
    }
    cudaEventRecord(events_[index], stream);
  }
  // Milliseconds from mark `from` to mark `to`.
  float Elapsed(int from, int to) const {
    float ms = 0;
    cudaEventElapsedTime(&ms, events_[from], events_[to]);
    return ms;
  }

 private:
  std::vector<cudaEvent_t> events_;
};

// The current device's most shared memory a block can opt in to.
inline int MaxSharedOptin() {
  int device = 0, bytes = 48 * 1024;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  return bytes;
}

// Lets `kernel` launch with `dynamic` bytes of dynamic shared memory, or says why it cannot. The
// 48 KB a launch gets without opt-in is static and dynamic shared memory together (a kernel's
// default maxDynamicSharedSizeBytes is 48 KB less its static bytes), so the opt-in is decided on
// the kernel's own maxDynamicSharedSizeBytes, not on 48 KB: a launch with 48 KB - static <
// dynamic <= 48 KB and no opt-in fails with "invalid argument". Kernels whose dynamic bytes grow
// with the span length reach that window at some sentence length on any grammar.
template <typename Kernel>
bool AllowDynamicShared(Kernel* kernel, size_t dynamic, int max_optin, const char* name,
                        std::string* error) {
  cudaFuncAttributes attributes{};
  if (cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess) {
    *error = std::string("cudaFuncGetAttributes failed for the ") + name +
             " kernel: " + cudaGetErrorString(cudaGetLastError());
    return false;
  }
  if (attributes.sharedSizeBytes + dynamic > size_t(max_optin)) {
    *error = std::string("sentence too long for the ") + name + " kernel's shared memory (" +
             std::to_string(attributes.sharedSizeBytes + dynamic) + " bytes, the device has " +
             std::to_string(max_optin) + ")";
    return false;
  }
  if (dynamic > size_t(attributes.maxDynamicSharedSizeBytes) &&
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(dynamic)) !=
          cudaSuccess) {
    *error = std::string("cudaFuncSetAttribute failed for the ") + name +
             " kernel: " + cudaGetErrorString(cudaGetLastError());
    return false;
  }
  return true;
}

}  // namespace cky::cuda

// Evaluates a CUDA runtime call and returns CudaError(...) from the enclosing function (which
// returns Status) when it fails.
#define CKY_CUDA_RETURN(expr)                                                    \
  do {                                                                           \
    cudaError_t cky_err_ = (expr);                                               \
    if (cky_err_ != cudaSuccess) return ::cky::cuda::CudaError(cky_err_, #expr); \
  } while (0)
