#include "apps/command_util.h"

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

namespace cky::apps {

void Fail(const std::string& message, int code) {
  spdlog::error("{}", message);
  throw CLI::RuntimeError(code);
}

std::ostream& OpenOutput(const std::string& path, std::ofstream& file) {
  if (path == "-") return std::cout;
  file.open(path);
  if (!file) Fail(path + ": cannot open for writing");
  return file;
}

namespace {

std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

}  // namespace

CLI::Validator AtLeast(double minimum) {
  return CLI::Validator(
      [minimum](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value)) return "'" + input + "' is not a number";
        if (value < minimum)
          return input + " is below the smallest allowed value, " + Number(minimum);
        return "";
      },
      "");
}

CLI::Validator Between(double minimum, double maximum) {
  return CLI::Validator(
      [minimum, maximum](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value)) return "'" + input + "' is not a number";
        if (value < minimum || value > maximum) {
          return input + " is outside the allowed range, " + Number(minimum) + " to " +
                 Number(maximum);
        }
        return "";
      },
      "");
}

CLI::Validator OneOf(std::vector<std::string> names) {
  std::string shown;
  for (const std::string& name : names) shown += (shown.empty() ? "" : ",") + name;
  return CLI::Validator(
      [names, shown](std::string& input) -> std::string {
        for (const std::string& name : names) {
          if (input == name) return "";
        }
        return "'" + input + "' is not one of " + shown;
      },
      "{" + shown + "}");
}

CLI::Option* Shown(CLI::Option* option, const std::string& type) {
  const std::string default_value = option->get_default_str();
  return option->option_text(type + (default_value.empty() ? "" : "=" + default_value) +
                             (option->get_required() ? " (required)" : ""));
}

GrammarArgumentOptions GrammarOptionsForCommand(double min_rule_prob, bool use_cache) {
  return {.min_rule_prob = min_rule_prob,
          .use_cache = use_cache,
          .on_cache_written = [](const std::string& path) {
            spdlog::info(
                "wrote a binary cache of the grammar to {} (later loads read it; "
                "--no-cache skips it)",
                path);
          }};
}

}  // namespace cky::apps
