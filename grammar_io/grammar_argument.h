// The one meaning of a command's -g/--grammar argument, for every `cky` command and benchmark:
// empty = the built-in grammar (grammar_io/default_grammar.h); otherwise whatever
// LoadBerkeleyModel reads: a Berkeley .gr file, a text-export PREFIX (WriteGrammarToTextFile or
// DumpGrammar, plain or gzipped) or a .ckybin cache.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"
#include "grammar_io/berkeley_model.h"

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

// Loads the grammar that `argument` names (see above).
StatusOr<BerkeleyModel> LoadGrammarArgument(const std::string& argument,
                                            const GrammarArgumentOptions& options = {});

// How logs name the grammar: "(built-in)" for an empty argument, else the argument.
std::string GrammarArgumentName(const std::string& argument);

}  // namespace cky
