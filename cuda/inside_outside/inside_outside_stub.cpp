// CUDA-less builds: no DeviceInsideOutside can be created.
#include "cuda/inside_outside/inside_outside.h"

namespace cky::cuda {

std::unique_ptr<DeviceInsideOutside> DeviceInsideOutside::Create(const GrammarView&,
                                                                 const DeviceInsideOutsideOptions&,
                                                                 std::string* error) {
  *error = "this build has no CUDA support";
  return nullptr;
}

}  // namespace cky::cuda
