// DumpGrammar exports (grammar_io/berkeley_model.h): PREFIX.binary, .unary, .lexicon, .numstates,
// .hierarchy and .words, joined in one input with "\n%%\n" (fuzz/fuzz_util.h) and written to
// scratch files, since the reader takes a prefix.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "grammar_io/berkeley_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const kSuffixes[] = {"binary",    "unary",     "lexicon",
                                          "numstates", "hierarchy", "words"};
  const auto parts = cky::fuzz::SplitParts(data, size, 6);
  for (size_t i = 0; i < 6; ++i)
    cky::fuzz::WriteScratchFile(std::string("dump.") + kSuffixes[i],
                                i < parts.size() ? parts[i] : "");
  auto model = cky::ReadDumpGrammarFiles(cky::fuzz::ScratchDir() + "/dump", {.use_cache = false});
  (void)model.ok();
  return 0;
}
