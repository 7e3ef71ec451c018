// Bulk BPBC CKY in a build without CUDA: no device, so Create always fails.
#include "cuda/membership/bpbc_device.h"

#include "cuda/common/device.h"

namespace cky::cuda {

StatusOr<std::unique_ptr<BpbcGpu>> BpbcGpu::Create(const BpbcProgram&) {
  return Status::Error(kNoCudaSupport);
}

}  // namespace cky::cuda
