// CUDA-less builds: the kernel names are known, but no DeviceViterbi can be created.
#include "cuda/viterbi/viterbi.h"

namespace cky::cuda {

std::vector<std::string> ViterbiKernelNames() {
  // The same names, in the same order, as viterbi.cu's Variants().
  return {"pair-seg-g8-a4-m-rtgakuopln",
          "pair-seg-g8-a4-m-rtgaku",
          "pair-seg-g8-a4-m",
          "pair-seg-g8-a4-m-b512-o8",
          "pair-seg-g8-a4",
          "pair-seg-g8-a4-m-b512",
          "pair-seg-g8-a4-m-b512-o6",
          "pair-seg-g8-a4-m-b512-o7",
          "pair-seg-g8-a4-m-b640-o8",
          "pair-seg-g8-a4-m-p",
          "pair-seg-g8-a4-m-r",
          "pair-seg-g8-a4-m-s",
          "pair-seg-g8-a4-m-t",
          "pair-seg-g8-a4-m-rs",
          "pair-seg-g8-a4-m-rst",
          "pair-seg-g8-a4-m-rt",
          "pair-seg-g8-a4-m-rtq",
          "pair-seg-g8-a4-m-rtqw",
          "pair-seg-g8-a4-m-rtqwa",
          "pair-seg-g8-a4-m-rtqwk",
          "pair-seg-g8-a4-m-rtqwak",
          "pair-seg-g8-a4-m-rta",
          "pair-seg-g8-a4-m-rtk",
          "pair-seg-g8-a4-m-rtak",
          "pair-seg-g8-a4-m-rtg",
          "pair-seg-g8-a4-m-rtgak",
          "pair-seg-g8-a4-m-rtgak5",
          "pair-seg-g8-a4-m-rtu",
          "pair-seg-g8-a4-m-rtgakuo",
          "pair-seg-g8-a4-m-rtgakuop",
          "pair-seg-g8-a4-m-rtgakuoc",
          "pair-seg-g8-a4-m-rtgakuo5",
          "pair-seg-g8-a4-m-rtgakuol",
          "pair-seg-g8-a4-m-rtgakuo5l",
          "pair-seg-g8-a4-m-rtgakuopl",
          "pair-seg-g8-a4-m-rtgakuopn",
          "pair-seg-g8-a4-m-rtgakuo5ln",
          "pair-fused-g8-wide",
          "pair-fused-g16-wide",
          "pair-fused-g16",
          "pair-fused-g8",
          "pair-fused-g8-classes",
          "pair-fused-g4",
          "pair-acc-g8",
          "pair-acc-g16",
          "pair-seg-g8",
          "pair-seg-g8-u2",
          "pair-seg-g16",
          "pair-seg-g8-nopad",
          "pair-seg-g16-a4",
          "thread-atomic-global",
          "thread-atomic-shared",
          "block-atomic-shared",
          "block-reduce",
          "block-reduce-staged",
          "block-reduce-seq"};
}

std::unique_ptr<DeviceViterbi> DeviceViterbi::Create(const GrammarArrays&,
                                                     const DeviceViterbiOptions&,
                                                     std::string* error) {
  *error = "this build has no CUDA support";
  return nullptr;
}

}  // namespace cky::cuda
