// Host-side helpers that several kernels' .cu files share (CUDA types: include only from .cu
// files). Plain C++ callers use cuda/common/device.h instead.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "common/status.h"

namespace cky::cuda {

// A Status naming the failed CUDA call `what` and the runtime's description of `err`.
inline Status CudaError(cudaError_t err, const char* what) {
  return Status::Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(err));
}

}  // namespace cky::cuda

// Evaluates a CUDA runtime call and returns CudaError(...) from the enclosing function (which
// returns Status) when it fails.
#define CKY_CUDA_RETURN(expr)                                                    \
  do {                                                                           \
    cudaError_t cky_err_ = (expr);                                               \
    if (cky_err_ != cudaSuccess) return ::cky::cuda::CudaError(cky_err_, #expr); \
  } while (0)
