#include "common/input_file.h"

#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace cky {
namespace {

namespace bio = boost::iostreams;

class FilteredInput : public InputFile {
 public:
  FilteredInput(std::string path, std::unique_ptr<std::istream> source)
      : InputFile(std::move(path)), source_(std::move(source)) {
    int first = source_->peek();
    bool gzipped = false;
    if (first == 0x1f) {
      source_->get();
      gzipped = source_->peek() == 0x8b;
      source_->unget();
    }
    if (gzipped) filtered_.push(bio::gzip_decompressor());
    filtered_.push(*source_);
  }
  std::istream& stream() override { return filtered_; }

 private:
  std::unique_ptr<std::istream> source_;
  bio::filtering_istream filtered_;
};

// std::cin is not owned; wrap it in a non-deleting istream that shares its buffer.
class StdinStream : public std::istream {
 public:
  StdinStream() : std::istream(std::cin.rdbuf()) {}
};

}  // namespace

StatusOr<std::unique_ptr<InputFile>> InputFile::Open(const std::string& path) {
  std::unique_ptr<std::istream> source;
  if (path == "-") {
    source = std::make_unique<StdinStream>();
  } else {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return Status::Error(path + ": is a directory");
    auto file = std::make_unique<std::ifstream>(path, std::ios::binary);
    if (!*file) return Status::Error(path + ": cannot open for reading");
    source = std::move(file);
  }
  return std::unique_ptr<InputFile>(new FilteredInput(path, std::move(source)));
}

bool FileExists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  auto in = InputFile::Open(path);
  if (!in.ok()) return in.status();
  std::ostringstream out;
  out << (*in)->stream().rdbuf();
  if ((*in)->stream().bad()) return Status::Error(path + ": read error (corrupt gzip data?)");
  return out.str();
}

}  // namespace cky
