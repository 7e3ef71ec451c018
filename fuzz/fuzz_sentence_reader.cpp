// The command line's sentence input: a file, plain or gzipped (common/input_file.h), read as one
// tokenized sentence a line (common/sentence_file.h), blank lines kept and skipped.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/sentence_file.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = cky::fuzz::WriteScratchFile(
      "sentences.txt", std::string_view(reinterpret_cast<const char*>(data), size));
  auto kept = cky::ReadTokenizedSentences(path, true);
  auto skipped = cky::ReadTokenizedSentences(path, false);
  (void)kept.ok();
  (void)skipped.ok();
  return 0;
}
