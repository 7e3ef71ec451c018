// CUDA-less builds: no DeviceInsideOutside can be created.
#include "cuda/inside_outside/inside_outside.h"

#include "cuda/common/device.h"

namespace cky::cuda {

std::unique_ptr<DeviceInsideOutside> DeviceInsideOutside::Create(const GrammarView&,
                                                                 const DeviceInsideOutsideOptions&,
                                                                 std::string* error) {
  return NoCudaSupport(error);
}

}  // namespace cky::cuda
