// The CUDA side of a build configured without CUDA: no device is ever available.
#include "cuda/common/device.h"

namespace cky::cuda {

bool BuiltWithCuda() { return false; }
bool DeviceAvailable() { return false; }
std::string DeviceDescription() { return kNoCudaSupport; }
void DeviceMemory(size_t* free_bytes, size_t* total_bytes) { *free_bytes = *total_bytes = 0; }

int DeviceCount() { return 0; }
bool SetDevice(int device, std::string* error) {
  *error = "no CUDA device " + std::to_string(device) + " (" + kNoCudaSupport + ")";
  return false;
}

void CreateContext(int) {}

bool WaitForEvent(const void* event, std::string* error) {
  if (event == nullptr) return true;
  *error = kNoCudaSupport;
  return false;
}

}  // namespace cky::cuda
