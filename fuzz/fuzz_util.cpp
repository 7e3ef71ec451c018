#include "fuzz/fuzz_util.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace cky::fuzz {

std::vector<std::string> SplitParts(const uint8_t* data, size_t size, size_t parts) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string_view separator = "\n%%\n";
  std::vector<std::string> out;
  size_t begin = 0;
  while (out.size() + 1 < parts) {
    const size_t end = text.find(separator, begin);
    if (end == std::string_view::npos) break;
    out.emplace_back(text.substr(begin, end - begin));
    begin = end + separator.size();
  }
  out.emplace_back(text.substr(begin));
  return out;
}

namespace {

// The scratch directory, removed with its files when the process exits (libFuzzer ends a run
// with exit(); a crash leaves it for the finding's inspection).
struct Scratch {
  std::string dir;
  Scratch() {
    const char* tmp = std::getenv("TMPDIR");
    dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/cky-fuzz-" +
          std::to_string(static_cast<long>(getpid()));
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

}  // namespace

const std::string& ScratchDir() {
  static const Scratch scratch;
  return scratch.dir;
}

std::string WriteScratchFile(const std::string& name, std::string_view contents) {
  const std::string path = ScratchDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  return path;
}

}  // namespace cky::fuzz
