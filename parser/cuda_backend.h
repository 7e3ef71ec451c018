// The CUDA Viterbi backend, adapted to parser/backend.h from cuda/'s plain-C++ interface.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "grammar_io/grammar.h"
#include "parser/backend.h"

namespace cky {

// True when this build has the CUDA backend and a device is present.
bool CudaBackendAvailable();

// The CUDA backend running kernel variant `kernel` ("" = the default, fastest).
StatusOr<std::unique_ptr<ViterbiBackend>> MakeCudaBackend(const Grammar& grammar,
                                                          const std::string& kernel);

}  // namespace cky
