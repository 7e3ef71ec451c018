// CUDA-less builds: no DeviceProductMaxRule can be created.
#include "cuda/common/device.h"
#include "cuda/inside_outside/product_max_rule.h"

namespace cky::cuda {

std::unique_ptr<DeviceProductMaxRule> DeviceProductMaxRule::Create(
    const std::vector<const DeviceInsideOutside*>&, const std::vector<std::vector<int32_t>>&,
    const std::vector<uint8_t>&, size_t, std::string* error) {
  return NoCudaSupport(error);
}

}  // namespace cky::cuda
