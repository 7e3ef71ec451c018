// The kernel registry (variants.h): every name `--kernel` took before the registry still names a
// variant, the default first and the only production one, each with a description; and in CUDA
// builds every registered name reaches a kernel family (DeviceViterbi::Create resolves the name
// before it looks for a device, so this runs without one).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "cuda/common/device.h"
#include "cuda/viterbi/viterbi.h"

namespace cky::cuda {
namespace {

// The names scripts, benchmarks and bench/RESULTS.md use.
const std::vector<std::string> kKnownNames = {"pair-seg-g8-a4-m-rtgakuopln",
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

TEST(ViterbiVariantsTest, KeepsEveryKnownNameWithTheDefaultFirst) {
  const std::vector<std::string> names = ViterbiKernelNames();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()),
            std::set<std::string>(kKnownNames.begin(), kKnownNames.end()));
  EXPECT_EQ(names.size(), kKnownNames.size()) << "a name is registered twice";
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "pair-seg-g8-a4-m-rtgakuopln");
}

TEST(ViterbiVariantsTest, OnlyTheDefaultIsProductionAndEveryVariantIsDescribed) {
  const std::vector<ViterbiKernelInfo>& kernels = ViterbiKernels();
  ASSERT_FALSE(kernels.empty());
  EXPECT_TRUE(kernels.front().production);
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_EQ(kernels[i].production, i == 0) << kernels[i].name;
    EXPECT_FALSE(kernels[i].description.empty()) << kernels[i].name;
    EXPECT_EQ(kernels[i].description.find('\n'), std::string::npos) << kernels[i].name;
  }
}

TEST(ViterbiVariantsTest, FamiliesFollowTheNames) {
  for (const ViterbiKernelInfo& k : ViterbiKernels()) {
    const auto starts = [&](const char* prefix) { return k.name.rfind(prefix, 0) == 0; };
    const ViterbiKernelFamily expected = starts("pair-seg")     ? ViterbiKernelFamily::kPairSeg
                                         : starts("pair-fused") ? ViterbiKernelFamily::kPairFused
                                         : starts("pair-acc")   ? ViterbiKernelFamily::kPairAcc
                                                                : ViterbiKernelFamily::kPaper;
    EXPECT_EQ(k.family, expected) << k.name;
  }
}

// One state, one symbol, no rules: enough for Create to resolve the name (and, with a device, to
// set the variant up).
struct TinyGrammar {
  int32_t state_symbol[1] = {0};
  int32_t symbol_first_state[1] = {0};
  int32_t symbol_num_substates[1] = {1};
  int32_t begin[2] = {0, 0};
  GrammarView arrays() const {
    GrammarView g;
    g.num_states = 1;
    g.num_symbols = 1;
    g.state_symbol = state_symbol;
    g.symbol_first_state = symbol_first_state;
    g.symbol_num_substates = symbol_num_substates;
    g.binary_parent_begin = begin;
    g.unary_parent_begin = begin;
    return g;
  }
};

TEST(ViterbiVariantsTest, EveryRegisteredNameReachesAKernelFamily) {
  if (!BuiltWithCuda()) GTEST_SKIP() << "this build has no CUDA support";
  const TinyGrammar tiny;
  for (const std::string& name : ViterbiKernelNames()) {
    std::string error;
    auto device = DeviceViterbi::Create(tiny.arrays(), {.kernel = name}, &error);
    EXPECT_EQ(error.find("unknown CUDA kernel"), std::string::npos) << name << ": " << error;
    if (device) EXPECT_EQ(device->kernel(), name);
  }
  std::string error;
  EXPECT_EQ(DeviceViterbi::Create(tiny.arrays(), {.kernel = "no-such-kernel"}, &error), nullptr);
  EXPECT_NE(error.find("unknown CUDA kernel 'no-such-kernel'"), std::string::npos) << error;
}

}  // namespace
}  // namespace cky::cuda
