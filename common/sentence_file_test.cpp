#include "common/sentence_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace cky {
namespace {

TEST(SentenceFileTest, SplitsOnAnyWhitespace) {
  EXPECT_EQ(SplitWhitespace("  a\tb  c\r"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(SplitWhitespace(" \t ").empty());
}

TEST(SentenceFileTest, ReadsSentencesKeepingOrSkippingBlankLines) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "cky_sentence_file_test.txt").string();
  std::ofstream(path) << "Dogs bark .\n\n  Cats  sleep\n";
  auto skipped = ReadTokenizedSentences(path);
  ASSERT_TRUE(skipped.ok());
  ASSERT_EQ(skipped->size(), 2u);
  EXPECT_EQ((*skipped)[1], (std::vector<std::string>{"Cats", "sleep"}));
  auto kept = ReadTokenizedSentences(path, /*keep_empty=*/true);
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept->size(), 3u);
  EXPECT_TRUE((*kept)[1].empty());
  EXPECT_FALSE(ReadTokenizedSentences(path + ".missing").ok());
}

}  // namespace
}  // namespace cky
