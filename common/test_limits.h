// Test-only: running a piece of a test under a resource limit, in a child process (a gtest death
// test) so that the limit ends with it.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>

namespace cky {

// AddressSanitizer reserves terabytes of address space for its shadow memory: an address-space
// limit cannot be tested under it.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// Limits the process's address space (ulimit -v) to what it uses now plus `extra` bytes.
inline void LimitAddressSpaceToCurrentPlus(int64_t extra) {
  long pages = 0;
  std::ifstream("/proc/self/statm") >> pages;
  const rlim_t limit = static_cast<rlim_t>(pages) * ::sysconf(_SC_PAGESIZE) + extra;
  const rlimit both{limit, limit};
  ::setrlimit(RLIMIT_AS, &both);
}

}  // namespace cky
