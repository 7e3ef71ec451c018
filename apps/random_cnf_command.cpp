// `cky random-grammar` and `cky random-strings`: seeded inputs for the membership experiments of
// Fujita/Nakano et al. and Kim et al.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <fstream>
#include <iostream>

#include "apps/commands.h"
#include "parser/cnf_grammar.h"

namespace cky::apps {
namespace {

std::ostream& OpenOutput(const std::string& path, std::ofstream& file) {
  if (path == "-") return std::cout;
  file.open(path);
  if (!file) {
    spdlog::error("cannot write {}", path);
    throw CLI::RuntimeError(1);
  }
  return file;
}

}  // namespace

void AddRandomGrammarCommand(CLI::App& app) {
  auto options = std::make_shared<RandomGrammarOptions>();
  auto output = std::make_shared<std::string>("-");
  CLI::App* cmd = app.add_subcommand(
      "random-grammar",
      "Write a seeded random CNF grammar in our text format: distinct binary rules drawn "
      "uniformly, 1 to 3 random parents per terminal, start symbol S");
  cmd->add_option("--nonterminals", options->nonterminals, "Number of nonterminals")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  cmd->add_option("--rules", options->rules, "Number of distinct binary rules (at most N^3)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--terminals", options->terminals, "Number of terminals (t0, t1, ...)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", options->seed, "Random seed")->capture_default_str();
  cmd->add_option("-o,--output", *output, "Output file (- for stdout)")->capture_default_str();
  cmd->callback([options, output] {
    std::ofstream file;
    std::ostream& out = OpenOutput(*output, file);
    WriteCnfGrammar(RandomCnfGrammar(*options), out);
    out.flush();
    if (!out) {
      spdlog::error("write error on {}", *output);
      throw CLI::RuntimeError(1);
    }
  });
}

void AddRandomStringsCommand(CLI::App& app) {
  auto options = std::make_shared<RandomStringOptions>();
  auto grammar_path = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>("-");
  CLI::App* cmd = app.add_subcommand(
      "random-strings",
      "Write seeded random strings of a grammar's terminals, one per line: a share sampled from "
      "derivations (members), the rest uniform");
  cmd->add_option("--grammar,-g", *grammar_path,
                  "Grammar (our CNF text format, or a Berkeley grammar prefix)")
      ->required();
  cmd->add_option("--count", options->count, "Number of strings")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--min-length", options->min_length, "Shortest length")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--max-length", options->max_length, "Longest length")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--member-fraction", options->member_fraction,
                  "Share of strings sampled from derivations of the start symbol")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--seed", options->seed, "Random seed")->capture_default_str();
  cmd->add_option("-o,--output", *output, "Output file (- for stdout)")->capture_default_str();
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
    for (const auto& s : RandomStrings(*grammar, *options)) out << JoinTerminals(*grammar, s) << "\n";
    out.flush();
    if (!out) {
      spdlog::error("write error on {}", *output);
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace cky::apps
