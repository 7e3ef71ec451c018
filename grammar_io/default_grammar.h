// The default grammar built into the cky binary: a markovized PCFG trained by `cky train` on the
// GUM treebank's CC-BY / CC-BY-SA train documents (data/README.md says how it is rebuilt). Its four
// WriteGrammarToTextFile parts (data/default_grammar/gum.{grammar,lexicon,splits,words}.gz) are
// compiled in as byte arrays and read from memory.
#pragma once

#include "common/status.h"
#include "grammar_io/berkeley_model.h"

namespace cky {

// Decompresses and reads the embedded grammar (about a second; no cache is used).
StatusOr<BerkeleyModel> LoadDefaultGrammar(const LoadOptions& options = {});

// What the embedded grammar is, for logs and --help texts.
inline constexpr const char* kDefaultGrammarDescription =
    "the built-in GUM grammar (plain markovized PCFG, CC-BY / CC-BY-SA GUM train documents)";

}  // namespace cky
