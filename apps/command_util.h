// What every `cky` command does the same way: failing with a message, opening its output.
#pragma once

#include <CLI/CLI.hpp>
#include <fstream>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "grammar_io/grammar_argument.h"

namespace cky::apps {

// Logs `message` as an error on stderr and ends the command with exit code `code` (see
// apps/commands.h for the codes).
[[noreturn]] void Fail(const std::string& message, int code = 1);

// Standard output for "-"; otherwise `file`, opened on `path`. Fails the command when the file
// cannot be opened for writing, saying why.
std::ostream& OpenOutput(const std::string& path, std::ofstream& file);

// "standard output" for "-", else the path: how messages name an output.
std::string OutputName(const std::string& path);

// Fails the command when a write to `out` (the output at `path`) has failed, naming the output and
// the reason from errno ("standard output: cannot write: No space left on device"). Call it right
// after the write or flush that may have failed: errno is read then.
void CheckOutput(std::ostream& out, const std::string& path);

// The end of a command's output: flushes `out`, closes `file` when it is open (a close can fail
// too) and fails the command as CheckOutput does. Output to standard output is checked once more
// when the command returns (apps/main.cpp).
void FinishOutput(std::ostream& out, std::ofstream& file, const std::string& path);

// The most threads --threads may ask for: more than any machine's cores, and few enough to start
// (each thread reserves its stack; 100,000 threads hit the system's limits).
inline constexpr int kMaxThreads = 1024;

// Option checks whose error names the bound as written ("--threads: -1 is below the smallest
// allowed value, 0"), not CLI11's 300-digit limits, and whose help shows nothing of CLI11's. NaN
// is never allowed. AtLeast is Between with, by default, the largest int above: most options are
// ints, and beyond it CLI11 said only "Could not convert".
CLI::Validator Between(double minimum, double maximum);
CLI::Validator AtLeast(double minimum, double maximum = std::numeric_limits<int>::max());
// A choice among `names`, shown in the help as "{a,b,c}".
CLI::Validator OneOf(std::vector<std::string> names);

// Shows `option` in --help as "TYPE=DEFAULT" (or "TYPE" without a default), e.g. "N=200",
// "{auto,cpu}=auto", instead of CLI11's "INT:NONNEGATIVE=200". Returns `option`.
CLI::Option* Shown(CLI::Option* option, const std::string& type);

// How every command loads its -g/--grammar argument: `min_rule_prob` as --min-rule-prob gives it
// (negative: the format's default, 1e-10 for a .gr file as the Berkeley parser), a note on
// stderr when a grammar cache is written, saying where, and a warning when a cache is damaged,
// not this user's or cannot be written.
GrammarArgumentOptions GrammarOptionsForCommand(double min_rule_prob, bool use_cache = true);

}  // namespace cky::apps
