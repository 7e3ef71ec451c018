// `cky random-strings`: seeded random strings of a grammar's terminals, for the membership
// experiments of Fujita/Nakano et al. and Kim et al.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "apps/command_util.h"
#include "apps/commands.h"
#include "membership/cnf_grammar.h"

namespace cky::apps {
namespace {}  // namespace

void AddRandomStringsCommand(CLI::App& app) {
  auto options = std::make_shared<RandomStringOptions>();
  auto grammar_path = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>("-");
  CLI::App* cmd = app.add_subcommand(
      "random-strings",
      "Write seeded random strings of a grammar's terminals, one per line: a share sampled from "
      "derivations (members), the rest uniform. Input for `cky recognize` in the membership "
      "experiments (Fujita/Nakano et al., Kim et al.)");
  Shown(cmd->add_option("-g,--grammar", *grammar_path,
                        "Grammar: our CNF text format (- for stdin), or any grammar `cky parse "
                        "--grammar` reads, as its boolean projection")
            ->required(),
        "FILE|PREFIX");
  Shown(cmd->add_option("--count", options->count, "Number of strings")
            ->check(AtLeast(0, 1e15))  // an int64
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--min-length", options->min_length, "Shortest length")
            ->check(Between(1, 100000))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--max-length", options->max_length, "Longest length")
            ->check(Between(1, 100000))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--member-fraction", options->member_fraction,
                        "Share of strings sampled from derivations of the start symbol")
            ->check(Between(0.0, 1.0))
            ->capture_default_str(),
        "P");
  Shown(cmd->add_option("--seed", options->seed, "Random seed")->capture_default_str(), "N");
  Shown(
      cmd->add_option("-o,--output", *output, "Output file (- for stdout)")->capture_default_str(),
      "FILE");
  cmd->callback([options, grammar_path, output] {
    auto grammar = LoadRecognitionGrammar(*grammar_path);
    if (!grammar.ok()) {
      spdlog::error("{}", grammar.status().message());
      throw CLI::RuntimeError(1);
    }
    if (options->max_length < options->min_length) {
      spdlog::error("--max-length is smaller than --min-length");
      throw CLI::RuntimeError(2);
    }
    std::ofstream file;
    std::ostream& out = OpenOutput(*output, file);
    for (const auto& s : RandomStrings(*grammar, *options))
      out << JoinTerminals(*grammar, s) << "\n";
    FinishOutput(out, file, *output);
  });
}

}  // namespace cky::apps
