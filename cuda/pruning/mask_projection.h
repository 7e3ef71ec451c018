// A product of grammars' shared pruning mask on a CUDA device (parser/product.h,
// ProductPruning::kShared), in plain C++ (no CUDA types): grammar 0's allowed fine items (as
// pruned_viterbi.h's FineMask leaves them: per cell its num_states bytes, 1 = allowed) projected
// to base symbols, and every substate of an allowed (cell, symbol) allowed in another grammar
// (parser/product.h's SharedProductMask and MemberMaskFromShared, the same bytes). Each target
// grammar's mask is written to device memory of its own, for the inside-outside passes'
// MaskedMaxRuleBatch (cuda/inside_outside/inside_outside.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cky::cuda {

class DeviceMaskProjection {
 public:
  virtual ~DeviceMaskProjection() = default;
  // source_first_state[s], source_num_substates[s]: the source grammar's (grammar 0's) states of
  // product symbol s; source_states: its state count. targets[k][state]: target grammar k's state
  // -> product symbol. Returns null and sets *error without a device.
  static std::unique_ptr<DeviceMaskProjection> Create(
      const std::vector<int32_t>& source_first_state,
      const std::vector<int32_t>& source_num_substates, int32_t source_states,
      const std::vector<std::vector<int32_t>>& targets, std::string* error);

  // Target k's mask of the cells source_cells lists (indices of cells of `source`, device memory,
  // cells x source_states bytes), in that order: device memory, source_cells.size() x target k's
  // states bytes, valid until the next Project for target k. Null, with *error, on a device
  // failure.
  virtual const uint8_t* Project(int target, const uint8_t* source,
                                 const std::vector<int64_t>& source_cells, std::string* error) = 0;
};

}  // namespace cky::cuda
