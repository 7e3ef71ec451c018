#include "apps/command_util.h"

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace cky::apps {

void Fail(const std::string& message, int code) {
  spdlog::error("{}", message);
  throw CLI::RuntimeError(code);
}

std::ostream& OpenOutput(const std::string& path, std::ofstream& file) {
  if (path == "-") return std::cout;
  file.open(path);
  if (!file) Fail(path + ": cannot open for writing: " + std::strerror(errno));
  return file;
}

std::string OutputName(const std::string& path) { return path == "-" ? "standard output" : path; }

void CheckOutput(std::ostream& out, const std::string& path) {
  if (out) return;
  const int error = errno;  // of the write that failed, before anything else can change it
  Fail(OutputName(path) + ": cannot write" +
       (error != 0 ? ": " + std::string(std::strerror(error)) : ""));
}

void FinishOutput(std::ostream& out, std::ofstream& file, const std::string& path) {
  // A stream that failed before keeps the errno of its failed write (nothing since needed one).
  if (out) {
    errno = 0;
    out.flush();
  }
  CheckOutput(out, path);
  if (file.is_open()) {
    file.close();
    CheckOutput(file, path);
  }
}

namespace {

std::string Number(double value) {
  char text[32];
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(text, sizeof text, "%.0f", value);  // 2147483647, not 2.14748e+09
  } else {
    std::snprintf(text, sizeof text, "%g", value);
  }
  return text;
}

// The option's value as a number, or why it is not one.
std::string ReadNumber(const std::string& input, double* value) {
  if (!CLI::detail::lexical_cast(input, *value) || std::isnan(*value)) {
    return "'" + input + "' is not a number";
  }
  return "";
}

}  // namespace

CLI::Validator Between(double minimum, double maximum) {
  return CLI::Validator(
      [minimum, maximum](std::string& input) -> std::string {
        double value = 0;
        if (std::string error = ReadNumber(input, &value); !error.empty()) return error;
        if (value < minimum)
          return input + " is below the smallest allowed value, " + Number(minimum);
        if (value > maximum)
          return input + " is above the largest allowed value, " + Number(maximum);
        return "";
      },
      "");
}

CLI::Validator AtLeast(double minimum, double maximum) { return Between(minimum, maximum); }

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
          .on_cache_written =
              [](const std::string& path) {
                spdlog::info(
                    "wrote a binary cache of the grammar to {} (later loads read it; "
                    "--no-cache skips it)",
                    path);
              },
          .on_cache_warning = [](const std::string& message) { spdlog::warn("{}", message); }};
}

}  // namespace cky::apps
