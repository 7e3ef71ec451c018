// WriteGrammarToTextFile exports (grammar_io/berkeley_model.h): PREFIX.grammar, .lexicon, .splits
// and .words, joined in one input with "\n%%\n" (fuzz/fuzz_util.h); absent parts are absent files.
#include <cstddef>
#include <cstdint>
#include <sstream>

#include "fuzz/fuzz_util.h"
#include "grammar_io/berkeley_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = cky::fuzz::SplitParts(data, size, 4);
  std::istringstream grammar(parts[0]);
  std::istringstream lexicon(parts.size() > 1 ? parts[1] : "");
  std::istringstream splits(parts.size() > 2 ? parts[2] : "");
  std::istringstream words(parts.size() > 3 ? parts[3] : "");
  auto model =
      cky::ReadWriteGrammarTextFromStreams(grammar, lexicon, parts.size() > 2 ? &splits : nullptr,
                                           parts.size() > 3 ? &words : nullptr, "fuzz");
  (void)model.ok();
  return 0;
}
