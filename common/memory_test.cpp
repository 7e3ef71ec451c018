#include "common/memory.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace cky {
namespace {

#if defined(__SANITIZE_ADDRESS__)
#define CKY_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CKY_ADDRESS_SANITIZER 1
#endif
#endif

TEST(MemoryTest, SomeMemoryIsAvailable) { EXPECT_GT(AvailableMemoryBytes(), 1 << 20); }

TEST(MemoryTest, AnAddressSpaceLimitIsCounted) {
#ifdef CKY_ADDRESS_SANITIZER
  GTEST_SKIP() << "an address-space limit cannot coexist with AddressSanitizer's shadow memory";
#else
  // `ulimit -v`: the reviewer's limit under which a 5,000-word sentence ended the whole run.
  auto child = [] {
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t used = static_cast<rlim_t>(pages) * ::sysconf(_SC_PAGESIZE);
    const rlimit limit{used + (200 << 20), used + (200 << 20)};
    ::setrlimit(RLIMIT_AS, &limit);
    const int64_t available = AvailableMemoryBytes();
    std::exit(available > (100 << 20) && available <= (200 << 20) ? 0 : 1);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
#endif
}

TEST(MemoryTest, FormatsBytes) {
  EXPECT_EQ(FormatBytes(93.14e9), "93.1 GB");
  EXPECT_EQ(FormatBytes(512e6), "512 MB");
  EXPECT_EQ(FormatBytes(10), "1 MB");
}

}  // namespace
}  // namespace cky
