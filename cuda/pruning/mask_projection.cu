#include <cuda_runtime.h>

#include <algorithm>
#include <memory>

#include "cuda/common/device_helpers.cuh"
#include "cuda/pruning/mask_projection.h"

namespace cky::cuda {

namespace {

// out[c][s] = any allowed source substate of symbol_of[s] in source cell cells[c].
__global__ void ProjectKernel(const uint8_t* source, int32_t source_states, const int64_t* cells,
                              int64_t count, const int32_t* symbol_of, int32_t target_states,
                              const int32_t* first, const int32_t* number, uint8_t* out) {
  const int64_t total = count * target_states;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i / target_states;
    const int32_t s = static_cast<int32_t>(i - c * target_states);
    const int32_t symbol = symbol_of[s];
    const uint8_t* cell = source + cells[c] * source_states + first[symbol];
    uint8_t allowed = 0;
    for (int32_t j = 0; j < number[symbol] && !allowed; ++j) allowed = cell[j];
    out[i] = allowed ? 1 : 0;
  }
}

class DeviceMaskProjectionImpl : public DeviceMaskProjection {
 public:
  bool Init(const std::vector<int32_t>& first, const std::vector<int32_t>& number, int32_t states,
            const std::vector<std::vector<int32_t>>& targets, std::string* error) {
    if (!RequireDevice(error)) return false;
    source_states_ = states;
    bool ok = first_.Upload(first) && number_.Upload(number);
    for (size_t k = 0; k < targets.size() && ok; ++k) {
      targets_.push_back(std::make_unique<Target>());
      targets_[k]->states = static_cast<int32_t>(targets[k].size());
      ok = targets_[k]->symbol_of.Upload(targets[k]);
    }
    if (!ok) *error = "cudaMalloc failed for the mask projection's maps";
    return ok;
  }

  const uint8_t* Project(int target, const uint8_t* source, const std::vector<int64_t>& cells,
                         std::string* error) override {
    Target& t = *targets_[target];
    const int64_t count = static_cast<int64_t>(cells.size());
    if (!cells_.Upload(cells) || !t.out.Grow(size_t(count) * t.states + 1)) {
      *error = "cudaMalloc failed for a projected mask";
      return nullptr;
    }
    const int64_t total = count * t.states;
    if (total > 0) {
      const int threads = 256;
      const int blocks =
          static_cast<int>(std::min<int64_t>((total + threads - 1) / threads, 65535));
      ProjectKernel<<<blocks, threads>>>(source, source_states_, cells_.get(), count,
                                         t.symbol_of.get(), t.states, first_.get(), number_.get(),
                                         t.out.get());
    }
    const cudaError_t status = cudaDeviceSynchronize();
    const cudaError_t last = cudaGetLastError();
    if (status != cudaSuccess || last != cudaSuccess) {
      *error = std::string("CUDA error projecting a mask: ") +
               cudaGetErrorString(status != cudaSuccess ? status : last);
      return nullptr;
    }
    return t.out.get();
  }

 private:
  struct Target {
    int32_t states = 0;
    DeviceArray<int32_t> symbol_of;
    DeviceArray<uint8_t> out;
  };
  int32_t source_states_ = 0;
  DeviceArray<int32_t> first_, number_;
  DeviceArray<int64_t> cells_;
  std::vector<std::unique_ptr<Target>> targets_;
};

}  // namespace

std::unique_ptr<DeviceMaskProjection> DeviceMaskProjection::Create(
    const std::vector<int32_t>& source_first_state,
    const std::vector<int32_t>& source_num_substates, int32_t source_states,
    const std::vector<std::vector<int32_t>>& targets, std::string* error) {
  auto projection = std::make_unique<DeviceMaskProjectionImpl>();
  if (!projection->Init(source_first_state, source_num_substates, source_states, targets, error)) {
    return nullptr;
  }
  return projection;
}

}  // namespace cky::cuda
