#include "common/input_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unicode/utf8.h>
#include <unistd.h>

#include <algorithm>
#include <boost/iostreams/filter/bzip2.hpp>
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filter/lzma.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace cky {
namespace {

namespace bio = boost::iostreams;

// A read buffer on a file descriptor that, unlike std::filebuf on std::cin or a Boost filtering
// stream, hands out whatever one read(2) returned: a line that arrived on a pipe is readable at
// once. A read error throws, which the istream turns into badbit.
class FdStreamBuf : public std::streambuf {
 public:
  FdStreamBuf(int fd, bool owned) : fd_(fd), owned_(owned), buffer_(kBufferSize) {
    setg(buffer_.data(), buffer_.data(), buffer_.data());
  }
  ~FdStreamBuf() override {
    if (owned_) ::close(fd_);
  }

  // Reads until at least `count` bytes are buffered or the input ends (only at the start, for
  // the magic number). Returns the bytes buffered.
  std::string_view Buffered() const { return {gptr(), static_cast<size_t>(egptr() - gptr())}; }
  bool ReadMore() {
    if (eof_) return false;
    const size_t used = egptr() - eback();
    if (used == buffer_.size()) return false;
    const ssize_t n = ReadSome(buffer_.data() + used, buffer_.size() - used);
    if (n <= 0) return false;
    setg(eback(), gptr(), egptr() + n);
    return true;
  }

  bool LineReady() {
    if (eof_ || std::memchr(gptr(), '\n', egptr() - gptr()) != nullptr) return true;
    pollfd request{.fd = fd_, .events = POLLIN, .revents = 0};
    return ::poll(&request, 1, 0) > 0 && request.revents != 0;
  }
  int64_t BytesConsumed() const { return consumed_ - (egptr() - gptr()); }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const ssize_t n = ReadSome(buffer_.data(), buffer_.size());
    if (n <= 0) return traits_type::eof();
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  static constexpr size_t kBufferSize = 1 << 16;

  ssize_t ReadSome(char* into, size_t capacity) {
    ssize_t n;
    do {
      n = ::read(fd_, into, capacity);
    } while (n < 0 && errno == EINTR);
    if (n < 0) throw std::runtime_error(std::strerror(errno));
    if (n == 0) eof_ = true;
    consumed_ += n;
    return n;
  }

  int fd_;
  bool owned_;
  std::vector<char> buffer_;
  bool eof_ = false;
  int64_t consumed_ = 0;
};

struct Magic {
  std::string_view bytes;
  const char* format;
  bool readable;  // false: recognized, but we cannot decompress it
};
constexpr Magic kMagics[] = {
    {"\x1f\x8b", "gzip", true},
    {"BZh", "bzip2", true},
    {"\xfd\x37\x7a\x58\x5a\x00", "xz", true},
    {"\x28\xb5\x2f\xfd", "zstd", true},
    {"PK\x03\x04", "zip", false},
    {"7z\xbc\xaf\x27\x1c", "7z", false},
    {"\x04\x22\x4d\x18", "lz4", false},
    {"\x1f\x9d", "compress (.Z)", false},
    {"LZIP", "lzip", false},
};

class FdInput : public InputFile {
 public:
  FdInput(std::string path, int fd, bool owned, int64_t size)
      : InputFile(std::move(path), size, ""), buffer_(fd, owned), raw_(&buffer_) {}

  // Reads the first bytes and recognizes a compression format; fails for one we cannot read.
  Status Start() {
    const Magic* found = nullptr;
    for (;;) {
      std::string_view head = buffer_.Buffered();
      found = nullptr;
      bool could_be_one = false;
      for (const Magic& magic : kMagics) {
        if (head.size() >= magic.bytes.size()) {
          if (head.substr(0, magic.bytes.size()) == magic.bytes) found = &magic;
        } else if (magic.bytes.substr(0, head.size()) == head) {
          could_be_one = true;
        }
      }
      // Read on only while the bytes so far may still turn out to be a magic number, so that a
      // short first line on a pipe is not held back.
      if (found != nullptr || !could_be_one) break;
      try {
        if (!buffer_.ReadMore()) break;
      } catch (const std::exception& e) {
        return Status::Error(path() + ": read error: " + e.what());
      }
    }
    if (found == nullptr) return Status();
    if (!found->readable) {
      return Status::Error(path() + ": the data is compressed or archived as " + found->format +
                           ", which cky cannot read; decompress it first (cky reads plain text, "
                           "gzip, bzip2, xz and zstd)");
    }
    set_compression(found->format);
    const std::string_view format = found->format;
    if (format == "gzip") filtered_.push(bio::gzip_decompressor());
    if (format == "bzip2") filtered_.push(bio::bzip2_decompressor());
    if (format == "xz") filtered_.push(bio::lzma_decompressor());
    if (format == "zstd") filtered_.push(bio::zstd_decompressor());
    filtered_.push(raw_);
    return Status();
  }

  std::istream& stream() override {
    return compression().empty() ? raw_ : static_cast<std::istream&>(filtered_);
  }
  bool LineReady() override { return !compression().empty() || buffer_.LineReady(); }
  int64_t BytesConsumed() const override { return buffer_.BytesConsumed(); }

 private:
  FdStreamBuf buffer_;
  std::istream raw_;
  bio::filtering_istream filtered_;
};

}  // namespace

StatusOr<std::unique_ptr<InputFile>> InputFile::Open(const std::string& path) {
  int fd = 0;
  bool owned = false;
  if (path != "-") {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return Status::Error(path + ": is a directory");
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::Error(path + ": cannot open for reading: " + std::strerror(errno));
    owned = true;
  }
  struct stat info {};
  const int64_t size = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) ? info.st_size : -1;
  auto input = std::make_unique<FdInput>(path, fd, owned, size);
  Status started = input->Start();
  if (!started.ok()) return started;
  return std::unique_ptr<InputFile>(std::move(input));
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
  if ((*in)->stream().bad()) {
    return Status::Error(path + ": read error (corrupt compressed data?)");
  }
  return out.str();
}

size_t FindInvalidUtf8(std::string_view text) {
  // ICU's checking decoder (U8_NEXT: overlong forms, surrogates, code points above U+10FFFF and
  // cut sequences are errors), over windows of at most 1 GiB, its offsets being 32-bit.
  constexpr size_t kWindow = size_t{1} << 30;
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.size(), start + kWindow);
    const auto length = static_cast<int32_t>(end - start);
    const uint8_t* window = bytes + start;
    int32_t i = 0;
    while (i < length) {
      const int32_t at = i;
      UChar32 c;
      U8_NEXT(window, i, length, c);
      if (c >= 0) continue;
      // A sequence cut by the window's end (not the text's) is read again in the next window.
      if (end < text.size() && at + 4 > length) {
        i = at;
        break;
      }
      return start + static_cast<size_t>(at);
    }
    start += static_cast<size_t>(i);
  }
  return std::string_view::npos;
}

}  // namespace cky
