#include "common/test_variants.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace cky {
namespace {

std::vector<int> Shard(const char* value) {
  setenv("CKY_TEST_SHARD", value, 1);
  std::vector<int> items = {0, 1, 2, 3, 4, 5, 6};
  KeepTestShard(&items);
  unsetenv("CKY_TEST_SHARD");
  return items;
}

TEST(TestShardTest, KeepsEveryNthItemFromTheKth) {
  EXPECT_EQ(Shard("0/3"), (std::vector<int>{0, 3, 6}));
  EXPECT_EQ(Shard("2/3"), (std::vector<int>{2, 5}));
  EXPECT_EQ(Shard("0/1"), (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Shard("6/8"), (std::vector<int>{6}));
  EXPECT_EQ(Shard("7/8"), (std::vector<int>{}));
  EXPECT_EQ(Shard(""), (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(TestShardTest, TheSharesTogetherAreEveryItemOnce) {
  std::vector<int> together;
  for (const char* value : {"0/3", "1/3", "2/3"})
    for (int item : Shard(value)) together.push_back(item);
  std::sort(together.begin(), together.end());
  EXPECT_EQ(together, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(TestShardTest, KeepsTheSameShareOfInputsAndAnswers) {
  std::vector<int> inputs = {0, 1, 2, 3, 4, 5, 6};
  std::vector<char> answers = {'a', 'b', 'c', 'd', 'e', 'f', 'g'};
  setenv("CKY_TEST_SHARD", "1/3", 1);
  KeepTestShard(&inputs, &answers);
  std::vector<char> unequal(3);
  EXPECT_THROW(KeepTestShard(&inputs, &unequal), std::invalid_argument);
  unsetenv("CKY_TEST_SHARD");
  EXPECT_EQ(inputs, (std::vector<int>{1, 4}));
  EXPECT_EQ(answers, (std::vector<char>{'b', 'e'}));
}

TEST(TestShardTest, RejectsMalformedValues) {
  for (const char* value : {"3/3", "1", "1/0", "a/b", "1/3x", "-1/3"})
    EXPECT_THROW(Shard(value), std::invalid_argument) << value;
  unsetenv("CKY_TEST_SHARD");
}

TEST(ShortTestInputsTest, KeepsTheInputsOfAtMostTheLengthWithTheirAnswers) {
  // The first inputs kept stay where they are (and must not be emptied on the way).
  const std::vector<std::vector<int>> all = {{1}, {2, 3}, {4, 5, 6}, {}, {7}, {8, 9, 10, 11}};
  std::vector<std::vector<int>> inputs = all;
  std::vector<char> answers = {'a', 'b', 'c', 'd', 'e', 'f'};
  setenv("CKY_TEST_MAX_LENGTH", "2", 1);
  KeepShortTestInputs(&inputs, &answers);
  EXPECT_EQ(inputs, (std::vector<std::vector<int>>{{1}, {2, 3}, {}, {7}}));
  EXPECT_EQ(answers, (std::vector<char>{'a', 'b', 'd', 'e'}));
  std::vector<char> unequal(2);
  EXPECT_THROW(KeepShortTestInputs(&inputs, &unequal), std::invalid_argument);
  for (const char* value : {"x", "2x", "-1", " "}) {
    setenv("CKY_TEST_MAX_LENGTH", value, 1);
    EXPECT_THROW(KeepShortTestInputs(&inputs, &answers), std::invalid_argument) << value;
  }
  setenv("CKY_TEST_MAX_LENGTH", "", 1);
  inputs = all;
  answers = {'a', 'b', 'c', 'd', 'e', 'f'};
  KeepShortTestInputs(&inputs, &answers);
  unsetenv("CKY_TEST_MAX_LENGTH");
  EXPECT_EQ(inputs, all);
}

}  // namespace
}  // namespace cky
