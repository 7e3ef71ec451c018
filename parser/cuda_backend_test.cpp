// What is specific to the CUDA Viterbi backend (parser/cuda_backend.h); its comparisons with the
// CPU reference, every kernel variant on every fixture, are rows of
// parser/backend_conformance_test.cpp. Here: an unknown kernel's error, the presence masks'
// statistics, the allowed mask, the CPU fallback for a sentence over the batch budget, and device
// failures kept local (a fake device that fails on purpose, and injected faults on a GPU). Each
// parse is still compared with the reference (backend_test_support.h: trees identical, root scores
// within 1e-5 relative). The GPU tests skip without a CUDA device.
#include "parser/cuda_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "cuda/common/fault_injection.h"
#include "cuda/viterbi/viterbi.h"
#include "parser/backend_test_support.h"
#include "parser/cpu_backend.h"
#include "parser/viterbi_cpu.h"

namespace cky {
namespace {

const OutcomeComparison kOnDevice{.score = kDeviceFloatTolerance};

// A fixture of backend_test_support.h, which the caller asserts is there (a random grammar).
const TestFixture& Fixture(const std::string& name) {
  std::string skip;
  const TestFixture* fixture = FindTestFixture(name, &skip);
  if (!fixture) throw std::runtime_error(name + ": " + skip);
  return *fixture;
}

TEST(CudaBackendTest, ReportsUnknownKernel) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  BerkeleyModel model = MakeRandomModel({});
  auto backend = MakeCudaBackend(model.grammar, {.kernel = "no-such-kernel"});
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.status().message().find("no-such-kernel"), std::string::npos);
}

// The sparse grammar's batch of 8 copies each of 8 sentences of 10 words (fixture sparse_copies):
// each group of 8 cells holds one sentence's cell, so the presence masks skip most (tile, group)
// iterations of pair-seg-g8-a4-m (92% by a CPU count of the same masks). The trees of every kernel
// on it, read on the device and on the host, are conformance rows.
TEST(CudaBackendTest, PresenceMasksSkipMostTiles) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  const TestFixture& f = Fixture("sparse_copies");
  const Grammar& g = f.grammar->grammar();
  std::string error;
  auto device =
      cuda::DeviceViterbi::Create(CudaGrammarView(g), {.kernel = "pair-seg-g8-a4-m"}, &error);
  ASSERT_TRUE(device) << error;
  const std::vector<SentenceInput> inputs = ScoredInputs(*f.grammar, f.sentences);
  std::vector<cuda::SentenceRef> refs;
  for (const SentenceInput& input : inputs)
    refs.push_back({input.lexical.length, input.lexical.scores.data()});
  device->SetPresenceStats(true);
  std::vector<const float*> charts;
  ASSERT_EQ(device->InsideBatch(refs, &charts, &error), cuda::BatchResult::kOk) << error;
  const std::vector<double> skipped = device->SkippedGroupsBySpan();
  const std::vector<double> present = device->PresentSymbolsBySpan();
  double mean_skipped = 0;
  int spans = 0;
  for (size_t w = 2; w < skipped.size(); ++w, ++spans) mean_skipped += skipped[w];
  ASSERT_GT(spans, 0);
  mean_skipped /= spans;
  EXPECT_GT(mean_skipped, 0.5) << "the masks should skip most (tile, group) iterations";
  ASSERT_GT(present.size(), 1u);
  EXPECT_LT(present[1], 0.5 * g.num_symbols());
}

// SentenceRef::allowed (the input for coarse-to-fine pruning): all ones changes nothing; a symbol
// pruned from every cell gets -infinity everywhere.
TEST(CudaBackendTest, AllowedMaskPrunesSymbols) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  const TestGrammar grammar = MakeRandomTestGrammar({.seed = 4});
  const Grammar& g = grammar.grammar();
  const LexicalScores lexical =
      ScoredInputs(grammar, {{"w1", "w2", "w3", "w4", "w5", "w6"}})[0].lexical;
  const size_t cells = Chart::NumCells(lexical.length);
  std::string error;
  auto device = cuda::DeviceViterbi::Create(CudaGrammarView(g), {}, &error);
  ASSERT_TRUE(device) << error;
  std::vector<const float*> charts;
  ASSERT_EQ(device->InsideBatch({{lexical.length, lexical.scores.data()}}, &charts, &error),
            cuda::BatchResult::kOk);
  const std::vector<float> plain(charts[0], charts[0] + cells * g.num_states());
  std::vector<uint8_t> all(cells * g.num_symbols(), 1);
  ASSERT_EQ(
      device->InsideBatch({{lexical.length, lexical.scores.data(), all.data()}}, &charts, &error),
      cuda::BatchResult::kOk);
  EXPECT_EQ(plain, std::vector<float>(charts[0], charts[0] + cells * g.num_states()));
  int32_t pruned = -1;  // a symbol other than ROOT's with a finite score somewhere
  for (size_t i = 0; i < plain.size() && pruned < 0; ++i) {
    const int32_t state = static_cast<int32_t>(i % g.num_states());
    if (plain[i] > kNegInf && g.state_symbol[state] != g.state_symbol[Grammar::kRootState])
      pruned = g.state_symbol[state];
  }
  ASSERT_GE(pruned, 0);
  std::vector<uint8_t> mask = all;
  for (size_t c = 0; c < cells; ++c) mask[c * g.num_symbols() + pruned] = 0;
  ASSERT_EQ(
      device->InsideBatch({{lexical.length, lexical.scores.data(), mask.data()}}, &charts, &error),
      cuda::BatchResult::kOk);
  int finite_before = 0;
  for (size_t c = 0; c < cells; ++c) {
    for (int32_t s = 0; s < g.num_states(); ++s) {
      if (g.state_symbol[s] != pruned) continue;
      finite_before += plain[c * g.num_states() + s] > kNegInf;
      EXPECT_EQ(charts[0][c * g.num_states() + s], -std::numeric_limits<float>::infinity());
    }
  }
  EXPECT_GT(finite_before, 0) << "pick a symbol that the sentence uses";
}

// A budget of two 12-word sentences (fixture splits): batches of different sizes, and the 30-word
// sentence 5 never fits and is parsed on the CPU. (Batches of 3 sentences are a conformance row.)
TEST(CudaBackendTest, FallsBackToCpuForSentencesThatNeverFit) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  const TestFixture& f = Fixture("splits");
  const Grammar& g = f.grammar->grammar();
  ASSERT_EQ(f.sentences[5].size(), 30u);
  CudaBackendOptions small;
  small.device.max_batch_bytes =
      2 * cuda::BatchBytesForSentence(g.num_states(), g.num_symbols(), 12);
  small.device.max_batch_sentences = 1000;
  auto backend = MakeCudaBackend(g, small);
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  const auto actual = ParseWith(*f.grammar, std::move(*backend), f.sentences);
  ExpectSameOutcomes(OracleOutcomes(f, ReferenceViterbiOracle()), actual, kOnDevice, "small budget",
                     f.sentences);
  ASSERT_EQ(actual[5].status, ParseStatus::kOk);
  EXPECT_NE(actual[5].message.find("parsed on the CPU"), std::string::npos) << actual[5].message;
}

// ---------------------------------------------------------------------------------------------
// Failures stay local (issue 16). Without a device: a fake DeviceViterbi computes charts on the
// CPU (as floats, like the device) and fails batches as cuda/common/fault_injection.h says, so the
// adapter's retry logic runs in CI.

class FakeDevice : public cuda::DeviceViterbi {
 public:
  // `calls` counts InsideBatch calls; it outlives the device (which the backend owns).
  FakeDevice(const Grammar& grammar, const std::string& faults, std::vector<int32_t>* computed,
             int* calls)
      : grammar_(grammar), cpu_(grammar), computed_(computed), calls_(calls) {
    std::string error;
    EXPECT_TRUE(cuda::FaultInjector::Parse(faults, &faults_, &error)) << error;
  }
  const std::string& kernel() const override { return name_; }
  size_t BytesForSentence(int32_t length) const override {
    return cuda::BatchBytesForSentence(grammar_.num_states(), grammar_.num_symbols(), length);
  }
  size_t BatchBudget() const override { return size_t(1) << 30; }
  void SetProfiling(bool) override {}
  std::string ProfileReport() const override { return ""; }
  cuda::BatchResult InsideBatch(const std::vector<cuda::SentenceRef>& batch,
                                std::vector<const float*>* charts, std::string* error) override {
    ++*calls_;
    if (faults_.FailAllocation()) {
      *error = "injected allocation failure";
      return cuda::BatchResult::kOutOfMemory;
    }
    std::vector<int32_t> lengths;
    for (const cuda::SentenceRef& s : batch) lengths.push_back(s.length);
    if (faults_.FailLaunch(lengths)) {
      *error = "kernel launch failed: injected";
      return cuda::BatchResult::kFailed;
    }
    std::vector<std::vector<float>>& buffer = buffers_[next_];  // valid until the second next call
    next_ = 1 - next_;
    buffer.assign(batch.size(), {});
    charts->assign(batch.size(), nullptr);
    for (size_t i = 0; i < batch.size(); ++i) {
      LexicalScores lexical;
      lexical.length = batch[i].length;
      lexical.num_states = grammar_.num_states();
      lexical.scores.assign(batch[i].lexical,
                            batch[i].lexical + size_t(batch[i].length) * grammar_.num_states());
      Chart chart;
      cpu_.Inside(lexical, &chart);
      buffer[i].assign(chart.data().begin(), chart.data().end());
      (*charts)[i] = buffer[i].data();
      computed_->push_back(batch[i].length);
    }
    return cuda::BatchResult::kOk;
  }

 private:
  const Grammar& grammar_;
  CpuViterbi cpu_;
  cuda::FaultInjector faults_;
  std::vector<int32_t>* computed_;
  std::string name_ = "fake";
  std::vector<std::vector<float>> buffers_[2];
  int next_ = 0;
  int* calls_;
};

struct FaultCase {
  const TestGrammar& grammar = *Fixture("splits").grammar;
  const BerkeleyModel& model = grammar.model;
  // Lengths 1..12, distinct per sentence where it matters: the 7-word one is sentence 3.
  std::vector<std::vector<std::string>> sentences = [this] {
    auto s = MakeRandomSentences(model, 10, 1, 12, 3);
    for (auto& words : s)
      if (words.size() == 7) words.push_back("w1");
    s.insert(s.begin() + 3, std::vector<std::string>(7, "w2"));
    return s;
  }();
  std::vector<ParseOutcome> expected =
      ParseWith(grammar, MakeReferenceBackend(model.grammar), sentences, kOptions);
  // No second pass with a wider lexicon: each sentence goes to the backend once.
  static inline const ParserOptions kOptions{.retry_with_wider_lexicon = false};
};

// Parses with the fake device; checks every outcome against the reference and returns them.
std::vector<ParseOutcome> ParseWithFakeDevice(const FaultCase& c, const std::string& faults,
                                              int max_batch_sentences, int* calls,
                                              std::vector<int32_t>* computed) {
  *calls = 0;
  auto device = std::make_unique<FakeDevice>(c.model.grammar, faults, computed, calls);
  CudaBackendOptions options;
  options.device.max_batch_sentences = max_batch_sentences;
  std::vector<ParseOutcome> actual =
      ParseWith(c.grammar, MakeCudaBackendForDevice(c.model.grammar, std::move(device), options),
                c.sentences, FaultCase::kOptions);
  ExpectSameOutcomes(c.expected, actual, kOnDevice, faults, c.sentences);
  return actual;
}

TEST(CudaBackendFaultTest, ASentenceThatAlwaysFailsGoesToTheCpuAndItsBatchMatesKeepTheirTrees) {
  FaultCase c;
  ASSERT_EQ(c.sentences[3].size(), 7u);
  int parsed = 0;
  for (const ParseOutcome& o : c.expected) parsed += o.status == ParseStatus::kOk;
  ASSERT_GT(parsed, 5) << "the test needs sentences with a parse";
  int calls = 0;
  std::vector<int32_t> computed;
  const auto actual = ParseWithFakeDevice(c, "length:7", 256, &calls, &computed);
  ASSERT_EQ(actual.size(), c.sentences.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (i == 3) {
      EXPECT_NE(actual[i].message.find("parsed on the CPU"), std::string::npos)
          << actual[i].message;
      EXPECT_NE(actual[i].message.find("injected"), std::string::npos) << actual[i].message;
    } else if (c.expected[i].status == ParseStatus::kOk) {
      EXPECT_EQ(actual[i].message, "") << "sentence " << i;
    }
  }
  // Every other sentence was computed on the device exactly once; the 7-word one never.
  EXPECT_EQ(computed.size(), c.sentences.size() - 1);
  EXPECT_EQ(std::count(computed.begin(), computed.end(), 7), 0);
  // One failing batch of 11, then halves: the half with the 7-word sentence keeps failing down to
  // the single sentence (log2(11) rounded up levels), the others succeed on the first retry.
  EXPECT_GE(calls, 1 + 2 * 3);
  EXPECT_LE(calls, 1 + 2 * 4);
}

TEST(CudaBackendFaultTest, FailedLaunchesAndAllocationsAreRetriedInSmallerBatches) {
  FaultCase c;
  for (const std::string faults : {"launch:1", "malloc:1", "launch:2,malloc:3,launch:5"}) {
    for (int per_batch : {256, 3}) {
      int calls = 0;
      std::vector<int32_t> computed;
      const auto actual = ParseWithFakeDevice(c, faults, per_batch, &calls, &computed);
      // A failed batch of several sentences is retried in halves on the device; a failed batch
      // of one sentence goes to the CPU. Every sentence is computed once, here or there.
      size_t on_cpu = 0;
      for (size_t i = 0; i < actual.size(); ++i) {
        if (actual[i].message.empty()) continue;
        ++on_cpu;
        EXPECT_NE(actual[i].message.find("parsed on the CPU"), std::string::npos)
            << faults << " sentence " << i << ": " << actual[i].message;
      }
      EXPECT_EQ(computed.size() + on_cpu, c.sentences.size()) << faults << " " << per_batch;
      if (per_batch == 256) EXPECT_EQ(on_cpu, 0u) << faults;  // the first batch holds 11
    }
  }
}

TEST(CudaBackendFaultTest, EveryBatchFailingSendsEverySentenceToTheCpuInOrder) {
  FaultCase c;
  std::string faults;
  for (int i = 1; i <= 100; ++i)
    faults += (i > 1 ? "," : "") + std::string("malloc:") + std::to_string(i);
  int calls = 0;
  std::vector<int32_t> computed;
  const auto actual = ParseWithFakeDevice(c, faults, 4, &calls, &computed);
  EXPECT_TRUE(computed.empty());
  for (size_t i = 0; i < actual.size(); ++i)
    if (c.expected[i].status == ParseStatus::kOk)
      EXPECT_NE(actual[i].message.find("does not fit in device memory"), std::string::npos)
          << actual[i].message;
}

// On the device: CKY_FAULT_INJECT set around the backend's creation.
class ScopedFaults {
 public:
  explicit ScopedFaults(const std::string& spec) {
    setenv(cuda::FaultInjector::kEnvironmentVariable, spec.c_str(), 1);
  }
  ~ScopedFaults() { unsetenv(cuda::FaultInjector::kEnvironmentVariable); }
};

TEST(CudaBackendFaultTest, InjectedDeviceFaultsStayLocalOnTheGpu) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  FaultCase c;
  for (const std::string faults : {"length:7", "launch:1", "malloc:1", "launch:2,malloc:3"}) {
    for (const std::string kernel : {"", "pair-fused-g8", "block-reduce"}) {
      std::unique_ptr<Backend> backend;
      {
        ScopedFaults scoped(faults);
        auto made = MakeCudaBackend(
            c.model.grammar,
            CudaBackendOptions{.kernel = kernel, .device = {.max_batch_sentences = 4}});
        ASSERT_TRUE(made.ok()) << made.status().message();
        backend = std::move(*made);
      }
      const auto actual =
          ParseWith(c.grammar, std::move(backend), c.sentences, FaultCase::kOptions);
      ExpectSameOutcomes(c.expected, actual, kOnDevice, faults + " " + kernel, c.sentences);
      for (size_t i = 0; i < actual.size(); ++i) {
        if (c.expected[i].status != ParseStatus::kOk) continue;
        if (faults == "length:7" && i == 3)
          EXPECT_NE(actual[i].message.find("failed on the device"), std::string::npos)
              << actual[i].message;
        else
          EXPECT_EQ(actual[i].message, "") << faults << " " << kernel << " sentence " << i;
      }
    }
  }
}

TEST(CudaBackendFaultTest, MalformedFaultSpecificationIsAnError) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  FaultCase c;
  ScopedFaults scoped("launch:zero");
  auto made = MakeCudaBackend(c.model.grammar, CudaBackendOptions{});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("CKY_FAULT_INJECT"), std::string::npos);
}

}  // namespace
}  // namespace cky
