// What the CUDA side offers, in plain C++ (no CUDA types): every other module includes only headers
// like this one, never cuda_runtime.h. Built from device.cu with nvcc, or from device_stub.cpp when
// the project is configured without CUDA (then no device is ever available).
#pragma once

#include <cstddef>
#include <string>

namespace cky::cuda {

// True when this build has CUDA support compiled in.
bool BuiltWithCuda();

// True when a CUDA device can be used now (a driver and at least one GPU).
bool DeviceAvailable();

// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB)", or why there is none.
std::string DeviceDescription();

// Free and total device memory in bytes; zeros without a device.
void DeviceMemory(size_t* free_bytes, size_t* total_bytes);

}  // namespace cky::cuda
