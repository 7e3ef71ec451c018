// Fault injection for the CUDA backend's failure paths, in plain C++ (viterbi/device_viterbi.cu
// includes it).
//
// CKY_FAULT_INJECT=SPEC[,SPEC...], read when a DeviceViterbi is created (each one counts from 1):
//   malloc:N   the device allocation of the Nth batch fails, exactly as a failing cudaMalloc does
//              (the batch is reported out of memory: the caller splits it).
//   launch:N   the Nth batch makes a real invalid kernel launch (a grid of 0 blocks) before its
//              first binary launch, so the batch fails as a launch error does.
//   length:L   every batch holding a sentence of L words fails as launch:N does (a sentence that
//              fails wherever it goes: its batch-mates must still get their trees).
// Batches are counted in the order DeviceViterbi::InsideBatch is called, retries included. With
// the variable unset or empty, nothing is injected and the checks cost one branch per batch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cky::cuda {

class FaultInjector {
 public:
  // The name of the environment variable.
  static constexpr const char* kEnvironmentVariable = "CKY_FAULT_INJECT";

  // Parses a specification (see above). False, with *error naming the bad part, when it is
  // malformed: unknown kind, missing or non-positive number, numbers past 1,000,000,000.
  static bool Parse(const std::string& spec, FaultInjector* out, std::string* error);
  // Parse(getenv(kEnvironmentVariable)); an unset variable gives an empty injector.
  static bool FromEnvironment(FaultInjector* out, std::string* error);

  bool empty() const { return malloc_.empty() && launch_.empty() && lengths_.empty(); }

  // Call once per batch, in this order: the batch's allocation, then (if it was allocated) its
  // launch with the batch's sentence lengths. True when the fault is to be injected.
  bool FailAllocation();
  bool FailLaunch(const std::vector<int32_t>& lengths);

 private:
  std::vector<int64_t> malloc_, launch_;  // 1-based batch numbers
  std::vector<int32_t> lengths_;
  int64_t allocations_ = 0, launches_ = 0;
};

}  // namespace cky::cuda
