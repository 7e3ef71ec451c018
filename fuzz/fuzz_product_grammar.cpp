// Product grammar files (grammar_io/product_grammar.h, ReadProductGrammar: "CKYPROD" files of K
// .ckybin members, each with a label, a size and a CRC-32).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "grammar_io/product_grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto members = cky::ReadProductGrammarFromMemory(bytes, "fuzz.ckyprod");
  (void)members.ok();
  const std::string path = cky::fuzz::WriteScratchFile("product.ckyprod", bytes);
  (void)cky::IsProductGrammarFile(path);
  auto from_file = cky::ReadProductGrammar(path);
  (void)from_file.ok();
  return 0;
}
