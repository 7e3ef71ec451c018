// What the CUDA side offers, in plain C++ (no CUDA types): every other module includes only headers
// like this one, never cuda_runtime.h. Built from device.cu with nvcc, or from device_stub.cpp when
// the project is configured without CUDA (then no device is ever available).
#pragma once

#include <cstddef>
#include <string>

namespace cky::cuda {

// What a build without CUDA says wherever a device is asked for.
inline constexpr char kNoCudaSupport[] = "this build has no CUDA support";

// The Create functions of a build without CUDA: *error = kNoCudaSupport, and no object.
inline std::nullptr_t NoCudaSupport(std::string* error) {
  *error = kNoCudaSupport;
  return nullptr;
}

// True when this build has CUDA support compiled in.
bool BuiltWithCuda();

// True when a CUDA device can be used now (a driver and at least one GPU).
bool DeviceAvailable();

// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB)", or why there is none.
std::string DeviceDescription();

// Free and total device memory in bytes; zeros without a device.
void DeviceMemory(size_t* free_bytes, size_t* total_bytes);

// The number of CUDA devices this process sees (CUDA_VISIBLE_DEVICES applies); 0 without any.
int DeviceCount();

// Makes `device` (0 .. DeviceCount()-1) the calling thread's current device: every later CUDA call
// of this thread (allocations, kernels, the functions above) goes to it. The current device is per
// host thread, so a multi-device caller drives each device from its own thread. False, with
// *error saying why, for a device that does not exist or cannot be used.
bool SetDevice(int device, std::string* error);

// Creates `device`'s context (the CUDA runtime's primary context) now, on the calling thread; a
// no-op without a device. The first CUDA call of a process pays for this (hundreds of
// milliseconds), so a caller with host work to do (loading a grammar) can pay it on another
// thread meanwhile: the device's next user in any thread then finds the context made.
void CreateContext(int device);

// Waits on the host until `event` has happened: an opaque CUDA event (a cudaEvent_t, as
// cuda/pruning/pruned_viterbi.h's FineMaskReady hands out) recorded on some stream; null returns at
// once. False, with *error, when the device reports an error.
bool WaitForEvent(const void* event, std::string* error);

}  // namespace cky::cuda
