// Names of the Kim et al. mappings, plain C++: built with and without CUDA.
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

}  // namespace cky::cuda
