#include "grammar_io/grammar_argument.h"

#include "grammar_io/default_grammar.h"

namespace cky {

LoadOptions GrammarArgumentLoadOptions(const std::string& argument,
                                       const GrammarArgumentOptions& options) {
  LoadOptions load;
  load.min_binary_prob = options.min_rule_prob;
  if (options.min_rule_prob < 0) {
    const bool berkeley_gr = DetectGrammarFormat(argument) == GrammarFormat::kJavaSerialized;
    load.min_binary_prob = berkeley_gr ? 1e-10 : 0.0;
  }
  load.use_cache = options.use_cache;
  load.on_cache_written = options.on_cache_written;
  load.on_cache_warning = options.on_cache_warning;
  load.unchecked_version_5 = options.unchecked_version_5;
  return load;
}

StatusOr<BerkeleyModel> LoadGrammarArgument(const std::string& argument,
                                            const GrammarArgumentOptions& options) {
  const LoadOptions load = GrammarArgumentLoadOptions(argument, options);
  // The built-in grammar is a binary cache: like a .ckybin file, it is read as it is.
  return argument.empty() ? LoadDefaultGrammar() : LoadBerkeleyModel(argument, load);
}

std::string GrammarArgumentName(const std::string& argument) {
  return argument.empty() ? "(built-in)" : argument;
}

}  // namespace cky
