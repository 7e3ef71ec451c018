// cky convert: a grammar in any form we read -> our binary cache (or Berkeley text files).
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>

#include "apps/command_util.h"
#include "apps/commands.h"
#include "grammar_io/grammar_argument.h"
#include "lexicon/berkeley_lexicon.h"

namespace cky::apps {

void AddConvertCommand(CLI::App& app) {
  struct Args {
    std::string grammar;
    std::string output;
    double min_rule_prob = -1.0;  // < 0: what `cky parse -g` uses, 1e-10 for a .gr file, else 0
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Convert a grammar to cky's binary cache (.ckybin), which loads in a fraction of the time "
      "of the text export, or to Berkeley's text export (WriteGrammarToTextFile form). "
      "`cky parse --grammar FILE.ckybin` reads the cache.");
  Shown(cmd->add_option("GRAMMAR,-g,--grammar", args->grammar,
                        "Grammar to read: a Berkeley .gr file (the parser's own gzipped Java "
                        "serialization), a Berkeley text export PREFIX (WriteGrammarToTextFile or "
                        "DumpGrammar, plain or gzipped) or a .ckybin file")
            ->required(),
        "FILE|PREFIX");
  Shown(cmd->add_option(
               "-o,--output", args->output,
               "Output: a name ending in .ckybin writes the binary cache (with a .gr's lexicon "
               "counts, so scores stay exact); any other name is a PREFIX for the text export "
               "PREFIX.grammar, PREFIX.lexicon, PREFIX.splits and PREFIX.words")
            ->required(),
        "FILE|PREFIX");
  Shown(
      cmd->add_option("--min-rule-prob", args->min_rule_prob,
                      "Drop binary rules with a smaller probability; 0 keeps every rule. Default: "
                      "what `cky parse --grammar` does with the same grammar, 1e-10 for a .gr file "
                      "(as the Berkeley parser), 0 for text exports and caches")
          ->check(Between(0.0, 1.0)),
      "P");
  cmd->callback([args] {
    const auto start = std::chrono::steady_clock::now();
    GrammarArgumentOptions options =
        GrammarOptionsForCommand(args->min_rule_prob, /*use_cache=*/false);
    options.unchecked_version_5 = true;  // so that a cache of the format before checksums is
                                         // rewritten with one
    auto model = LoadGrammarArgument(args->grammar, options);
    if (!model.ok()) {
      spdlog::error("{}", model.status().message());
      throw CLI::RuntimeError(1);
    }
    const bool cache = args->output.size() >= 7 &&
                       args->output.compare(args->output.size() - 7, 7, ".ckybin") == 0;
    if (!cache && model->lexicon_counts) {
      // The text export's lexicon rows: scores of seen (tag, word) and (tag, signature) pairs.
      auto rows = BerkeleyExportRows(*model);
      if (!rows.ok()) {
        spdlog::error("{}", rows.status().message());
        throw CLI::RuntimeError(1);
      }
      model->lexicon = std::move(*rows);
    }
    Status written =
        cache ? WriteModelCache(*model, args->output) : WriteGrammarTextFiles(*model, args->output);
    if (!written.ok()) {
      spdlog::error("{}", written.message());
      throw CLI::RuntimeError(1);
    }
    // A .gr's lexicon is kept as counts (scores are computed from them when parsing); a text
    // export's as scored rows.
    const std::string lexicon = model->lexicon_counts && model->lexicon.empty()
                                    ? std::to_string(model->lexicon_counts->seen.size()) +
                                          " (tag, word) and " +
                                          std::to_string(model->lexicon_counts->unseen.size()) +
                                          " (tag, signature) lexicon counts"
                                    : std::to_string(model->lexicon.size()) + " lexicon rows";
    spdlog::info("{}: {} states, {} binary and {} unary rules, {} ({:.2f} s)", args->output,
                 model->grammar.num_states(), model->grammar.num_binary_rules(),
                 model->grammar.num_unary_rules(), lexicon,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  });
}

}  // namespace cky::apps
