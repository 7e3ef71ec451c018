// The dense inside GPU path of a build configured without CUDA: there is never a device.
#include "cuda/dense/dense_inside_device.h"

namespace cky::cuda {

StatusOr<std::unique_ptr<DenseInsideGpu>> DenseInsideGpu::Create(int, int,
                                                                 const std::vector<float>&,
                                                                 const std::vector<float>&) {
  return Status::Error("dense inside GPU: this build has no CUDA support");
}

}  // namespace cky::cuda
