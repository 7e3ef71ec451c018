// CNF grammars for the membership algorithms (parser/cnf_grammar.h, ParseCnfGrammar).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "membership/cnf_grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  auto grammar = cky::ParseCnfGrammar(in, "fuzz.cnf");
  (void)grammar.ok();
  return 0;
}
