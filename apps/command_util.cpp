#include "apps/command_util.h"

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
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

}  // namespace cky::apps
