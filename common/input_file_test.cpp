#include "common/input_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/iostreams/filter/bzip2.hpp>
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filter/lzma.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>

namespace cky {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("cky_common_test_" + name)).string();
}

TEST(InputFileTest, ReadsPlainFile) {
  std::string path = TempPath("plain.txt");
  std::ofstream(path) << "one\ntwo\n";
  auto text = ReadWholeFile(path);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, "one\ntwo\n");
}

TEST(InputFileTest, DetectsGzipByContent) {
  std::string path = TempPath("zipped.dat");  // no .gz suffix on purpose
  {
    std::ofstream file(path, std::ios::binary);
    boost::iostreams::filtering_ostream out;
    out.push(boost::iostreams::gzip_compressor());
    out.push(file);
    out << "compressed line\n";
  }
  auto text = ReadWholeFile(path);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, "compressed line\n");
}

TEST(InputFileTest, MissingFileIsAnErrorNamingIt) {
  auto in = InputFile::Open("/nonexistent/cky.txt");
  ASSERT_FALSE(in.ok());
  EXPECT_NE(in.status().message().find("/nonexistent/cky.txt"), std::string::npos);
}

TEST(InputFileTest, EmptyFileReadsAsEmpty) {
  std::string path = TempPath("empty.txt");
  std::ofstream(path).close();
  auto text = ReadWholeFile(path);
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(text->empty());
}

template <typename Compressor>
std::string WriteCompressed(const std::string& name, const std::string& text) {
  std::string path = TempPath(name);
  std::ofstream file(path, std::ios::binary);
  boost::iostreams::filtering_ostream out;
  out.push(Compressor());
  out.push(file);
  out << text;
  return path;
}

TEST(InputFileTest, DecompressesBzip2XzAndZstdByContent) {
  for (const std::string& path :
       {WriteCompressed<boost::iostreams::bzip2_compressor>("b.dat", "bzip2 line\n"),
        WriteCompressed<boost::iostreams::lzma_compressor>("x.dat", "bzip2 line\n"),
        WriteCompressed<boost::iostreams::zstd_compressor>("z.dat", "bzip2 line\n")}) {
    auto text = ReadWholeFile(path);
    ASSERT_TRUE(text.ok()) << path << ": " << text.status().message();
    EXPECT_EQ(*text, "bzip2 line\n") << path;
  }
  auto input = InputFile::Open(TempPath("z.dat"));
  ASSERT_TRUE(input.ok());
  EXPECT_EQ((*input)->compression(), "zstd");
}

// Each format's compressed bytes of `text`.
std::string Compressed(const std::string& format, const std::string& text) {
  namespace bio = boost::iostreams;
  std::ostringstream bytes;
  {
    bio::filtering_ostream out;
    if (format == "gzip") out.push(bio::gzip_compressor());
    if (format == "bzip2") out.push(bio::bzip2_compressor());
    if (format == "xz") out.push(bio::lzma_compressor());
    if (format == "zstd") out.push(bio::zstd_compressor());
    out.push(bytes);
    out << text;
  }
  return bytes.str();
}

// Every line that could be read from `bytes` (written to a file of this test's own, as ctest runs
// tests side by side), and the input's ReadStatus.
std::pair<std::vector<std::string>, Status> ReadLines(const std::string& bytes) {
  const std::string path =
      TempPath(std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
               ".damaged.dat");
  std::ofstream(path, std::ios::binary) << bytes;
  auto input = InputFile::Open(path);
  EXPECT_TRUE(input.ok());
  if (!input.ok()) return {{}, input.status()};
  std::vector<std::string> lines;
  for (std::string line; std::getline((*input)->stream(), line);) lines.push_back(line);
  return {lines, (*input)->ReadStatus()};
}

std::string NumberedLines(int count) {
  std::string text;
  for (int i = 1; i <= count; ++i) text += "sentence " + std::to_string(i) + "\n";
  return text;
}

TEST(InputFileTest, DamagedCompressedDataIsAnErrorAfterTheIntactLines) {
  // Boost's filters said nothing at all of a truncated zstd file (its end taken for the data's),
  // dropped the last lines before a bzip2 or xz fault, and named no cause ("iostream error").
  const std::string text = NumberedLines(2000);
  for (const std::string format : {"gzip", "bzip2", "xz", "zstd"}) {
    SCOPED_TRACE(format);
    const std::string whole = Compressed(format, text);
    auto [lines, status] = ReadLines(whole);
    EXPECT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(lines.size(), 2000u);
    // Two streams one after the other, as `cat a.gz b.gz` makes: both read.
    std::tie(lines, status) = ReadLines(whole + Compressed(format, "one more\n"));
    EXPECT_TRUE(status.ok()) << status.message();
    ASSERT_EQ(lines.size(), 2001u);
    EXPECT_EQ(lines.back(), "one more");
    // Cut short: an error saying so.
    std::tie(lines, status) = ReadLines(whole.substr(0, whole.size() - 4));
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find("truncated"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("damaged.dat"), std::string::npos) << status.message();
    // Something else after the data: every line of the data, then an error naming it.
    std::tie(lines, status) = ReadLines(whole + "appended text\n");
    EXPECT_EQ(lines.size(), 2000u);
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find("trailing data"), std::string::npos) << status.message();
  }
}

TEST(InputFileTest, ABadGzipCrcIsNamed) {
  std::string bytes = Compressed("gzip", NumberedLines(50));
  bytes[bytes.size() - 8] ^= 0x01;  // the CRC-32 of the trailer
  auto [lines, status] = ReadLines(bytes);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("CRC mismatch"), std::string::npos) << status.message();
}

TEST(InputFileTest, AFlippedBitInsideCompressedDataIsAnError) {
  // (zstd only checks a frame's content when it carries a checksum, which the zstd tool writes
  // and Boost's compressor does not.)
  for (const std::string format : {"gzip", "bzip2", "xz"}) {
    SCOPED_TRACE(format);
    std::string bytes = Compressed(format, NumberedLines(2000));
    bytes[bytes.size() / 2] ^= 0x10;
    auto [lines, status] = ReadLines(bytes);
    EXPECT_FALSE(status.ok());
    EXPECT_LT(lines.size(), 2001u);
  }
}

TEST(InputFileTest, RefusesCompressionItCannotReadNamingIt) {
  std::string path = TempPath("archive.zip");
  std::ofstream(path, std::ios::binary) << std::string("PK\x03\x04\x14\x00\x00\x00", 8);
  auto input = InputFile::Open(path);
  ASSERT_FALSE(input.ok());
  EXPECT_NE(input.status().message().find("zip"), std::string::npos);
  EXPECT_NE(input.status().message().find(path), std::string::npos);
}

TEST(InputFileTest, KnowsItsSizeAndHowFarItRead) {
  std::string path = TempPath("sized.txt");
  std::ofstream(path) << "one\ntwo\n";
  auto input = InputFile::Open(path);
  ASSERT_TRUE(input.ok());
  EXPECT_EQ((*input)->size(), 8);
  std::string line;
  std::getline((*input)->stream(), line);
  EXPECT_EQ(line, "one");
  EXPECT_EQ((*input)->BytesConsumed(), 4);
  EXPECT_TRUE((*input)->LineReady());
}

// A pipe whose writer has sent one line and waits: the line must be readable without the end of
// input (the writer closes only after the reader has the line).
TEST(InputFileTest, ReadsALineFromAPipeBeforeTheWriterCloses) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const int saved_stdin = dup(0);
  ASSERT_EQ(dup2(fds[0], 0), 0);
  close(fds[0]);
  ASSERT_EQ(write(fds[1], "first line\n", 11), 11);
  auto input = InputFile::Open("-");
  ASSERT_TRUE(input.ok());
  EXPECT_TRUE((*input)->LineReady());
  std::string line;
  ASSERT_TRUE(std::getline((*input)->stream(), line));  // would hang if it waited for EOF
  EXPECT_EQ(line, "first line");
  EXPECT_FALSE((*input)->LineReady());  // nothing more has arrived, and the pipe is open
  EXPECT_EQ((*input)->size(), -1);
  close(fds[1]);
  EXPECT_TRUE((*input)->LineReady());  // the end of input is ready
  EXPECT_FALSE(std::getline((*input)->stream(), line));
  dup2(saved_stdin, 0);
  close(saved_stdin);
}

TEST(InputFileTest, FindsInvalidUtf8) {
  EXPECT_EQ(FindInvalidUtf8("plain ascii"), std::string_view::npos);
  EXPECT_EQ(FindInvalidUtf8("na\xc3\xafve \xe2\x80\x9cq\xe2\x80\x9d \xf0\x9f\x98\x80"),
            std::string_view::npos);
  EXPECT_EQ(FindInvalidUtf8("ab\xff"), 2u);
  EXPECT_EQ(FindInvalidUtf8("a\xc3"), 1u);            // truncated
  EXPECT_EQ(FindInvalidUtf8("\xc0\xaf"), 0u);         // overlong '/'
  EXPECT_EQ(FindInvalidUtf8("x\xed\xa0\x80"), 1u);    // surrogate
  EXPECT_EQ(FindInvalidUtf8("Latin-1 caf\xe9 ."), 11u);
}

TEST(InputFileTest, ReplacesInvalidUtf8AndNulBytesByteForByte) {
  std::string text = "valid na\xc3\xafve";
  EXPECT_EQ(ReplaceInvalidUtf8(&text), std::string::npos);
  EXPECT_EQ(text, "valid na\xc3\xafve");
  text = "a\xff\xfe b";
  EXPECT_EQ(ReplaceInvalidUtf8(&text), 1u);
  EXPECT_EQ(text, "a\xef\xbf\xbd\xef\xbf\xbd b");
  text = std::string("x\0y", 3);
  EXPECT_EQ(ReplaceInvalidUtf8(&text), 1u);
  EXPECT_EQ(text, "x\xef\xbf\xbdy");
  text = "caf\xe9 \xc3";  // Latin-1, then a sequence cut short
  EXPECT_EQ(ReplaceInvalidUtf8(&text), 3u);
  EXPECT_EQ(text, "caf\xef\xbf\xbd \xef\xbf\xbd");
  EXPECT_EQ(FindInvalidUtf8(text), std::string::npos);
}

TEST(InputFileTest, StripsAByteOrderMark) {
  std::string text = "\xef\xbb\xbfthe dog";
  EXPECT_TRUE(StripByteOrderMark(&text));
  EXPECT_EQ(text, "the dog");
  EXPECT_FALSE(StripByteOrderMark(&text));
  EXPECT_EQ(text, "the dog");
}

}  // namespace
}  // namespace cky
