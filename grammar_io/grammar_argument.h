// The one meaning of a command's -g/--grammar argument, for every `cky` command and benchmark:
// empty = the built-in grammar (grammar_io/default_grammar.h); otherwise whatever
// LoadBerkeleyModel reads: a Berkeley .gr file, a text-export PREFIX (WriteGrammarToTextFile or
// DumpGrammar, plain or gzipped) or a .ckybin cache. `cky parse` also takes products of grammars
// (parser/product.h): a product file (grammar_io/product_grammar.h), "builtin-product" (the
// built-in product) or several -g values.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "grammar_io/berkeley_model.h"
#include "grammar_io/product_grammar.h"

namespace cky {

struct GrammarArgumentOptions {
  // Binary rules with a smaller probability are dropped. Negative: what the Berkeley parser does
  // for the format, 1e-10 for a .gr file, 0 (keep every rule) otherwise.
  double min_rule_prob = -1.0;
  // Read and refresh the binary cache for text exports (LoadOptions::use_cache).
  bool use_cache = true;
  // Called with the path of a cache file after it was written (LoadOptions::on_cache_written).
  std::function<void(const std::string& cache_path)> on_cache_written;
  // Called with what went wrong with the cache (LoadOptions::on_cache_warning).
  std::function<void(const std::string& message)> on_cache_warning;
  // Read a .ckybin of the previous format, which has no checksum (LoadOptions).
  bool unchecked_version_5 = false;
};

// The LoadOptions that `argument` is loaded with (min_rule_prob resolved for its format).
LoadOptions GrammarArgumentLoadOptions(const std::string& argument,
                                       const GrammarArgumentOptions& options);

// Loads the grammar that `argument` names (see above). A product (a product file or
// "builtin-product") is an error that says so: only products' readers below take them.
StatusOr<BerkeleyModel> LoadGrammarArgument(const std::string& argument,
                                            const GrammarArgumentOptions& options = {});

// The -g value that names the built-in product grammar (grammar_io/default_grammar.h). A file of
// that name is not read: the name is reserved.
inline constexpr const char* kBuiltinProductArgument = "builtin-product";

// Whether the -g values `arguments` name a product of grammars: several values, "builtin-product",
// or a product file.
bool GrammarArgumentsAreProduct(std::span<const std::string> arguments);

// The grammars of a product, in order: each argument's grammars (a product file's or the built-in
// product's members in their order; any other argument one grammar, loaded as LoadGrammarArgument
// loads it), labelled "ARGUMENT" or "ARGUMENT: LABEL" for a product's member.
StatusOr<std::vector<ProductGrammarMember>> LoadProductGrammarArguments(
    std::span<const std::string> arguments, const GrammarArgumentOptions& options = {});

// How logs name the grammar: "(built-in)" for an empty argument, "(built-in product)" for
// "builtin-product", else the argument.
std::string GrammarArgumentName(const std::string& argument);

}  // namespace cky
