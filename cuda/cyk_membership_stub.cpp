// The single-string GPU CYK in a build without CUDA: no device, so Create always fails.
#include "cuda/cyk_membership.h"

namespace cky::cuda {

const char* RuleMappingName(RuleMapping mapping) {
  switch (mapping) {
    case RuleMapping::kRule:
      return "R";
    case RuleMapping::kRvs:
      return "RVS";
    case RuleMapping::kLvs:
      return "LVS";
    case RuleMapping::kRvsDummy:
      return "RVS+D";
    case RuleMapping::kLvsDummy:
      return "LVS+D";
  }
  return "?";
}

const char* CellMemoryName(CellMemory memory) {
  return memory == CellMemory::kShared ? "M+SH" : "M";
}

StatusOr<std::unique_ptr<CykMembershipGpu>> CykMembershipGpu::Create(const MembershipGrammar&,
                                                                     const CykGpuOptions&,
                                                                     int32_t) {
  return Status::Error("this build has no CUDA support");
}

}  // namespace cky::cuda
