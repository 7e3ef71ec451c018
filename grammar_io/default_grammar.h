// The default grammar built into the cky binary: a latent-annotation grammar trained by `cky train
// --split-merge 4` on the GUM treebank's CC-BY / CC-BY-SA train documents (data/README.md says how
// it is rebuilt and how it scores). It is embedded as our binary cache, gzipped
// (data/default_grammar/gum.ckybin.gz), which carries the lexicon's counts, so that words score
// exactly as a Berkeley .gr lexicon scores them.
#pragma once

#include "common/status.h"
#include "grammar_io/berkeley_model.h"
#include "grammar_io/product_grammar.h"

namespace cky {

// Decompresses and reads the embedded grammar. Like a .ckybin file, it is read as it is (no rule is
// dropped: LoadOptions do not apply).
StatusOr<BerkeleyModel> LoadDefaultGrammar();

// Decompresses and reads the embedded product grammar (grammar_io/product_grammar.h): K grammars
// trained as the built-in one, with different seeds (data/README.md), `-g builtin-product`.
StatusOr<std::vector<ProductGrammarMember>> LoadDefaultProductGrammar();

// What the embedded grammar is, for logs and --help texts.
inline constexpr const char* kDefaultGrammarDescription =
    "the built-in GUM grammar (4 split-merge cycles, CC-BY / CC-BY-SA GUM train documents)";

}  // namespace cky
