// racecheck_probe: a known shared-memory race in one chosen launch, for checking which launches
// `compute-sanitizer --tool racecheck --kernel-name ... --launch-skip S --launch-count C` checks.
// On the H200 (compute-sanitizer 2025.3.1) the skip and the count run over every kernel's launches
// and the filter picks among them, although the tool's help says they count filtered launches only
// (bench/RESULTS-LOG.md, 2026-11-28); scripts/gpu-sanitize relies on it and checks it with this first.
//
//   racecheck_probe LAUNCHES RACING
//
// Launches RacecheckProbeKernel LAUNCHES times, each after two launches of a decoy kernel that the
// filter kns=RacecheckProbe does not match; only launch RACING (from 0) races. Racecheck reports a
// hazard exactly when it checks that launch. Exit status 0 when every launch ran, 2 on bad
// arguments, 1 on a CUDA error.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace {

// Warp 1 reads what warp 0 wrote to shared memory: ordered by the barrier, a read-after-write
// hazard without it. `race` is the same for the whole block, so the barrier is legal either way.
__global__ void RacecheckProbeKernel(int race, int* out) {
  __shared__ int cell;
  if (threadIdx.x == 0) cell = static_cast<int>(blockIdx.x) + 1;
  if (!race) __syncthreads();
  if (threadIdx.x == 32) out[blockIdx.x] = cell;
}

// Not matched by the filter: uses shared memory correctly, so that a checked decoy reports nothing.
__global__ void DecoyKernel(int* out) {
  __shared__ int cell;
  if (threadIdx.x == 0) cell = 7;
  __syncthreads();
  if (threadIdx.x == 32) out[blockIdx.x] += cell;
}

bool Check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return true;
  std::fprintf(stderr, "racecheck_probe: %s: %s\n", what, cudaGetErrorString(error));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: racecheck_probe LAUNCHES RACING\n");
    return 2;
  }
  const long launches = std::strtol(argv[1], nullptr, 10);
  const long racing = std::strtol(argv[2], nullptr, 10);
  if (launches < 1 || racing < 0 || racing >= launches) {
    std::fprintf(stderr, "racecheck_probe: need 0 <= RACING < LAUNCHES\n");
    return 2;
  }
  int* out = nullptr;
  if (!Check(cudaMalloc(&out, 2 * sizeof(int)), "cudaMalloc")) return 1;
  for (long i = 0; i < launches; ++i) {
    DecoyKernel<<<2, 64>>>(out);
    DecoyKernel<<<2, 64>>>(out);
    RacecheckProbeKernel<<<2, 64>>>(i == racing ? 1 : 0, out);
    if (!Check(cudaGetLastError(), "launch")) return 1;
  }
  if (!Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) return 1;
  std::printf("racecheck_probe: %ld launches, launch %ld raced\n", launches, racing);
  return Check(cudaFree(out), "cudaFree") ? 0 : 1;
}
