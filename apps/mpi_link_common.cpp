// The parts of apps/mpi_link.h that need no MPI: the message encoding.
#include <cstdint>
#include <cstring>

#include "apps/mpi_link.h"

namespace cky::apps {

std::string PackStrings(const std::vector<std::string>& fields) {
  std::string out;
  auto put = [&](uint64_t n) { out.append(reinterpret_cast<const char*>(&n), sizeof n); };
  put(fields.size());
  for (const std::string& f : fields) {
    put(f.size());
    out += f;
  }
  return out;
}

bool UnpackStrings(const std::string& buffer, std::vector<std::string>* fields) {
  fields->clear();
  size_t at = 0;
  auto get = [&](uint64_t* n) {
    if (buffer.size() - at < sizeof *n) return false;
    std::memcpy(n, buffer.data() + at, sizeof *n);
    at += sizeof *n;
    return true;
  };
  uint64_t count = 0;
  if (!get(&count) || count > buffer.size()) return false;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t length = 0;
    if (!get(&length) || length > buffer.size() - at) return false;
    fields->push_back(buffer.substr(at, length));
    at += length;
  }
  return at == buffer.size();
}

}  // namespace cky::apps
