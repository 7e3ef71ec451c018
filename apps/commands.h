// The `cky` subcommands. Each Add*Command registers one subcommand on the top-level app; its
// callback does the work and throws CLI::RuntimeError(exit_code) on failure, after printing a clear
// message on stderr. Only apps/ prints to the user and chooses exit codes.
//
// Exit codes: 0 success, 1 a runtime failure (bad input file, some sentences failed under
// --strict), 2 a usage error (CLI11's own).
#pragma once

namespace CLI {
class App;
}

namespace cky::apps {

void AddParseCommand(CLI::App& app);
void AddConvertCommand(CLI::App& app);
void AddEvalCommand(CLI::App& app);
void AddTokenizeCommand(CLI::App& app);
void AddRecognizeCommand(CLI::App& app);
void AddRandomGrammarCommand(CLI::App& app);
void AddRandomStringsCommand(CLI::App& app);
void AddInsideCommand(CLI::App& app);
void AddTrainCommand(CLI::App& app);

}  // namespace cky::apps
