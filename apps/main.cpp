// cky: exact PCFG parsing on the GPU and the CPU. See `cky --help` and `cky COMMAND --help`.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "apps/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "cky: exhaustive Viterbi CKY parsing with Berkeley latent-variable grammars, on a CUDA GPU "
      "when "
      "there is one and on all CPU cores otherwise."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "cky 0.1.0");
  bool verbose = false;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose, "Log details (grammar sizes, timings) on stderr");
  app.add_flag("-q,--quiet", quiet, "Log only errors on stderr");
  app.parse_complete_callback([&] {
    spdlog::set_level(verbose ? spdlog::level::debug
                              : (quiet ? spdlog::level::err : spdlog::level::info));
  });
  // Messages go to stderr: stdout carries results (parses, `cky eval` reports).
  spdlog::set_default_logger(spdlog::stderr_color_mt("cky"));
  spdlog::set_pattern("cky: %^%l%$: %v");

  cky::apps::AddParseCommand(app);
  cky::apps::AddConvertCommand(app);
  cky::apps::AddEvalCommand(app);
  cky::apps::AddTokenizeCommand(app);
  cky::apps::AddRecognizeCommand(app);
  cky::apps::AddRandomGrammarCommand(app);
  cky::apps::AddRandomStringsCommand(app);
  cky::apps::AddInsideCommand(app);
  cky::apps::AddTrainCommand(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // the command already explained itself on stderr
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, the version, or what is wrong with the usage
    return code == 0 ? 0 : 2;
  }
  return 0;
}
