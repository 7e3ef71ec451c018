// CUDA-less builds: no DeviceMaskProjection can be created.
#include "cuda/pruning/mask_projection.h"

namespace cky::cuda {

std::unique_ptr<DeviceMaskProjection> DeviceMaskProjection::Create(
    const std::vector<int32_t>&, const std::vector<int32_t>&, int32_t,
    const std::vector<std::vector<int32_t>>&, std::string* error) {
  *error = "this build has no CUDA support";
  return nullptr;
}

}  // namespace cky::cuda
