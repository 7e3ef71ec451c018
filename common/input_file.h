// Reading text files that may be compressed, and standard input, as a stream that never waits for
// more than it needs: a line that has arrived on a pipe can be read at once, without waiting for a
// full buffer or the end of input (so that `cky parse` can run as a co-process).
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace cky {

// An open input stream. "-" means standard input. Compressed data is decompressed on the fly,
// recognized by its first bytes whatever the file's name (so is standard input): gzip, bzip2, xz
// and zstd, each possibly several streams one after the other (as their tools write them). Other
// compressed or archive formats that we recognize (zip, 7z, lz4, compress .Z) are refused with an
// error naming the format.
class InputFile {
 public:
  static StatusOr<std::unique_ptr<InputFile>> Open(const std::string& path);
  virtual ~InputFile() = default;
  virtual std::istream& stream() = 0;
  const std::string& path() const { return path_; }

  // True when reading one more line from stream() will not wait for input: a whole line is
  // already buffered, or the file (or pipe) has data or its end ready. Always true for
  // compressed input (its decompressor reads in blocks). Lets a reader batch what has arrived and
  // go to work when the input stalls.
  virtual bool LineReady() = 0;
  // Bytes of the underlying file consumed so far (compressed bytes for compressed input), and
  // its size in bytes; -1 when the size is unknown (a pipe, a terminal). For progress and ETA.
  virtual int64_t BytesConsumed() const = 0;
  int64_t size() const { return size_; }
  // "gzip", "bzip2", "xz", "zstd", or "" for plain text.
  const std::string& compression() const { return compression_; }
  // Why reading stopped before the end of the data, "PATH: why" ("truncated: the zstd data ends
  // before its last stream does", "damaged gzip data: CRC mismatch", "trailing data after the gzip
  // data ...", "read error: <errno text>"); OK when it did not. Compressed data is checked to the
  // end of its last stream: the bytes decoded before a fault are read first, then stream() goes
  // bad. Every reader checks this once it is done.
  virtual Status ReadStatus() const = 0;

 protected:
  InputFile(std::string path, int64_t size, std::string compression)
      : path_(std::move(path)), size_(size), compression_(std::move(compression)) {}
  void set_compression(std::string compression) { compression_ = std::move(compression); }

 private:
  std::string path_;
  int64_t size_;
  std::string compression_;
};

// True when `path` names an existing regular file.
bool FileExists(const std::string& path);

// Reads a whole (possibly compressed) file into a string.
StatusOr<std::string> ReadWholeFile(const std::string& path);

// The byte offset of the first invalid UTF-8 sequence in `text` (overlong forms, surrogates and
// code points above U+10FFFF count as invalid), or npos when `text` is valid UTF-8.
size_t FindInvalidUtf8(std::string_view text);

// Replaces each byte of an invalid UTF-8 sequence (as FindInvalidUtf8 judges them) and each NUL
// byte with U+FFFD, so that what is printed later is what was read. Returns the offset of the
// first byte replaced, or npos when the text was valid and had no NUL.
size_t ReplaceInvalidUtf8(std::string* text);

// Removes a UTF-8 byte-order mark (EF BB BF) from the start of `text`; true when there was one.
bool StripByteOrderMark(std::string* text);

}  // namespace cky
