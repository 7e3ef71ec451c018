// CYK membership: does a CNF grammar derive a string? (`cky recognize` without --bulk)
//
// RecognizeReference is THE reference for every membership path in the project: the plain
// sequential CYK of the textbooks (Kim et al. 2014, Procedure 1 and 2), readable and never tuned.
// The single-string GPU mappings of Kim et al. (cuda/membership/cyk_membership.h) and the
// bitwise-parallel bulk evaluators (membership/bpbc.h) are tested against it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "cuda/membership/cyk_membership.h"
#include "membership/cnf_grammar.h"

namespace cky {

// The longest string any membership path accepts as input (the GPU chart sizes are planned for it).
inline constexpr int32_t kMaxRecognizeLength = 256;

// True when `grammar` derives the string of terminal ids (an empty string never is). The reference.
bool RecognizeReference(const CnfGrammar& grammar, std::span<const int32_t> string);

// The grammar in the plain arrays the CUDA side reads (binary rules in the grammar's order).
cuda::MembershipGrammar ToMembershipGrammar(const CnfGrammar& grammar);

// Short names of Kim et al.'s mappings and cell memories, for tables and test messages.
const char* RuleMappingName(cuda::RuleMapping mapping);  // "R", "RVS", "LVS", "RVS+D", "LVS+D"
const char* CellMemoryName(cuda::CellMemory memory);     // "M", "M+SH"

// Single-string GPU CYK (Kim et al.) for each string in turn; 1/0 per string. Fails without a
// device or for a string longer than kMaxRecognizeLength.
StatusOr<std::vector<uint8_t>> RecognizeEachOnGpu(const CnfGrammar& grammar,
                                                  const std::vector<std::vector<int32_t>>& strings,
                                                  const cuda::CykGpuOptions& options);

}  // namespace cky
