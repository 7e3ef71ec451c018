// CUDA-less builds: the kernel variants are known (variants.cpp), but no DeviceViterbi can be
// created.
#include "cuda/viterbi/viterbi.h"

#include "cuda/common/device.h"

namespace cky::cuda {

std::unique_ptr<DeviceViterbi> DeviceViterbi::Create(const GrammarView&,
                                                     const DeviceViterbiOptions&,
                                                     std::string* error) {
  return NoCudaSupport(error);
}

}  // namespace cky::cuda
