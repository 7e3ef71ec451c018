#include "common/input_file.h"

#include <gtest/gtest.h>

#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace cky
