// CUDA-less builds: no DeviceSplitMergeEStep can be created.
#include "cuda/train/split_merge_estep.h"

#include "cuda/common/device.h"

namespace cky::cuda {

std::unique_ptr<DeviceSplitMergeEStep> DeviceSplitMergeEStep::Create(const SplitMergeTreebank&,
                                                                     std::string* error) {
  return NoCudaSupport(error);
}

}  // namespace cky::cuda
