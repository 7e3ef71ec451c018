// The binary grammar cache (grammar_io/berkeley_model.h, ReadModelCache: "CKYMODEL" files).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "grammar_io/berkeley_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = cky::fuzz::WriteScratchFile(
      "model.ckybin", std::string_view(reinterpret_cast<const char*>(data), size));
  auto model = cky::ReadModelCache(path);
  (void)model.ok();
  return 0;
}
