// The binary grammar cache (grammar_io/berkeley_model.h, ReadModelCache: "CKYMODEL" files). Each
// input is read twice: as a file, where the checksum turns nearly every change away (and version
// 5, which has none, is read as `cky convert` reads it), and with a valid checksum appended, so
// that damage the checksum would let through (none, unless a hash collides) reaches the
// structural checks behind it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "grammar_io/berkeley_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string path = cky::fuzz::WriteScratchFile("model.ckybin", bytes);
  auto model = cky::ReadModelCache(path, /*unchecked_version_5=*/true);
  (void)model.ok();
  auto checked =
      cky::ReadModelCacheFromMemory(cky::AppendCacheChecksum(std::string(bytes)), "model.ckybin");
  (void)checked.ok();
  return 0;
}
