#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "cuda/common/device.h"

namespace cky::cuda {

bool BuiltWithCuda() { return true; }

bool DeviceAvailable() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return false;
  }
  return count > 0;
}

std::string DeviceDescription() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device (") + cudaGetErrorString(err) + ")";
  }
  if (count == 0) return "no CUDA device";
  int device = 0;
  cudaGetDevice(&device);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, device);
  char text[256];
  std::snprintf(text, sizeof(text), "%s (sm_%d%d, %d SMs, %.1f GiB)", prop.name, prop.major,
                prop.minor, prop.multiProcessorCount,
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

void DeviceMemory(size_t* free_bytes, size_t* total_bytes) {
  *free_bytes = *total_bytes = 0;
  if (!DeviceAvailable()) return;
  if (cudaMemGetInfo(free_bytes, total_bytes) != cudaSuccess) cudaGetLastError();
}

int DeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

bool SetDevice(int device, std::string* error) {
  const int count = DeviceCount();
  if (device < 0 || device >= count) {
    *error = "no CUDA device " + std::to_string(device) + " (this machine has " +
             std::to_string(count) + ")";
    return false;
  }
  const cudaError_t err = cudaSetDevice(device);
  if (err != cudaSuccess) {
    cudaGetLastError();
    *error = "CUDA device " + std::to_string(device) + ": " + cudaGetErrorString(err);
    return false;
  }
  return true;
}

void CreateContext(int device) {
  if (cudaSetDevice(device) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
    cudaGetLastError();  // no device, or none usable: the backend reports it when it is made
  }
}

bool WaitForEvent(const void* event, std::string* error) {
  if (event == nullptr) return true;
  const cudaError_t status =
      cudaEventSynchronize(static_cast<cudaEvent_t>(const_cast<void*>(event)));
  if (status == cudaSuccess) return true;
  cudaGetLastError();
  *error = std::string("CUDA error: ") + cudaGetErrorString(status);
  return false;
}

}  // namespace cky::cuda
