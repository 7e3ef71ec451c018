// CUDA-less builds: no DevicePrunedViterbi can be created.
#include "cuda/pruning/pruned_viterbi.h"

namespace cky::cuda {

bool LevelRunsPairKernels(const GrammarView&, int) { return false; }

std::unique_ptr<DevicePrunedViterbi> DevicePrunedViterbi::Create(const std::vector<PruningLevel>&,
                                                                 const DevicePrunedViterbiOptions&,
                                                                 std::string* error) {
  *error = "this build has no CUDA support";
  return nullptr;
}

}  // namespace cky::cuda
