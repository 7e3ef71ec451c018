// Single-string CYK membership on the GPU, after Kim, Choi, Lee, Man and Han, "Parallel CYK
// Membership Test on GPUs" (NPC 2014). Plain C++ (no CUDA types); built from cyk_membership.cu, or
// from cyk_membership_stub.cpp without CUDA (then Create fails: no device).
//
// One kernel launch per span length; one block per chart cell of that length; the threads of a
// block walk the binary rules ("rule-based mapping") and, for each rule A -> B C, look for a split
// where B and C are both present. The rule order and the padding with dummy rules select the
// mapping of Kim et al.; where the cell's variable set is built selects the memory variant.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace cky::cuda {

// A boolean CNF grammar as plain arrays (see membership/cnf_grammar.h for the meaning).
struct MembershipGrammar {
  int32_t num_nonterminals = 0;
  int32_t start = 0;
  std::vector<int32_t> rule_parent, rule_left, rule_right;  // binary rules A -> B C
  std::vector<int32_t> unary_parent, unary_child;           // transitive chain rules A ->+ C
  // Terminal t may be derived from terminal_parents[terminal_offsets[t] .. terminal_offsets[t+1]).
  std::vector<int32_t> terminal_offsets, terminal_parents;
};

enum class RuleMapping {
  kRule,      // R: the rules as given, one per thread
  kRvs,       // RVS: sorted by the first right-hand variable B (fewer divergent branches)
  kLvs,       // LVS: sorted by the left-hand variable A
  kRvsDummy,  // RVS+D: each B group padded with dummy rules to a multiple of the warp size
  kLvsDummy,  // LVS+D: each A group padded likewise, so that a warp has a single left-hand side
};
enum class CellMemory {
  kGlobal,  // M: a thread that finds a derivation writes the chart cell in global memory
  kShared,  // +SH: the cell's variable set is built in shared memory (a warp vote for LVS+D)
            // and copied to the chart once
};

struct CykGpuOptions {
  RuleMapping mapping = RuleMapping::kLvsDummy;
  CellMemory memory = CellMemory::kShared;
  int32_t threads_per_block = 256;
};

class CykMembershipGpu {
 public:
  // Uploads the grammar, ordered and padded for `options.mapping`, and a chart for strings of up to
  // `max_length` terminals. Fails without a CUDA device.
  static StatusOr<std::unique_ptr<CykMembershipGpu>> Create(const MembershipGrammar& grammar,
                                                            const CykGpuOptions& options,
                                                            int32_t max_length);
  virtual ~CykMembershipGpu() = default;
  // One membership test per string (terminal ids), each string in turn: accepted[s] is 1 when the
  // grammar derives strings[s]. Strings longer than max_length are an error; empty strings give 0.
  virtual Status Recognize(const std::vector<std::vector<int32_t>>& strings,
                           std::vector<uint8_t>* accepted) = 0;
  // Rules on the device, dummies included.
  virtual int64_t device_rule_count() const = 0;
};

}  // namespace cky::cuda
