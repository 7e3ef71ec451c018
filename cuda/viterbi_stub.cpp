// CUDA-less builds: the kernel names are known, but no DeviceViterbi can be created.
#include "cuda/viterbi.h"

namespace cky::cuda {

std::vector<std::string> ViterbiKernelNames() {
  return {"pair-fused-g16",       "pair-fused-g8",        "pair-fused-g4",
          "thread-atomic-global", "thread-atomic-shared", "block-atomic-shared",
          "block-reduce",         "block-reduce-staged",  "block-reduce-seq"};
}

std::unique_ptr<DeviceViterbi> DeviceViterbi::Create(const GrammarArrays&,
                                                     const DeviceViterbiOptions&,
                                                     std::string* error) {
  *error = "this build has no CUDA support";
  return nullptr;
}

}  // namespace cky::cuda
