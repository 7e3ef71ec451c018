// ViterbiKernels(): the registry's list (variants.h), in builds with and without CUDA.
#include "cuda/viterbi/variants.h"

#include <string>
#include <vector>

namespace cky::cuda {

const std::vector<ViterbiKernelInfo>& ViterbiKernels() {
  static const std::vector<ViterbiKernelInfo> kKernels = [] {
    std::vector<ViterbiKernelInfo> kernels;
    viterbi::ForEachVariant([&](const auto& variant) {
      kernels.push_back({variant.name, variant.description,
                         viterbi::PolicyOf<decltype(variant)>::kFamily,
                         variant.role == viterbi::Role::kProduction});
    });
    return kernels;
  }();
  return kKernels;
}

std::vector<std::string> ViterbiKernelNames() {
  std::vector<std::string> names;
  for (const ViterbiKernelInfo& kernel : ViterbiKernels()) names.push_back(kernel.name);
  return names;
}

}  // namespace cky::cuda
