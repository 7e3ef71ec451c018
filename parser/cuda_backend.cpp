// Until the CUDA Viterbi kernels land, the CUDA backend reports itself unavailable.
#include "parser/cuda_backend.h"

namespace cky {

bool CudaBackendAvailable() { return false; }

StatusOr<std::unique_ptr<ViterbiBackend>> MakeCudaBackend(const Grammar&, const std::string&) {
  return Status::Error("the CUDA Viterbi backend is not built yet; use --backend cpu");
}

}  // namespace cky
