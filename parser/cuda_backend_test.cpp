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
#include "cuda/common/device.h"
#include "cuda/viterbi/viterbi.h"
#include "lexicon/lexicon.h"
#include "parser/parser.h"
#include "parser/random_grammar.h"
#include "parser/tree_extraction.h"

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
  auto backend = MakeCudaBackend(model.grammar, "no-such-kernel");
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
    sentences.push_back({"w1"});
    sentences.push_back({"w2", "w3"});
    sentences.push_back({});
    sentences.push_back(std::vector<std::string>(60, "w0"));  // the longest in these tests
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
  small.max_batch_sentences = 3;
  {
    auto backend = MakeCudaBackend(model.grammar, small);
    ASSERT_TRUE(backend.ok()) << backend.status().message();
    Parser parser(model.grammar, lexicon, std::move(*backend));
    ExpectSameOutcomes(expected, parser.Parse(sentences), "3 sentences per batch");
  }
  // A budget of two 12-word sentences: batches of different sizes; the 30-word one never fits.
  const Grammar& g = model.grammar;
  small.max_batch_bytes = 2 * cuda::BatchBytesForSentence(g.num_states(), g.num_symbols(), 12);
  small.max_batch_sentences = 1000;
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
  auto model = LoadBerkeleyModel(shared + "/" + prefix);
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

}  // namespace
}  // namespace cky
