#include "common/input_file.h"

#include <bzlib.h>
#include <fcntl.h>
#include <lzma.h>
#include <poll.h>
#include <sys/stat.h>
#include <unicode/utf8.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace cky {
namespace {

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
  const std::string& error() const { return error_; }

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
    if (n < 0) {
      error_ = std::string("read error: ") + std::strerror(errno);
      throw std::runtime_error(error_);
    }
    if (n == 0) eof_ = true;
    consumed_ += n;
    return n;
  }

  int fd_;
  bool owned_;
  std::vector<char> buffer_;
  bool eof_ = false;
  int64_t consumed_ = 0;
  std::string error_;
};

// One compression format's decoder: compressed bytes in, plain bytes out, and at the end of the
// compressed input a verdict on whether the data ended where its last stream ends. Each decodes
// concatenated streams (as gzip -d, bzip2 -d, xz -d and zstd -d do) and names what is wrong with
// damaged data: the bytes decoded before the damage are still delivered.
class Decoder {
 public:
  virtual ~Decoder() = default;
  // Decodes from [*in, *in + *in_size) into [*out, *out + *out_size), advancing both. Returns ""
  // or, when the data is damaged, why (output written before the damage stays written).
  virtual std::string Decode(const uint8_t** in, size_t* in_size, uint8_t** out,
                             size_t* out_size) = 0;
  // After the last compressed byte: "" when every stream was complete, else why not (the call
  // may still write output: *out_size shrinks).
  virtual std::string Finish(uint8_t** out, size_t* out_size) = 0;
};

// Streams must follow one another directly; anything else after a complete stream is an error.
std::string TrailingData(std::string_view format) {
  return "trailing data after the " + std::string(format) + " data (not a " + std::string(format) +
         " stream: a damaged or appended file?)";
}
std::string Truncated(std::string_view format) {
  return "truncated: the " + std::string(format) +
         " data ends before its last stream does (an incomplete copy or download?)";
}

class GzipDecoder : public Decoder {
 public:
  GzipDecoder() : started_(inflateInit2(&stream_, 15 + 16) == Z_OK) {}  // 16: gzip only
  ~GzipDecoder() override {
    if (started_) inflateEnd(&stream_);
  }
  std::string Decode(const uint8_t** in, size_t* in_size, uint8_t** out,
                     size_t* out_size) override {
    if (!started_) return "cannot start the gzip decoder (out of memory?)";
    while (*in_size > 0 && *out_size > 0) {
      if (stream_end_) {
        // Another member must start here (gzip's magic number).
        if ((*in)[0] != 0x1f || (*in_size > 1 && (*in)[1] != 0x8b)) return TrailingData("gzip");
        inflateReset(&stream_);
        stream_end_ = false;
      }
      stream_.next_in = const_cast<Bytef*>(*in);
      stream_.avail_in = static_cast<uInt>(std::min<size_t>(*in_size, 1 << 30));
      stream_.next_out = *out;
      stream_.avail_out = static_cast<uInt>(std::min<size_t>(*out_size, 1 << 30));
      const int result = inflate(&stream_, Z_NO_FLUSH);
      const size_t consumed = stream_.next_in - *in, produced = stream_.next_out - *out;
      *in += consumed;
      *in_size -= consumed;
      *out += produced;
      *out_size -= produced;
      if (result == Z_STREAM_END) {
        stream_end_ = true;
      } else if (result == Z_DATA_ERROR) {
        const std::string message = stream_.msg ? stream_.msg : "invalid data";
        if (message == "incorrect data check") return "damaged gzip data: CRC mismatch";
        if (message == "incorrect length check") return "damaged gzip data: length mismatch";
        return "damaged gzip data (" + message + ")";
      } else if (result == Z_MEM_ERROR) {
        return "out of memory decompressing gzip data";
      } else if (result != Z_OK && result != Z_BUF_ERROR) {
        return "gzip decompression failed (zlib error " + std::to_string(result) + ")";
      } else if (consumed == 0 && produced == 0) {
        break;
      }
    }
    return "";
  }
  std::string Finish(uint8_t**, size_t*) override { return stream_end_ ? "" : Truncated("gzip"); }

 private:
  z_stream stream_{};
  bool started_;
  bool stream_end_ = false;
};

class Bzip2Decoder : public Decoder {
 public:
  Bzip2Decoder() : started_(BZ2_bzDecompressInit(&stream_, 0, 0) == BZ_OK) {}
  ~Bzip2Decoder() override {
    if (started_) BZ2_bzDecompressEnd(&stream_);
  }
  std::string Decode(const uint8_t** in, size_t* in_size, uint8_t** out,
                     size_t* out_size) override {
    while (*in_size > 0 && *out_size > 0) {
      if (stream_end_) {
        if ((*in)[0] != 'B') return TrailingData("bzip2");
        if (started_) BZ2_bzDecompressEnd(&stream_);
        stream_ = {};
        started_ = BZ2_bzDecompressInit(&stream_, 0, 0) == BZ_OK;
        stream_end_ = false;
      }
      if (!started_) return "cannot start the bzip2 decoder (out of memory?)";
      stream_.next_in = reinterpret_cast<char*>(const_cast<uint8_t*>(*in));
      stream_.avail_in = static_cast<unsigned>(std::min<size_t>(*in_size, 1 << 30));
      stream_.next_out = reinterpret_cast<char*>(*out);
      stream_.avail_out = static_cast<unsigned>(std::min<size_t>(*out_size, 1 << 30));
      const int result = BZ2_bzDecompress(&stream_);
      const size_t consumed = reinterpret_cast<const uint8_t*>(stream_.next_in) - *in;
      const size_t produced = reinterpret_cast<uint8_t*>(stream_.next_out) - *out;
      *in += consumed;
      *in_size -= consumed;
      *out += produced;
      *out_size -= produced;
      if (result == BZ_STREAM_END) {
        stream_end_ = true;
      } else if (result == BZ_DATA_ERROR_MAGIC) {
        return TrailingData("bzip2");
      } else if (result == BZ_DATA_ERROR) {
        return "damaged bzip2 data (CRC mismatch or corrupt block)";
      } else if (result == BZ_MEM_ERROR) {
        return "out of memory decompressing bzip2 data";
      } else if (result != BZ_OK) {
        return "bzip2 decompression failed (error " + std::to_string(result) + ")";
      } else if (consumed == 0 && produced == 0) {
        break;
      }
    }
    return "";
  }
  std::string Finish(uint8_t**, size_t*) override { return stream_end_ ? "" : Truncated("bzip2"); }

 private:
  bz_stream stream_{};
  bool started_;
  bool stream_end_ = false;
};

class XzDecoder : public Decoder {
 public:
  XzDecoder() { Start(); }
  ~XzDecoder() override { lzma_end(&stream_); }
  std::string Decode(const uint8_t** in, size_t* in_size, uint8_t** out,
                     size_t* out_size) override {
    while (*in_size > 0 && *out_size > 0) {
      if (ended_) {
        // Stream padding (zero bytes), or the next stream (xz's magic number starts 0xFD).
        if ((*in)[0] == 0) {
          ++*in;
          --*in_size;
          continue;
        }
        if ((*in)[0] != 0xfd) return TrailingData("xz");
        Start();
      }
      if (!started_) return "cannot start the xz decoder (out of memory?)";
      const size_t before_in = *in_size, before_out = *out_size;
      if (std::string error = Run(LZMA_RUN, in, in_size, out, out_size); !error.empty()) {
        return error;
      }
      if (!ended_ && *in_size == before_in && *out_size == before_out) break;
    }
    return "";
  }
  std::string Finish(uint8_t** out, size_t* out_size) override {
    if (ended_) return "";
    if (!started_) return "cannot start the xz decoder (out of memory?)";
    // The decoder may still hold output of a complete stream; if the stream is not complete,
    // LZMA_FINISH says so.
    const uint8_t* none = nullptr;
    size_t zero = 0;
    const size_t before = *out_size;
    const std::string error = Run(LZMA_FINISH, &none, &zero, out, out_size);
    if (!error.empty()) return error;
    return ended_ || *out_size < before ? "" : Truncated("xz");
  }

 private:
  void Start() {
    lzma_end(&stream_);
    stream_ = LZMA_STREAM_INIT;
    started_ = lzma_stream_decoder(&stream_, UINT64_MAX, 0) == LZMA_OK;
    ended_ = false;
  }
  std::string Run(lzma_action action, const uint8_t** in, size_t* in_size, uint8_t** out,
                  size_t* out_size) {
    stream_.next_in = *in;
    stream_.avail_in = *in_size;
    stream_.next_out = *out;
    stream_.avail_out = *out_size;
    const lzma_ret result = lzma_code(&stream_, action);
    *in = stream_.next_in;
    *in_size = stream_.avail_in;
    *out = stream_.next_out;
    *out_size = stream_.avail_out;
    switch (result) {
      case LZMA_OK:
        return "";
      case LZMA_BUF_ERROR:  // no progress possible: at the end of the input, a cut stream
        return action == LZMA_FINISH ? Truncated("xz") : "";
      case LZMA_STREAM_END:
        ended_ = true;
        return "";
      case LZMA_FORMAT_ERROR:
        return TrailingData("xz");
      case LZMA_DATA_ERROR:
        return "damaged xz data (corrupt or failing its check)";
      case LZMA_MEM_ERROR:
        return "out of memory decompressing xz data";
      default:
        return "xz decompression failed (liblzma error " + std::to_string(result) + ")";
    }
  }
  lzma_stream stream_ = LZMA_STREAM_INIT;
  bool started_ = false;
  bool ended_ = false;
};

class ZstdDecoder : public Decoder {
 public:
  ZstdDecoder() : context_(ZSTD_createDCtx()) {}
  ~ZstdDecoder() override { ZSTD_freeDCtx(context_); }
  std::string Decode(const uint8_t** in, size_t* in_size, uint8_t** out,
                     size_t* out_size) override {
    if (context_ == nullptr) return "cannot start the zstd decoder (out of memory?)";
    while (*in_size > 0 && *out_size > 0) {
      ZSTD_inBuffer input{*in, *in_size, 0};
      ZSTD_outBuffer output{*out, *out_size, 0};
      const size_t result = ZSTD_decompressStream(context_, &output, &input);
      *in += input.pos;
      *in_size -= input.pos;
      *out += output.pos;
      *out_size -= output.pos;
      if (ZSTD_isError(result)) {
        if (ZSTD_getErrorCode(result) == ZSTD_error_prefix_unknown) return TrailingData("zstd");
        return std::string("damaged zstd data (") + ZSTD_getErrorName(result) + ")";
      }
      frame_complete_ = result == 0;
      if (input.pos == 0 && output.pos == 0) break;
    }
    return "";
  }
  std::string Finish(uint8_t** out, size_t* out_size) override {
    if (context_ == nullptr) return "cannot start the zstd decoder (out of memory?)";
    // Output the decoder still holds, then: a frame is complete only when it said so.
    while (!frame_complete_ && *out_size > 0) {
      ZSTD_inBuffer input{nullptr, 0, 0};
      ZSTD_outBuffer output{*out, *out_size, 0};
      const size_t result = ZSTD_decompressStream(context_, &output, &input);
      if (ZSTD_isError(result)) {
        return std::string("damaged zstd data (") + ZSTD_getErrorName(result) + ")";
      }
      *out += output.pos;
      *out_size -= output.pos;
      frame_complete_ = result == 0;
      if (output.pos == 0) break;
    }
    return frame_complete_ || *out_size == 0 ? "" : Truncated("zstd");
  }

 private:
  ZSTD_DCtx* context_;
  bool frame_complete_ = true;  // nothing begun yet; an empty input is an empty stream
};

// A read buffer of decompressed bytes over the raw file's buffer. The bytes decoded before damaged
// data or the end of a truncated file are handed out first; the read after them throws (which the
// istream turns into badbit) and error() says what was wrong.
class DecompressingStreamBuf : public std::streambuf {
 public:
  DecompressingStreamBuf(std::streambuf* raw, std::unique_ptr<Decoder> decoder,
                         std::string_view format)
      : raw_(raw),
        decoder_(std::move(decoder)),
        format_(format),
        in_(kBufferSize),
        out_(kBufferSize) {
    setg(out_.data(), out_.data(), out_.data());
  }
  const std::string& error() const { return error_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    uint8_t* begin = reinterpret_cast<uint8_t*>(out_.data());
    uint8_t* out = begin;
    size_t room = out_.size();
    while (out == begin && !done_) {
      if (in_size_ == 0 && !input_ended_) {
        // What one read of the file gave (sgetn would wait to fill the buffer from a pipe).
        std::streamsize n = 0;
        if (raw_->sgetc() != traits_type::eof()) {
          n = raw_->sgetn(in_.data(), std::min<std::streamsize>(raw_->in_avail(), in_.size()));
        }
        if (n <= 0) input_ended_ = true;
        in_next_ = reinterpret_cast<const uint8_t*>(in_.data());
        in_size_ = n > 0 ? static_cast<size_t>(n) : 0;
      }
      std::string error;
      if (in_size_ > 0) {
        const size_t in_before = in_size_, room_before = room;
        error = decoder_->Decode(&in_next_, &in_size_, &out, &room);
        // Never loop on a decoder that neither reads nor writes (no library should).
        if (error.empty() && in_size_ == in_before && room == room_before) {
          error = "the " + std::string(format_) + " decoder made no progress";
        }
      } else {
        error = decoder_->Finish(&out, &room);
        if (error.empty() && out == begin) done_ = true;
      }
      if (!error.empty()) {
        error_ = error;
        done_ = true;
      }
    }
    if (out == begin) {
      if (!error_.empty()) throw std::runtime_error(error_);
      return traits_type::eof();
    }
    setg(out_.data(), out_.data(), reinterpret_cast<char*>(out));
    return traits_type::to_int_type(*gptr());
  }

 private:
  static constexpr size_t kBufferSize = 1 << 16;
  std::streambuf* raw_;
  std::unique_ptr<Decoder> decoder_;
  std::string_view format_;
  std::vector<char> in_, out_;
  const uint8_t* in_next_ = nullptr;
  size_t in_size_ = 0;
  bool input_ended_ = false;
  bool done_ = false;
  std::string error_;
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
    std::unique_ptr<Decoder> decoder;
    if (format == "gzip") decoder = std::make_unique<GzipDecoder>();
    if (format == "bzip2") decoder = std::make_unique<Bzip2Decoder>();
    if (format == "xz") decoder = std::make_unique<XzDecoder>();
    if (format == "zstd") decoder = std::make_unique<ZstdDecoder>();
    decompressing_ = std::make_unique<DecompressingStreamBuf>(&buffer_, std::move(decoder), format);
    decompressed_.rdbuf(decompressing_.get());
    return Status();
  }

  std::istream& stream() override { return decompressing_ ? decompressed_ : raw_; }
  bool stream_bad() const { return decompressing_ ? decompressed_.bad() : raw_.bad(); }
  bool LineReady() override { return decompressing_ || buffer_.LineReady(); }
  int64_t BytesConsumed() const override { return buffer_.BytesConsumed(); }
  Status ReadStatus() const override {
    std::string error = buffer_.error();
    if (error.empty() && decompressing_) error = decompressing_->error();
    if (error.empty() && stream_bad()) error = "read error";
    return error.empty() ? Status() : Status::Error(path() + ": " + error);
  }

 private:
  FdStreamBuf buffer_;
  std::istream raw_;
  std::unique_ptr<DecompressingStreamBuf> decompressing_;
  std::istream decompressed_{nullptr};
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
  CKY_RETURN_IF_ERROR((*in)->ReadStatus());
  return out.str();
}

namespace {

// The length of the valid UTF-8 sequence at bytes[i] (1 to 4), or 0 when it is not one: ICU's
// checking decoder (U8_NEXT: overlong forms, surrogates, code points above U+10FFFF and cut
// sequences are errors).
int Utf8SequenceLength(const unsigned char* bytes, size_t i, size_t size) {
  const auto length = static_cast<int32_t>(std::min<size_t>(4, size - i));
  int32_t next = 0;
  UChar32 c;
  U8_NEXT(bytes + i, next, length, c);
  return c >= 0 ? static_cast<int>(next) : 0;
}

}  // namespace

size_t FindInvalidUtf8(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const int length = Utf8SequenceLength(bytes, i, text.size());
    if (length == 0) return i;
    i += length;
  }
  return std::string_view::npos;
}

size_t ReplaceInvalidUtf8(std::string* text) {
  constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD
  const auto* bytes = reinterpret_cast<const unsigned char*>(text->data());
  size_t first = std::string::npos;
  std::string out;
  for (size_t i = 0; i < text->size();) {
    const int length = Utf8SequenceLength(bytes, i, text->size());
    if (length > 0 && bytes[i] != 0) {
      if (first != std::string::npos) out.append(*text, i, length);
      i += length;
      continue;
    }
    if (first == std::string::npos) {
      first = i;
      out.assign(*text, 0, i);
    }
    out.append(kReplacement);
    ++i;
  }
  if (first != std::string::npos) *text = std::move(out);
  return first;
}

bool StripByteOrderMark(std::string* text) {
  if (text->rfind("\xef\xbb\xbf", 0) != 0) return false;
  text->erase(0, 3);
  return true;
}

}  // namespace cky
