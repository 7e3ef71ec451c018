// Helpers that several kernels' .cu files share (CUDA types: include only from .cu files). Plain
// C++ callers use cuda/common/device.h instead.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/status.h"

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

// A buffer that only grows (contents are not kept): device memory, or pinned host memory for
// kPinned. Reserve is false when the allocation fails.
template <typename T, bool kPinned>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
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
