// `cky random-grammar`: a seeded random CNF grammar for the membership experiments of
// Fujita/Nakano et al.

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "apps/command_util.h"
#include "apps/commands.h"
#include "membership/cnf_grammar.h"

namespace cky::apps {
namespace {}  // namespace

void AddRandomGrammarCommand(CLI::App& app) {
  auto options = std::make_shared<RandomCnfGrammarOptions>();
  auto output = std::make_shared<std::string>("-");
  CLI::App* cmd = app.add_subcommand(
      "random-grammar",
      "Write a seeded random CNF grammar in our text format (membership/cnf_grammar.h): "
      "distinct binary rules drawn uniformly, 1 to 3 random parents per terminal, start symbol "
      "S. For the membership experiments (Fujita/Nakano et al.): `cky random-grammar | cky "
      "random-strings -g - | cky recognize -g ...`");
  Shown(cmd->add_option("--nonterminals", options->nonterminals, "Number of nonterminals")
            ->check(Between(1, 65535))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--rules", options->rules, "Number of distinct binary rules (at most N^3)")
            ->check(AtLeast(1, 1e15))  // an int64
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--terminals", options->terminals, "Number of terminals (t0, t1, ...)")
            ->check(AtLeast(1))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--seed", options->seed, "Random seed")->capture_default_str(), "N");
  Shown(
      cmd->add_option("-o,--output", *output, "Output file (- for stdout)")->capture_default_str(),
      "FILE");
  cmd->callback([options, output] {
    std::ofstream file;
    std::ostream& out = OpenOutput(*output, file);
    WriteCnfGrammar(RandomCnfGrammar(*options), out);
    FinishOutput(out, file, *output);
  });
}

}  // namespace cky::apps
