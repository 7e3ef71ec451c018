#include "common/input_file.h"

#include <gtest/gtest.h>

#include <boost/iostreams/filter/bzip2.hpp>
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filter/lzma.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>

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

}  // namespace
}  // namespace cky
