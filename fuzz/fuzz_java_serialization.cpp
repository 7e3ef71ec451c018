// Berkeley .gr files: the Java serialization reader and the model built from its object graph
// (grammar_io/java_serialization.h, grammar_io/berkeley_gr.h). Input: a decompressed stream.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "grammar_io/berkeley_gr.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view stream(reinterpret_cast<const char*>(data), size);
  auto model = cky::BerkeleyModelFromSerialization(stream, "fuzz.gr");
  (void)model.ok();
  return 0;
}
