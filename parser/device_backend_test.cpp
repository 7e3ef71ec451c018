#include "parser/device_backend.h"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace cky {
namespace {

// A device backend without a device: batches of at most `batch` sentences, each "parsed" into an
// outcome whose message names the sentence's first word. A batch's outcomes are handed on through
// BesideNextBatch; RunBatch calls RunBesideDevice where a real backend's device work would be
// queued, unless `beside` is false. `fail_batch` makes the RunBatch call of that number fail
// (before the device work: RunBesideDevice not called). Each step is logged.
class FakeDeviceBackend : public DeviceBackend {
 public:
  FakeDeviceBackend(int batch, bool beside, int fail_batch = -1)
      : DeviceBackend({.max_batch_sentences = batch, .extraction_threads = 2}),
        beside_(beside),
        fail_batch_(fail_batch) {}
  std::string name() const override { return "fake"; }
  std::vector<std::string> log;

 protected:
  Limits BatchLimits() const override {
    return {.budget = 1000, .bytes = [](int32_t) { return size_t{1}; }};
  }
  StatusOr<std::unique_ptr<Backend>> MakeCpuFallback() override {
    return Status::Error("no CPU here");
  }
  std::optional<DeviceFailure> RunBatch(std::span<const SentenceInput> sentences,
                                        const std::vector<size_t>& batch, bool /*pruned*/,
                                        std::vector<ParseOutcome>* outcomes) override {
    const int number = calls_++;
    const std::string name = "batch " + std::to_string(number);
    log.push_back("run " + name + (NextBatch() ? " (next known)" : ""));
    if (number == fail_batch_) {
      log.push_back("fail " + name);
      return DeviceFailure{.out_of_memory = true};
    }
    if (beside_) RunBesideDevice();
    BesideNextBatch([this, name, batch, sentences, outcomes](ThreadPool& pool) {
      log.push_back("outcomes of " + name);
      pool.ParallelFor(int(batch.size()), [&](int b, int) {
        const size_t i = batch[b];
        (*outcomes)[i].status = ParseStatus::kOk;
        (*outcomes)[i].message = sentences[i].words.front();
        Done(i, (*outcomes)[i], /*pruned=*/false);
      });
    });
    log.push_back("return " + name);
    return std::nullopt;
  }

 private:
  bool beside_;
  int fail_batch_;
  int calls_ = 0;
};

std::vector<SentenceInput> Sentences(int count) {
  std::vector<SentenceInput> sentences;
  for (int i = 0; i < count; ++i) {
    // Lengths 1..3 in turn: the batches are cut longest first.
    sentences.push_back({.words = std::vector<std::string>(1 + i % 3, "w" + std::to_string(i))});
  }
  return sentences;
}

void ExpectEveryOutcome(const std::vector<SentenceInput>& sentences,
                        const std::vector<ParseOutcome>& outcomes) {
  ASSERT_EQ(outcomes.size(), sentences.size());
  for (size_t i = 0; i < sentences.size(); ++i) {
    EXPECT_EQ(outcomes[i].status, ParseStatus::kOk) << i;
    EXPECT_EQ(outcomes[i].message, sentences[i].words.front()) << i;
  }
}

TEST(DeviceBackendTest, ABatchsHeldWorkRunsBesideTheNextBatchsDeviceWork) {
  FakeDeviceBackend backend(/*batch=*/2, /*beside=*/true);
  const std::vector<SentenceInput> sentences = Sentences(6);
  std::atomic<int> told{0};  // from the extraction threads
  const std::vector<ParseOutcome> outcomes =
      backend.ParseBatch(sentences, [&](size_t, const ParseOutcome&) { ++told; });
  ExpectEveryOutcome(sentences, outcomes);
  EXPECT_EQ(told, int(sentences.size()));
  // Batch k's outcomes are made while batch k + 1 runs (after its device work is queued); the last
  // batch's at once.
  EXPECT_EQ(backend.log,
            (std::vector<std::string>{"run batch 0 (next known)", "return batch 0",
                                      "run batch 1 (next known)", "outcomes of batch 0",
                                      "return batch 1", "run batch 2", "outcomes of batch 1",
                                      "outcomes of batch 2", "return batch 2"}));
}

TEST(DeviceBackendTest, HeldWorkRunsBeforeTheNextBatchsOwnWhenItNeverGotToItsDeviceWork) {
  FakeDeviceBackend backend(/*batch=*/2, /*beside=*/false);
  const std::vector<SentenceInput> sentences = Sentences(6);
  ExpectEveryOutcome(sentences, backend.ParseBatch(sentences));
  // Batch 1 never calls RunBesideDevice: batch 0's outcomes come after it returns; batch 2's own
  // work (no next batch: at once) runs batch 1's first.
  EXPECT_EQ(backend.log,
            (std::vector<std::string>{"run batch 0 (next known)", "return batch 0",
                                      "run batch 1 (next known)", "return batch 1",
                                      "outcomes of batch 0", "run batch 2", "outcomes of batch 1",
                                      "outcomes of batch 2", "return batch 2"}));
}

TEST(DeviceBackendTest, AFailedBatchRunsTheHeldWorkBeforeItsHalves) {
  // Batch 1 fails before its device work; its halves (batches 2 and 3) run after batch 0's
  // outcomes are made, each half's outcomes beside the next half.
  FakeDeviceBackend backend(/*batch=*/2, /*beside=*/true, /*fail_batch=*/1);
  const std::vector<SentenceInput> sentences = Sentences(6);
  ExpectEveryOutcome(sentences, backend.ParseBatch(sentences));
  EXPECT_EQ(backend.log,
            (std::vector<std::string>{
                "run batch 0 (next known)", "return batch 0", "run batch 1 (next known)",
                "fail batch 1", "outcomes of batch 0", "run batch 2 (next known)", "return batch 2",
                "run batch 3 (next known)", "outcomes of batch 2", "return batch 3", "run batch 4",
                "outcomes of batch 3", "outcomes of batch 4", "return batch 4"}));
}

}  // namespace
}  // namespace cky
