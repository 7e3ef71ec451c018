// How much more memory this process can have, so that work too large for it (the charts of a
// 5,000-word sentence) is refused before it is allocated rather than ended by a failed allocation
// or the kernel's out-of-memory killer.
#pragma once

#include <cstdint>
#include <string>

namespace cky {

// The smallest of: the memory the system has available (MemAvailable in /proc/meminfo), what this
// process's cgroup limit leaves (a container's memory.max), and what the address-space and data
// limits leave (ulimit -v, ulimit -d). INT64_MAX where none of these is known (not Linux).
int64_t AvailableMemoryBytes();

// "93.1 GB", "512 MB": a byte count for messages.
std::string FormatBytes(double bytes);

}  // namespace cky
