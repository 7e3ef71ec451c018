#include "cuda/common/fault_injection.h"

#include <algorithm>
#include <cstdlib>

namespace cky::cuda {
namespace {

constexpr int64_t kMaxNumber = 1000000000;

// A decimal number in [1, kMaxNumber], nothing else.
bool ParseNumber(const std::string& text, int64_t* value) {
  if (text.empty() || text.size() > 10) return false;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v < 1 || v > kMaxNumber) return false;
  *value = v;
  return true;
}

}  // namespace

bool FaultInjector::Parse(const std::string& spec, FaultInjector* out, std::string* error) {
  FaultInjector result;
  size_t begin = 0;
  while (begin <= spec.size() && !spec.empty()) {
    size_t end = spec.find(',', begin);
    if (end == std::string::npos) end = spec.size();
    const std::string part = spec.substr(begin, end - begin);
    const size_t colon = part.find(':');
    int64_t number = 0;
    if (colon == std::string::npos || !ParseNumber(part.substr(colon + 1), &number)) {
      *error = std::string(kEnvironmentVariable) + ": '" + part +
               "' is not KIND:N with N a positive number (KIND malloc, launch or length)";
      return false;
    }
    const std::string kind = part.substr(0, colon);
    if (kind == "malloc") {
      result.malloc_.push_back(number);
    } else if (kind == "launch") {
      result.launch_.push_back(number);
    } else if (kind == "length") {
      result.lengths_.push_back(static_cast<int32_t>(number));
    } else {
      *error = std::string(kEnvironmentVariable) + ": unknown fault kind '" + kind +
               "' (malloc, launch or length)";
      return false;
    }
    begin = end + 1;
  }
  *out = std::move(result);
  return true;
}

bool FaultInjector::FromEnvironment(FaultInjector* out, std::string* error) {
  const char* value = std::getenv(kEnvironmentVariable);
  return Parse(value ? value : "", out, error);
}

bool FaultInjector::FailAllocation() {
  if (malloc_.empty()) return false;
  ++allocations_;
  return std::find(malloc_.begin(), malloc_.end(), allocations_) != malloc_.end();
}

bool FaultInjector::FailLaunch(const std::vector<int32_t>& lengths) {
  if (launch_.empty() && lengths_.empty()) return false;
  ++launches_;
  if (std::find(launch_.begin(), launch_.end(), launches_) != launch_.end()) return true;
  for (int32_t n : lengths)
    if (std::find(lengths_.begin(), lengths_.end(), n) != lengths_.end()) return true;
  return false;
}

}  // namespace cky::cuda
