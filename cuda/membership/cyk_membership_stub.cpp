// The single-string GPU CYK in a build without CUDA: no device, so Create always fails.
#include "cuda/membership/cyk_membership.h"

#include "cuda/common/device.h"

namespace cky::cuda {

StatusOr<std::unique_ptr<CykMembershipGpu>> CykMembershipGpu::Create(const MembershipGrammar&,
                                                                     const CykGpuOptions&,
                                                                     int32_t) {
  return Status::Error(kNoCudaSupport);
}

}  // namespace cky::cuda
