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
  if (argument == kBuiltinProductArgument || IsProductGrammarFile(argument)) {
    return Status::Error(GrammarArgumentName(argument) +
                         " is a product of grammars, and this reads one grammar (`cky parse` "
                         "decodes products)");
  }
  const LoadOptions load = GrammarArgumentLoadOptions(argument, options);
  // The built-in grammar is a binary cache: like a .ckybin file, it is read as it is.
  return argument.empty() ? LoadDefaultGrammar() : LoadBerkeleyModel(argument, load);
}

bool GrammarArgumentsAreProduct(std::span<const std::string> arguments) {
  return arguments.size() > 1 ||
         (arguments.size() == 1 &&
          (arguments[0] == kBuiltinProductArgument || IsProductGrammarFile(arguments[0])));
}

StatusOr<std::vector<ProductGrammarMember>> LoadProductGrammarArguments(
    std::span<const std::string> arguments, const GrammarArgumentOptions& options) {
  std::vector<ProductGrammarMember> members;
  for (const std::string& argument : arguments) {
    const std::string name = GrammarArgumentName(argument);
    if (argument == kBuiltinProductArgument || IsProductGrammarFile(argument)) {
      auto product = argument == kBuiltinProductArgument ? LoadDefaultProductGrammar()
                                                         : ReadProductGrammar(argument);
      if (!product.ok()) return product.status();
      for (ProductGrammarMember& member : *product) {
        members.push_back({name + ": " + member.label, std::move(member.model)});
      }
      continue;
    }
    auto model = LoadGrammarArgument(argument, options);
    if (!model.ok()) return model.status();
    members.push_back({name, std::move(*model)});
  }
  if (members.empty()) return Status::Error("a product needs at least one grammar");
  return members;
}

std::string GrammarArgumentName(const std::string& argument) {
  if (argument == kBuiltinProductArgument) return "(built-in product)";
  return argument.empty() ? "(built-in)" : argument;
}

}  // namespace cky
