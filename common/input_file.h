// Reading text files that may be gzipped, and standard input.
#pragma once

#include <istream>
#include <memory>
#include <string>

#include "common/status.h"

namespace cky {

// An open input stream. "-" means standard input. A file whose first two bytes are the gzip magic
// (1f 8b) is decompressed on the fly, whatever its name; so is standard input.
class InputFile {
 public:
  static StatusOr<std::unique_ptr<InputFile>> Open(const std::string& path);
  virtual ~InputFile() = default;
  virtual std::istream& stream() = 0;
  const std::string& path() const { return path_; }

 protected:
  explicit InputFile(std::string path) : path_(std::move(path)) {}

 private:
  std::string path_;
};

// True when `path` names an existing regular file.
bool FileExists(const std::string& path);

// Reads a whole (possibly gzipped) file into a string.
StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace cky
