// Placeholder until the parser lands (in progress in this session).
#include <CLI/CLI.hpp>

#include "apps/commands.h"

namespace cky::apps {

void AddParseCommand(CLI::App& app) {
  CLI::App* parse = app.add_subcommand("parse", "Parse sentences (not built yet)");
  parse->callback([] { throw CLI::RuntimeError("cky parse: not built yet", 1); });
}

}  // namespace cky::apps
