// Raw text (text/tokenizer.h): paragraphs, ICU sentence splitting and PTB tokenization, with
// and without hyphen splitting; any bytes, invalid UTF-8 included.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static cky::Tokenizer plain = cky::Tokenizer::Create({}).value();
  static cky::Tokenizer hyphens =
      cky::Tokenizer::Create({.ptb_brackets = false, .split_hyphens = true}).value();
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::istringstream in(text);
  cky::ParagraphReader paragraphs(in);
  std::string paragraph;
  while (paragraphs.Next(&paragraph)) {
    (void)plain.SplitAndTokenize(paragraph);
    (void)hyphens.SplitAndTokenize(paragraph);
  }
  (void)cky::SplitParagraphs(text);
  return 0;
}
