// CUDA-less builds: no DeviceSplitMergeEStep can be created.
#include "cuda/train/split_merge_estep.h"

namespace cky::cuda {

std::unique_ptr<DeviceSplitMergeEStep> DeviceSplitMergeEStep::Create(const SplitMergeTreebank&,
                                                                     std::string* error) {
  *error = "this build has no CUDA support";
  return nullptr;
}

}  // namespace cky::cuda
