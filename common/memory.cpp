#include "common/memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace cky {
namespace {

constexpr int64_t kUnknown = std::numeric_limits<int64_t>::max();

// The number a one-number file holds ("max" and unreadable files: kUnknown).
int64_t ReadNumber(const std::string& path) {
  std::ifstream in(path);
  int64_t value = 0;
  return in >> value ? value : kUnknown;
}

// What the cgroup (v2, else v1) of this process may still allocate.
int64_t CgroupAvailable() {
  std::ifstream cgroups("/proc/self/cgroup");
  std::string line, v2_path;
  while (std::getline(cgroups, line)) {
    if (line.rfind("0::", 0) == 0) v2_path = line.substr(3);
  }
  for (const std::string& dir : {"/sys/fs/cgroup" + v2_path, std::string("/sys/fs/cgroup")}) {
    const int64_t limit = ReadNumber(dir + "/memory.max");
    if (limit != kUnknown) return limit - std::min(limit, ReadNumber(dir + "/memory.current"));
  }
  const int64_t limit = ReadNumber("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  if (limit == kUnknown || limit >= (int64_t(1) << 60)) return kUnknown;  // v1's "no limit"
  return limit - std::min(limit, ReadNumber("/sys/fs/cgroup/memory/memory.usage_in_bytes"));
}

// What an rlimit leaves above `used` bytes.
int64_t RlimitAvailable(int resource, int64_t used) {
  rlimit limit{};
  if (::getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kUnknown;
  const int64_t cap =
      static_cast<int64_t>(std::min<rlim_t>(limit.rlim_cur, static_cast<rlim_t>(kUnknown)));
  return cap - std::min(cap, used);
}

}  // namespace

int64_t AvailableMemoryBytes() {
  int64_t available = kUnknown;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream fields(line.substr(13));
      int64_t kilobytes = 0;
      if (fields >> kilobytes) available = std::min(available, kilobytes * 1024);
    }
  }
  available = std::min(available, CgroupAvailable());
  // /proc/self/statm: total program size, then ..., then data + stack (6th), in pages.
  int64_t size_pages = 0, skip = 0, data_pages = 0;
  std::ifstream statm("/proc/self/statm");
  if (statm >> size_pages >> skip >> skip >> skip >> skip >> data_pages) {
    const int64_t page = ::sysconf(_SC_PAGESIZE);
    available = std::min(available, RlimitAvailable(RLIMIT_AS, size_pages * page));
    available = std::min(available, RlimitAvailable(RLIMIT_DATA, data_pages * page));
  }
  return available;
}

std::string FormatBytes(double bytes) {
  char text[32];
  if (bytes >= 1e9) {
    std::snprintf(text, sizeof(text), "%.1f GB", bytes / 1e9);
  } else {
    std::snprintf(text, sizeof(text), "%.0f MB", std::max(1.0, bytes / 1e6));
  }
  return text;
}

}  // namespace cky
