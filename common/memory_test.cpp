#include "common/memory.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "common/test_limits.h"

namespace cky {
namespace {

TEST(MemoryTest, SomeMemoryIsAvailable) { EXPECT_GT(AvailableMemoryBytes(), 1 << 20); }

TEST(MemoryTest, AnAddressSpaceLimitIsCounted) {
  if (kAddressSanitizer) GTEST_SKIP() << "no address-space limit under AddressSanitizer";
  // `ulimit -v`: the reviewer's limit under which a 5,000-word sentence ended the whole run.
  auto child = [] {
    LimitAddressSpaceToCurrentPlus(200 << 20);
    const int64_t available = AvailableMemoryBytes();
    std::exit(available > (100 << 20) && available <= (200 << 20) ? 0 : 1);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
}

TEST(MemoryTest, FormatsBytes) {
  EXPECT_EQ(FormatBytes(93.14e9), "93.1 GB");
  EXPECT_EQ(FormatBytes(512e6), "512 MB");
  EXPECT_EQ(FormatBytes(10), "1 MB");
}

}  // namespace
}  // namespace cky
