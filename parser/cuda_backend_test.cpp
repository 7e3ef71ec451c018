// Every CUDA kernel variant against the CPU reference: identical best trees and statuses, root
// scores within a relative 1e-5 (the device computes in float; 1e-5 is also the tree extraction's
// tolerance, Berkeley's). Skips without a CUDA device; the real-grammar tests skip without
// ../shared (or $CKY_SHARED_DIR).
#include "parser/cuda_backend.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/sentence_file.h"
#include "common/test_variants.h"
#include "cuda/common/device.h"
#include "cuda/common/fault_injection.h"
#include "cuda/viterbi/viterbi.h"
#include "lexicon/lexicon.h"
#include "parser/cpu_backend.h"
#include "parser/parser.h"
#include "parser/random_grammar.h"
#include "parser/tree_extraction.h"
#include "parser/viterbi_cpu.h"

namespace cky {
namespace {

constexpr double kScoreTolerance = 1e-5;  // relative, ScoresMatch's |x - y| / (|x| + |y|)

std::string SharedDir() { return SharedDataDir(); }

std::vector<std::vector<std::string>> ReadSentences(const std::string& path) {
  auto sentences = ReadTokenizedSentences(path);
  return sentences.ok() ? *sentences : std::vector<std::vector<std::string>>{};
}

void ExpectSameOutcomes(const std::vector<ParseOutcome>& expected,
                        const std::vector<ParseOutcome>& actual, const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(expected[i].status, actual[i].status)
        << what << " sentence " << i << ": " << actual[i].message;
    if (expected[i].status != ParseStatus::kOk || actual[i].status != ParseStatus::kOk) continue;
    EXPECT_EQ(ToBracketString(expected[i].tree), ToBracketString(actual[i].tree))
        << what << " sentence " << i;
    EXPECT_TRUE(ScoresMatch(expected[i].log_score, actual[i].log_score, kScoreTolerance))
        << what << " sentence " << i << ": " << expected[i].log_score << " vs "
        << actual[i].log_score;
  }
}

// Parses `sentences` with the reference and with every kernel variant (options.kernel ignored).
void CompareAllKernels(const BerkeleyModel& model, const Lexicon& lexicon,
                       const std::vector<std::vector<std::string>>& sentences,
                       CudaBackendOptions options = {}) {
  Parser reference(model.grammar, lexicon, MakeReferenceBackend(model.grammar));
  const std::vector<ParseOutcome> expected = reference.Parse(sentences);
  int parsed = 0;
  for (const ParseOutcome& o : expected) parsed += o.status == ParseStatus::kOk;
  EXPECT_GT(parsed, 0) << "the comparison needs sentences with a parse";
  for (const std::string& kernel : CudaKernelNames()) {
    if (!TestVariantSelected(kernel)) continue;
    options.kernel = kernel;
    auto backend = MakeCudaBackend(model.grammar, options);
    ASSERT_TRUE(backend.ok()) << kernel << ": " << backend.status().message();
    EXPECT_EQ((*backend)->name(), "cuda/" + kernel);
    Parser parser(model.grammar, lexicon, std::move(*backend));
    ExpectSameOutcomes(expected, parser.Parse(sentences), kernel);
  }
}

#define SKIP_WITHOUT_DEVICE() \
  if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device"

TEST(CudaBackendTest, ReportsUnknownKernel) {
  SKIP_WITHOUT_DEVICE();
  BerkeleyModel model = MakeRandomModel({});
  auto backend = MakeCudaBackend(model.grammar, {.kernel = "no-such-kernel"});
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.status().message().find("no-such-kernel"), std::string::npos);
}

TEST(CudaBackendTest, EveryKernelMatchesReferenceOnRandomGrammars) {
  SKIP_WITHOUT_DEVICE();
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    RandomGrammarOptions options;
    options.phrasal_symbols = 6;
    options.tags = 4;
    options.substates = 3;
    options.seed = seed;
    BerkeleyModel model = MakeRandomModel(options);
    Lexicon lexicon = *Lexicon::Build(model);
    auto sentences = MakeRandomSentences(model, 30, 1, 25, seed * 13);
    AddLengthEdgeCases(60, &sentences);  // the longest in these tests
    sentences.push_back({});
    SCOPED_TRACE("seed " + std::to_string(seed));
    CompareAllKernels(model, lexicon, sentences);
  }
}

// Symbols of 35 substates: child pairs of 1,225 substate pairs, so the pair kernels cut them into
// bands, tiles hold hundreds of substate pairs (padded shared layouts wrap around the banks), and
// symbol blocks are not multiples of 4 floats (the aligned-row variants pad them).
TEST(CudaBackendTest, EveryKernelMatchesReferenceWithManySubstates) {
  SKIP_WITHOUT_DEVICE();
  RandomGrammarOptions options;
  options.phrasal_symbols = 2;
  options.tags = 2;
  options.substates = 35;
  options.base_rule_density = 0.25;
  options.seed = 11;
  BerkeleyModel model = MakeRandomModel(options);
  ASSERT_GT(model.grammar.num_binary_rules(), 35 * 35 * 35);
  Lexicon lexicon = *Lexicon::Build(model);
  auto sentences = MakeRandomSentences(model, 6, 3, 8, 99);
  sentences.push_back({"w1"});
  sentences.push_back({"w2", "w3"});
  CompareAllKernels(model, lexicon, sentences);
}

// A sparse grammar (few rules, one tag per word, few unaries), and a batch of 8 copies each of 8
// sentences of 10 words: each group of 8 cells holds one sentence's cell, so the presence masks
// skip most (tile, group) iterations of pair-seg-g8-a4-m (92% by a CPU count of the same masks).
// Every kernel still gives the reference's trees, read on the device and on the host.
TEST(CudaBackendTest, PresenceMasksSkipMostTilesAndKeepTheTrees) {
  SKIP_WITHOUT_DEVICE();
  RandomGrammarOptions options;
  options.phrasal_symbols = 30;
  options.tags = 12;
  options.substates = 2;
  options.base_rule_density = 0.008;
  options.unary_density = 0.005;
  options.vocabulary = 40;
  options.tags_per_word = 1;
  options.seed = 3;
  BerkeleyModel model = MakeRandomModel(options);
  Lexicon lexicon = *Lexicon::Build(model);
  std::vector<std::vector<std::string>> sentences;
  for (const auto& sentence : MakeRandomSentences(model, 8, 10, 10, 5))
    for (int copy = 0; copy < 8; ++copy) sentences.push_back(sentence);

  std::string error;
  auto device = cuda::DeviceViterbi::Create(CudaGrammarView(model.grammar),
                                            {.kernel = "pair-seg-g8-a4-m"}, &error);
  ASSERT_TRUE(device) << error;
  Parser scorer(model.grammar, lexicon, MakeReferenceBackend(model.grammar));
  std::vector<LexicalScores> lexical;
  for (const auto& words : sentences) lexical.push_back(scorer.ScoreWords(words));
  std::vector<cuda::SentenceRef> refs;
  for (const LexicalScores& l : lexical) refs.push_back({l.length, l.scores.data()});
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
  EXPECT_LT(present[1], 0.5 * model.grammar.num_symbols());

  CompareAllKernels(model, lexicon, sentences);
  CompareAllKernels(model, lexicon, sentences, CudaBackendOptions{.device_trees = false});
  // Sentences of other lengths mixed in (groups then hold several sentences' cells).
  auto mixed = MakeRandomSentences(model, 24, 2, 14, 6);
  CompareAllKernels(model, lexicon, mixed);
}

// SentenceRef::allowed (the input for coarse-to-fine pruning): all ones changes nothing; a symbol
// pruned from every cell gets -infinity everywhere.
TEST(CudaBackendTest, AllowedMaskPrunesSymbols) {
  SKIP_WITHOUT_DEVICE();
  RandomGrammarOptions options;
  options.seed = 4;
  BerkeleyModel model = MakeRandomModel(options);
  const Grammar& g = model.grammar;
  Lexicon lexicon = *Lexicon::Build(model);
  Parser scorer(g, lexicon, MakeReferenceBackend(g));
  const std::vector<std::string> words = {"w1", "w2", "w3", "w4", "w5", "w6"};
  const LexicalScores lexical = scorer.ScoreWords(words);
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

TEST(CudaBackendTest, VirtualParentsForAParentWithMoreRulesThanABlock) {
  SKIP_WITHOUT_DEVICE();
  RandomGrammarOptions options;
  options.phrasal_symbols = 5;
  options.tags = 4;
  options.substates = 4;
  options.big_parent_rules = 700;  // > 256 threads per block: several virtual parents
  options.seed = 5;
  BerkeleyModel model = MakeRandomModel(options);
  const Grammar& g = model.grammar;
  int32_t most = 0;
  for (int32_t p = 0; p < g.num_states(); ++p)
    most = std::max(most, g.binary_parent_begin[p + 1] - g.binary_parent_begin[p]);
  ASSERT_GT(most, 256);
  Lexicon lexicon = *Lexicon::Build(model);
  auto sentences = MakeRandomSentences(model, 20, 1, 20, 77);
  sentences.push_back({"w4"});
  sentences.push_back({"w0", "w1"});
  CompareAllKernels(model, lexicon, sentences);
}

// One batch of 1,000 sentences of 8 to 12 words on a grammar of small tiles: each block of the
// pair-seg kernels loops over several cell groups of its tile, so the -g variants take up to 4
// groups at once, and spans 1 and 2 have over 8,448 cells, so the -u unary pass takes 4 cells per
// block on a device of up to 132 SMs (fewer cells per block on larger ones). The smaller tests'
// batches reach neither.
TEST(CudaBackendTest, SeveralGroupsPerBlockAndSeveralCellsPerUnaryBlockKeepTheTrees) {
  SKIP_WITHOUT_DEVICE();
  RandomGrammarOptions options;
  options.phrasal_symbols = 6;
  options.tags = 4;
  options.substates = 3;
  options.seed = 2;
  BerkeleyModel model = MakeRandomModel(options);
  Lexicon lexicon = *Lexicon::Build(model);
  auto sentences = MakeRandomSentences(model, 1000, 8, 12, 21);
  int64_t one_word_cells = 0;
  for (const auto& words : sentences) one_word_cells += static_cast<int64_t>(words.size());
  ASSERT_GE(one_word_cells, 8 * 1000);
  CompareAllKernels(model, lexicon, sentences,
                    CudaBackendOptions{.device = {.max_batch_sentences = 1000}});
}

TEST(CudaBackendTest, SplitsBatchesAndFallsBackToCpuForSentencesThatNeverFit) {
  SKIP_WITHOUT_DEVICE();
  RandomGrammarOptions options;
  options.phrasal_symbols = 5;
  options.tags = 3;
  options.seed = 8;
  BerkeleyModel model = MakeRandomModel(options);
  Lexicon lexicon = *Lexicon::Build(model);
  auto sentences = MakeRandomSentences(model, 12, 1, 12, 3);
  sentences.insert(sentences.begin() + 5, std::vector<std::string>(30, "w1"));
  Parser reference(model.grammar, lexicon, MakeReferenceBackend(model.grammar));
  const auto expected = reference.Parse(sentences);

  // At most 3 sentences per batch: many batches.
  CudaBackendOptions small;
  small.device.max_batch_sentences = 3;
  {
    auto backend = MakeCudaBackend(model.grammar, small);
    ASSERT_TRUE(backend.ok()) << backend.status().message();
    Parser parser(model.grammar, lexicon, std::move(*backend));
    ExpectSameOutcomes(expected, parser.Parse(sentences), "3 sentences per batch");
  }
  // A budget of two 12-word sentences: batches of different sizes; the 30-word one never fits.
  const Grammar& g = model.grammar;
  small.device.max_batch_bytes =
      2 * cuda::BatchBytesForSentence(g.num_states(), g.num_symbols(), 12);
  small.device.max_batch_sentences = 1000;
  auto backend = MakeCudaBackend(model.grammar, small);
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  Parser parser(model.grammar, lexicon, std::move(*backend));
  const auto actual = parser.Parse(sentences);
  ExpectSameOutcomes(expected, actual, "small budget");
  ASSERT_EQ(actual[5].status, ParseStatus::kOk);
  EXPECT_NE(actual[5].message.find("parsed on the CPU"), std::string::npos) << actual[5].message;
}

void CompareOnSharedGrammar(const std::string& prefix, size_t max_sentences) {
  const std::string shared = SharedDir();
  if (!std::filesystem::exists(shared)) GTEST_SKIP() << shared << " is absent";
  const std::string path = shared + "/" + prefix;
  // A text export is a prefix of several files: skip when none of them is there.
  if (!std::filesystem::exists(path) && !std::filesystem::exists(path + ".binary") &&
      !std::filesystem::exists(path + ".grammar") &&
      !std::filesystem::exists(path + ".grammar.gz")) {
    GTEST_SKIP() << path << " is absent";
  }
  auto model = LoadBerkeleyModel(path);
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto lexicon = Lexicon::Build(*model);
  ASSERT_TRUE(lexicon.ok()) << lexicon.status().message();
  auto gum = ReadSentences(shared + "/grammars/reference/small_sm2/sentences.txt");
  ASSERT_FALSE(gum.empty());
  if (gum.size() > max_sentences) gum.resize(max_sentences);
  size_t longest = 0;
  for (size_t i = 0; i < gum.size(); ++i)
    if (gum[i].size() > gum[longest].size()) longest = i;
  std::vector<std::vector<std::string>> sentences = gum;
  sentences.push_back({gum[0][0]});
  sentences.push_back({gum[0][0], gum[0][1]});
  sentences.push_back(gum[longest]);
  CompareAllKernels(*model, *lexicon, sentences);
}

TEST(CudaBackendTest, EveryKernelMatchesReferenceOnSmallSm2WithGumSentences) {
  SKIP_WITHOUT_DEVICE();
  CompareOnSharedGrammar("grammars/berkeley-small/small_sm2", 40);
}

TEST(CudaBackendTest, EveryKernelMatchesReferenceOnWsj1WithGumSentences) {
  SKIP_WITHOUT_DEVICE();
  CompareOnSharedGrammar("grammars/wsj-projected/wsj_1.gr", 12);
}

// ---------------------------------------------------------------------------------------------
// Failures stay local (issue 16). Without a device: a fake DeviceViterbi computes charts on the
// CPU (as floats, like the device) and fails batches as cuda/common/fault_injection.h says, so the
// adapter's retry logic runs in CI.

class FakeDevice : public cuda::DeviceViterbi {
 public:
  FakeDevice(const Grammar& grammar, const std::string& faults, std::vector<int32_t>* computed)
      : grammar_(grammar), cpu_(grammar), computed_(computed) {
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
    ++calls_;
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
  int calls() const { return calls_; }

 private:
  const Grammar& grammar_;
  CpuViterbi cpu_;
  cuda::FaultInjector faults_;
  std::vector<int32_t>* computed_;
  std::string name_ = "fake";
  std::vector<std::vector<float>> buffers_[2];
  int next_ = 0;
  int calls_ = 0;
};

struct FaultCase {
  BerkeleyModel model = [] {
    RandomGrammarOptions options;
    options.phrasal_symbols = 5;
    options.tags = 3;
    options.seed = 8;
    return MakeRandomModel(options);
  }();
  Lexicon lexicon = *Lexicon::Build(model);
  // Lengths 1..12, distinct per sentence where it matters: the 7-word one is sentence 3.
  std::vector<std::vector<std::string>> sentences = [this] {
    auto s = MakeRandomSentences(model, 10, 1, 12, 3);
    for (auto& words : s)
      if (words.size() == 7) words.push_back("w1");
    s.insert(s.begin() + 3, std::vector<std::string>(7, "w2"));
    return s;
  }();
  std::vector<ParseOutcome> expected = [this] {
    Parser reference(model.grammar, lexicon, MakeReferenceBackend(model.grammar), kOptions);
    return reference.Parse(sentences);
  }();
  // No second pass with a wider lexicon: each sentence goes to the backend once.
  static inline const ParserOptions kOptions{.retry_with_wider_lexicon = false};
};

// Parses with the fake device; checks every outcome against the reference and returns them.
std::vector<ParseOutcome> ParseWithFakeDevice(const FaultCase& c, const std::string& faults,
                                              int max_batch_sentences, int* calls,
                                              std::vector<int32_t>* computed) {
  auto device = std::make_unique<FakeDevice>(c.model.grammar, faults, computed);
  FakeDevice* fake = device.get();
  CudaBackendOptions options;
  options.device.max_batch_sentences = max_batch_sentences;
  Parser parser(c.model.grammar, c.lexicon,
                MakeCudaBackendForDevice(c.model.grammar, std::move(device), options),
                FaultCase::kOptions);
  std::vector<ParseOutcome> actual = parser.Parse(c.sentences);
  *calls = fake->calls();
  ExpectSameOutcomes(c.expected, actual, faults);
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
  SKIP_WITHOUT_DEVICE();
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
      Parser parser(c.model.grammar, c.lexicon, std::move(backend), FaultCase::kOptions);
      const auto actual = parser.Parse(c.sentences);
      ExpectSameOutcomes(c.expected, actual, faults + " " + kernel);
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
  SKIP_WITHOUT_DEVICE();
  FaultCase c;
  ScopedFaults scoped("launch:zero");
  auto made = MakeCudaBackend(c.model.grammar, CudaBackendOptions{});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("CKY_FAULT_INJECT"), std::string::npos);
}

// Issue 16's launch failure: from about 48 KB of shared memory on (static and dynamic together)
// a launch needs the opt-in. The G = 8 kernels' dynamic bytes grow by 64 a span length and their
// static bytes are about 100, so a long enough sentence always meets span lengths in the window
// that the old test (dynamic > 48 KB) missed: with one substate per symbol that is 767 words and
// up; 800 words cross it for every kernel. Every sentence must be parsed on the device (no CPU
// fallback message) and equal the reference.
TEST(CudaBackendTest, EveryKernelParsesAnEightHundredWordSentenceOnTheDevice) {
  SKIP_WITHOUT_DEVICE();
  RandomGrammarOptions options;
  options.phrasal_symbols = 2;
  options.tags = 2;
  options.substates = 1;
  options.vocabulary = 4;
  options.base_rule_density = 0.9;  // dense enough that the 800 words have a parse
  options.seed = 1;
  BerkeleyModel model = MakeRandomModel(options);
  Lexicon lexicon = *Lexicon::Build(model);
  auto sentences = MakeRandomSentences(model, 1, 800, 800, 5);
  sentences.push_back({"w1", "w2", "w3"});
  Parser reference(model.grammar, lexicon, MakeReferenceBackend(model.grammar));
  const auto expected = reference.Parse(sentences);
  ASSERT_EQ(expected[0].status, ParseStatus::kOk) << expected[0].message;
  for (const std::string& kernel : CudaKernelNames()) {
    if (!TestVariantSelected(kernel)) continue;
    auto backend = MakeCudaBackend(model.grammar, {.kernel = kernel});
    ASSERT_TRUE(backend.ok()) << kernel << ": " << backend.status().message();
    Parser parser(model.grammar, lexicon, std::move(*backend));
    const auto actual = parser.Parse(sentences);
    ExpectSameOutcomes(expected, actual, kernel);
    for (const ParseOutcome& o : actual) EXPECT_EQ(o.message, "") << kernel;
  }
}

}  // namespace
}  // namespace cky
