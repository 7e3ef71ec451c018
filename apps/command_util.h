// What every `cky` command does the same way: failing with a message, opening its output.
#pragma once

#include <CLI/CLI.hpp>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "grammar_io/grammar_argument.h"

namespace cky::apps {

// Logs `message` as an error on stderr and ends the command with exit code `code` (see
// apps/commands.h for the codes).
[[noreturn]] void Fail(const std::string& message, int code = 1);

// Standard output for "-"; otherwise `file`, opened on `path`. Fails the command when the file
// cannot be opened for writing.
std::ostream& OpenOutput(const std::string& path, std::ofstream& file);

// Option checks whose error names the bound as written ("--threads: -1 is below the smallest
// allowed value, 0"), not CLI11's 300-digit limits, and whose help shows nothing of CLI11's.
CLI::Validator AtLeast(double minimum);
CLI::Validator Between(double minimum, double maximum);
// A choice among `names`, shown in the help as "{a,b,c}".
CLI::Validator OneOf(std::vector<std::string> names);

// Shows `option` in --help as "TYPE=DEFAULT" (or "TYPE" without a default), e.g. "N=200",
// "{auto,cpu}=auto", instead of CLI11's "INT:NONNEGATIVE=200". Returns `option`.
CLI::Option* Shown(CLI::Option* option, const std::string& type);

// How every command loads its -g/--grammar argument: `min_rule_prob` as --min-rule-prob gives it
// (negative: the format's default, 1e-10 for a .gr file as the Berkeley parser), and a note on
// stderr when a grammar cache is written, saying where.
GrammarArgumentOptions GrammarOptionsForCommand(double min_rule_prob, bool use_cache = true);

}  // namespace cky::apps
