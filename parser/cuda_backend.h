// The CUDA Viterbi backends on parser/device_backend.h's skeleton (batches, retries, the CPU
// fallback, background extraction):
//   exact:  cuda/viterbi/viterbi.h's inside pass (floats; the kernel variant `kernel`), the best
//           trees read on the device (only their nodes come back), or with device_trees false the
//           charts copied back and extracted on host threads (parser/tree_extraction.h, relative
//           tolerance 1e-5); CPU fallback: the fast CPU Viterbi;
//   pruned: parser/cuda_pruner.h's pre-parses and its fine masked inside pass in doubles (the
//           CPU pruned backend's charts bit for bit), trees extracted on host threads; a sentence
//           pruning lost is parsed by the exact CUDA Viterbi backend; CPU fallback: the CPU pruned
//           backend, sharing the pruner.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "cuda/viterbi/viterbi.h"
#include "grammar_io/grammar.h"
#include "parser/backend.h"
#include "parser/coarse_to_fine.h"
#include "parser/cuda_grammar_view.h"
#include "parser/cuda_pruner.h"
#include "parser/device_backend.h"

namespace cky {

// True when this build has the CUDA backend and a device is present.
bool CudaBackendAvailable();

// The kernel variants (cuda/viterbi/variants.h's registry: name, one-line description, family,
// production or research); the first is the default, the only production one.
const std::vector<cuda::ViterbiKernelInfo>& CudaKernels();
// Their names, the default first.
std::vector<std::string> CudaKernelNames();

struct CudaBackendOptions {
  std::string kernel;  // "" = the default, fastest
  DeviceBackendOptions device;
  // Read the trees on the device, so that only their nodes come back (the same trees); false:
  // copy the charts back and extract on the CPU (the bench's comparison). Device objects without
  // it (test fakes) extract on the CPU either way.
  bool device_trees = true;
};

StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const Grammar& grammar,
                                                   const CudaBackendOptions& options = {});
// The adapter over a given device (tests: a fake DeviceViterbi whose batches fail on purpose).
std::unique_ptr<Backend> MakeCudaBackendForDevice(const Grammar& grammar,
                                                  std::unique_ptr<cuda::DeviceViterbi> device,
                                                  const CudaBackendOptions& options);

// Pruned Viterbi on the device (see above). options.max_batch_bytes: the pruner's budget.
StatusOr<std::unique_ptr<Backend>> MakeCudaPrunedBackend(const Grammar& grammar,
                                                         const PruningOptions& pruning,
                                                         const CudaPrunerOptions& options = {});

}  // namespace cky
