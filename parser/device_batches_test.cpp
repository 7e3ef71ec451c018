#include "parser/device_batches.h"

#include <gtest/gtest.h>

namespace cky {
namespace {

TEST(LongestFirstBatchesTest, LongestFirstWithinTheLimitsEveryIndexOnce) {
  const std::vector<int32_t> lengths = {3, 9, 1, 9, 5, 2, 7, 3};
  std::vector<size_t> candidates = {0, 1, 2, 3, 4, 5, 6, 7};
  const auto length = [&](size_t i) { return lengths[i]; };
  const auto bytes = [](int32_t n) { return size_t(n) * 10; };
  const auto batches =
      LongestFirstBatches(candidates, length, bytes, {.max_sentences = 3, .budget = 200});
  // 9, 9 (180 bytes; a 7 would pass 200), then 7, 5, 3 (150), then 3, 2, 1: ties keep input order.
  const std::vector<std::vector<size_t>> expected = {{1, 3}, {6, 4, 0}, {7, 5, 2}};
  EXPECT_EQ(batches, expected);
}

TEST(LongestFirstBatchesTest, TheSecondBudgetCutsToo) {
  const std::vector<int32_t> lengths = {4, 4, 4, 4};
  const auto batches = LongestFirstBatches(
      {0, 1, 2, 3}, [&](size_t i) { return lengths[i]; }, [](int32_t) { return size_t(1); },
      {.max_sentences = 10, .budget = 100, .also_budget = 8, .also_bytes = [](int32_t n) {
         return size_t(n);
       }});
  const std::vector<std::vector<size_t>> expected = {{0, 1}, {2, 3}};
  EXPECT_EQ(batches, expected);
}

TEST(LongestFirstBatchesTest, NoCandidatesNoBatches) {
  EXPECT_TRUE(LongestFirstBatches(
                  {}, [](size_t) { return 1; }, [](int32_t) { return size_t(1); },
                  {.max_sentences = 4, .budget = 10})
                  .empty());
}

// Each run is told the batch that comes after it (null for the last); a failed batch's halves are
// told the same one.
TEST(RunInDeviceBatchesTest, EachRunKnowsTheNextBatch) {
  const std::vector<int32_t> lengths = {3, 9, 1, 9, 5, 2, 7, 3};
  std::vector<std::vector<size_t>> runs;
  std::vector<std::optional<std::vector<size_t>>> nexts;
  RunInDeviceBatches(
      {0, 1, 2, 3, 4, 5, 6, 7}, [&](size_t i) { return lengths[i]; },
      [](int32_t n) { return size_t(n) * 10; }, {.max_sentences = 3, .budget = 200},
      [&](const std::vector<size_t>& b,
          const std::vector<size_t>* next) -> std::optional<DeviceFailure> {
        runs.push_back(b);
        nexts.push_back(next ? std::optional(*next) : std::nullopt);
        if (b.size() == 3 && b[0] == 6) return DeviceFailure{.out_of_memory = true};
        return std::nullopt;
      },
      [](size_t, const DeviceFailure&) { ADD_FAILURE() << "no sentence fails alone"; });
  // Batches {1, 3}, {6, 4, 0} (out of memory: {6}, then {4, 0}), {7, 5, 2}.
  const std::vector<std::vector<size_t>> expected_runs = {
      {1, 3}, {6, 4, 0}, {6}, {4, 0}, {7, 5, 2}};
  EXPECT_EQ(runs, expected_runs);
  const std::vector<size_t> second = {6, 4, 0}, third = {7, 5, 2};
  const std::vector<std::optional<std::vector<size_t>>> expected_nexts = {second, third, third,
                                                                          third, std::nullopt};
  EXPECT_EQ(nexts, expected_nexts);
}

// A device that fails every batch holding sentence 5 (and, out of memory, any batch of more than 4
// sentences): the others all run, in batches no larger than needed, and 5 alone is handed back.
TEST(RunSplittingFailedBatchesTest, FailuresStayWithTheSentencesTheyConcern) {
  std::vector<size_t> batch(10);
  for (size_t i = 0; i < batch.size(); ++i) batch[i] = i;
  std::vector<size_t> parsed;
  std::vector<std::vector<size_t>> runs;
  std::vector<std::pair<size_t, std::string>> failed;
  RunSplittingFailedBatches(
      batch,
      [&](const std::vector<size_t>& b) -> std::optional<DeviceFailure> {
        runs.push_back(b);
        if (b.size() > 4) return DeviceFailure{.out_of_memory = true};
        for (size_t i : b)
          if (i == 5) return DeviceFailure{.error = "launch failed"};
        parsed.insert(parsed.end(), b.begin(), b.end());
        return std::nullopt;
      },
      [&](size_t i, const DeviceFailure& f) { failed.emplace_back(i, f.Why()); });
  EXPECT_EQ(parsed, (std::vector<size_t>{0, 1, 2, 3, 4, 6, 7, 8, 9}));
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].first, 5u);
  EXPECT_EQ(failed[0].second, "failed on the device (launch failed)");
  // 10 -> 5 + 5 (out of memory) -> 2 + 3, 2 + 3; {5, 6} fails -> 5 and 6 alone.
  EXPECT_EQ(runs.front().size(), 10u);
  for (const auto& r : runs) EXPECT_FALSE(r.empty());
}

TEST(RunSplittingFailedBatchesTest, OutOfMemoryAloneIsReportedAsSuch) {
  std::vector<std::pair<size_t, DeviceFailure>> failed;
  RunSplittingFailedBatches(
      {7}, [](const std::vector<size_t>&) { return DeviceFailure{.out_of_memory = true}; },
      [&](size_t i, const DeviceFailure& f) { failed.emplace_back(i, f); });
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].first, 7u);
  const ParseOutcome outcome = DeviceFailureOutcome(failed[0].second);
  EXPECT_EQ(outcome.status, ParseStatus::kOutOfMemory);
  EXPECT_EQ(outcome.message, "does not fit in device memory");
  EXPECT_EQ(DeviceFailureOutcome({.error = "x"}).status, ParseStatus::kFailed);
}

}  // namespace
}  // namespace cky
