// The CUDA Viterbi backend, adapted to parser/backend.h from cuda/'s plain-C++ interface
// (cuda/viterbi/viterbi.h): sentences are sorted by length and cut into batches that fit the
// device, the device computes their charts (floats), and trees are extracted on the CPU from the
// copied-back charts (parser/tree_extraction.h, relative tolerance 1e-5), on all hardware threads.
//
// Failures stay local: a batch the device cannot hold (out of memory) or that fails on the device
// (a launch error, a kernel's shared-memory limit, CKY_FAULT_INJECT: cuda/common/fault_injection.h)
// is split in halves and retried, down to single sentences; a sentence that fails on its own is
// parsed on the CPU (parser/viterbi_cpu.h) and its outcome's message says so and why (status kOk).
// Outcomes come back one per input, in input order.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "cuda/viterbi/viterbi.h"
#include "grammar_io/grammar.h"
#include "parser/backend.h"

namespace cky {

// True when this build has the CUDA backend and a device is present.
bool CudaBackendAvailable();

// The grammar's arrays as cuda/viterbi/viterbi.h takes them (views into `grammar`).
cuda::GrammarArrays CudaGrammarArrays(const Grammar& grammar);

// The kernel variants (cuda/viterbi/variants.h's registry: name, one-line description, family,
// production or research); the first is the default, the only production one.
const std::vector<cuda::ViterbiKernelInfo>& CudaKernels();
// Their names, the default first.
std::vector<std::string> CudaKernelNames();

struct CudaBackendOptions {
  std::string kernel;             // "" = the default, fastest
  size_t max_batch_bytes = 0;     // device bytes per batch; 0 = 85% of free device memory
  int max_batch_sentences = 256;  // smaller batches overlap extraction better (bench/RESULTS.md)
  int extraction_threads = 0;     // CPU threads for tree extraction; 0 = all
  // Read the trees on the device, so that only their nodes come back (cuda/viterbi/viterbi.h:
  // the same trees); false: copy the charts back and extract on the CPU (as before; the bench's
  // comparison). Device backends without it (test fakes) extract on the CPU either way.
  bool device_trees = true;
  // A sentence that fails on the device on its own (out of memory, a device error) is parsed on
  // the CPU; false: its outcome says kOutOfMemory or kFailed instead (the multi-device backend
  // then hands it, or the whole device's work, elsewhere).
  bool cpu_fallback = true;
};

// The CUDA backend running kernel variant `kernel` ("" = the default, fastest).
StatusOr<std::unique_ptr<ViterbiBackend>> MakeCudaBackend(const Grammar& grammar,
                                                          const std::string& kernel);
StatusOr<std::unique_ptr<ViterbiBackend>> MakeCudaBackend(const Grammar& grammar,
                                                          const CudaBackendOptions& options);

// The adapter over a given device (tests: a fake DeviceViterbi whose batches fail on purpose).
std::unique_ptr<ViterbiBackend> MakeCudaBackendForDevice(
    const Grammar& grammar, std::unique_ptr<cuda::DeviceViterbi> device,
    const CudaBackendOptions& options);

}  // namespace cky
