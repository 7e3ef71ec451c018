// CUDA-less builds: the kernel variants are known (variants.cpp), but no DeviceViterbi can be
// created.
#include "cuda/viterbi/viterbi.h"

namespace cky::cuda {

std::unique_ptr<DeviceViterbi> DeviceViterbi::Create(const GrammarView&,
                                                     const DeviceViterbiOptions&,
                                                     std::string* error) {
  *error = "this build has no CUDA support";
  return nullptr;
}

}  // namespace cky::cuda
