// The CUDA inside-outside and max-rule passes against the CPU reference
// (parser/inside_outside_cpu.h, parser/max_rule.h): every inside value, every outside value of a
// state with a positive inside, log P(w), every max-rule array entry, and the backend's outcomes
// (same trees and statuses, max-rule scores and log P(w) within the tolerance of
// cuda/inside_outside/inside_outside.h). Seeded random grammars (several shapes, a parent with more
// rules than a block, symbols of 35 substates), small_sm2.gr and wsj_1 with GUM sentences, lengths
// 1, 2 and the longest of each test. Skips without a CUDA device; the real-grammar tests skip
// without ../shared (or $CKY_SHARED_DIR).
#include "parser/cuda_max_rule_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "common/sentence_file.h"
#include "common/test_variants.h"
#include "cuda/common/device.h"
#include "lexicon/lexicon.h"
#include "parser/cpu_backend.h"
#include "parser/cuda_grammar_view.h"
#include "parser/parser.h"
#include "parser/random_grammar.h"
#include "parser/tree_format.h"

namespace cky {
namespace {

// cuda/inside_outside/inside_outside.h's stated tolerance: log scores within 1e-9 relative
// (|x - y| / (|x| + |y|)) or 1e-9 absolute near zero.
constexpr double kTolerance = 1e-9;
// Chart values compared as log scores where the reference's exceeds this share of its cell's
// largest value (below it, both must be tiny).
constexpr double kTiny = 1e-250;

bool Close(double x, double y) {
  if (x == y) return true;  // both -infinity, or identical
  if (!std::isfinite(x) || !std::isfinite(y)) return false;
  return std::abs(x - y) <= kTolerance * std::max(1.0, std::abs(x) + std::abs(y));
}

struct MaxDiff {
  double chart = 0, likelihood = 0, max_rule = 0;
  void Note(double* slot, double x, double y) {
    if (std::isfinite(x) && std::isfinite(y)) *slot = std::max(*slot, std::abs(x - y));
  }
};

// `only_where`: compare only states whose value there is positive (the outside of a state with a
// zero inside is unspecified, parser/inside_outside_cpu.h).
void CompareChart(const ScaledChart& expected, const ScaledChart& actual,
                  const ScaledChart* only_where, const std::string& what, MaxDiff* diff,
                  int* failures) {
  ASSERT_EQ(expected.values.size(), actual.values.size()) << what;
  const int32_t n = expected.length;
  for (int32_t span = 1; span <= n; ++span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      for (int32_t s = 0; s < expected.num_states; ++s) {
        if (only_where && !(only_where->cell(start, start + span)[s] > 0)) continue;
        const double e = expected.cell(start, start + span)[s];
        const double a = actual.cell(start, start + span)[s];
        const double le = expected.LogScore(start, start + span, s);
        const double la = actual.LogScore(start, start + span, s);
        bool ok;
        if (e > kTiny) {
          ok = Close(le, la);
          diff->Note(&diff->chart, le, la);
        } else {
          ok = a <= 1e-240;
        }
        if (!ok && ++*failures <= 5) {
          ADD_FAILURE() << what << " [" << start << "," << start + span << ") state " << s
                        << ": reference " << e << " (log " << le << "), device " << a << " (log "
                        << la << ")";
        }
      }
    }
  }
}

void CompareMaxRule(const MaxRuleChart& e, const MaxRuleChart& a, const std::string& what,
                    MaxDiff* diff, int* failures) {
  ASSERT_EQ(e.score.size(), a.score.size()) << what;
  for (size_t i = 0; i < e.score.size(); ++i) {
    diff->Note(&diff->max_rule, e.score[i], a.score[i]);
    const bool ok = Close(e.score[i], a.score[i]) && e.split[i] == a.split[i] &&
                    e.left[i] == a.left[i] && e.right[i] == a.right[i] &&
                    e.unary_child[i] == a.unary_child[i];
    if (!ok && ++*failures <= 5) {
      ADD_FAILURE() << what << " max-rule entry " << i << ": reference " << e.score[i] << " split "
                    << e.split[i] << " " << e.left[i] << " " << e.right[i] << " unary "
                    << e.unary_child[i] << "; device " << a.score[i] << " split " << a.split[i]
                    << " " << a.left[i] << " " << a.right[i] << " unary " << a.unary_child[i];
    }
  }
}

// Charts, log P(w) and max-rule arrays of every sentence, device against reference; then the
// backend's outcomes against the reference backend's.
void CompareAll(const Grammar& g, const Lexicon& lexicon,
                const std::vector<std::vector<std::string>>& sentences, const std::string& what,
                CudaMaxRuleOptions options = {}) {
  Parser scorer(g, lexicon, MakeReferenceBackend(g));
  std::vector<SentenceInput> inputs;
  for (const auto& words : sentences) inputs.push_back({words, scorer.ScoreWords(words)});

  std::vector<const LexicalScores*> nonempty;
  std::vector<size_t> index;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].words.empty()) nonempty.push_back(&inputs[i].lexical), index.push_back(i);
  }
  // The reference once per sentence.
  std::vector<InsideOutsideCharts> expected_charts(nonempty.size());
  std::vector<MaxRuleChart> expected_maxc(nonempty.size());
  for (size_t k = 0; k < nonempty.size(); ++k) {
    ReferenceInsideOutside(g, *nonempty[k], &expected_charts[k]);
    if (expected_charts[k].log_likelihood > kNegInf)
      ReferenceMaxRuleChart(g, *nonempty[k], expected_charts[k], &expected_maxc[k]);
  }
  // The default kernels, 16 cells per pair-sum group, and the earlier pair-sum and max-rule
  // binary kernel variants (cuda/inside_outside/inside_outside.h).
  struct Variant {
    std::string name;
    cuda::DeviceInsideOutsideOptions options;
  };
  // CKY_TEST_VARIANTS (common/test_variants.h) may keep only some of them.
  const Variant variants[] = {{"default", {}},
                              {"g16", {.cells_per_group = 16}},
                              {"pair-sum-1", {.pair_sum_kernel = 1}},
                              {"pair-sum-2", {.pair_sum_kernel = 2}},
                              {"pair-sum-3", {.pair_sum_kernel = 3}},
                              {"max-rule-1", {.max_rule_kernel = 1}},
                              {"max-rule-2", {.max_rule_kernel = 2}},
                              {"max-rule-7", {.max_rule_kernel = 7}},
                              {"max-rule-9", {.max_rule_kernel = 9}},
                              {"max-rule-11", {.max_rule_kernel = 11}},
                              {"max-rule-14", {.max_rule_kernel = 14}}};
  for (const Variant& variant : variants) {
    if (!TestVariantSelected(variant.name)) continue;
    auto device = CudaInsideOutsideBatch(g, nonempty, variant.options);
    ASSERT_TRUE(device.ok()) << device.status().message();
    MaxDiff diff;
    int failures = 0, parsed = 0;
    for (size_t k = 0; k < nonempty.size(); ++k) {
      const std::string where = what + " " + variant.name + " sentence " +
                                std::to_string(index[k]) + " (" +
                                std::to_string(nonempty[k]->length) + " words)";
      const InsideOutsideCharts& expected = expected_charts[k];
      const CudaInsideOutsideResult& actual = (*device)[k];
      EXPECT_TRUE(Close(expected.log_likelihood, actual.charts.log_likelihood))
          << where << ": log P(w) " << expected.log_likelihood << " vs "
          << actual.charts.log_likelihood;
      diff.Note(&diff.likelihood, expected.log_likelihood, actual.charts.log_likelihood);
      CompareChart(expected.inside, actual.charts.inside, nullptr, where + " inside", &diff,
                   &failures);
      CompareChart(expected.outside, actual.charts.outside, &expected.inside, where + " outside",
                   &diff, &failures);
      if (expected.log_likelihood > kNegInf) {
        ++parsed;
        CompareMaxRule(expected_maxc[k], actual.maxc, where, &diff, &failures);
      }
    }
    EXPECT_GT(parsed, 0) << what << ": the comparison needs sentences with a parse";
    std::printf(
        "[ max diff ] %s %s: log-score chart %.3g, log P(w) %.3g, max-rule %.3g (%d parsed)\n",
        what.c_str(), variant.name.c_str(), diff.chart, diff.likelihood, diff.max_rule, parsed);
  }

  // The backend end to end (its default kernels: a process that CKY_TEST_VARIANTS limits to other
  // variants leaves it to the default's process, which halves a variant's time under a tool).
  if (!TestVariantSelected("default")) return;
  auto expected = MakeReferenceMaxRuleBackend(g)->ParseBatch(inputs);
  auto backend = MakeCudaMaxRuleBackend(g, options);
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  EXPECT_EQ((*backend)->name(), "cuda/max-rule");
  auto actual = (*backend)->ParseBatch(inputs);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(expected[i].status, actual[i].status)
        << what << " sentence " << i << ": " << actual[i].message;
    if (expected[i].status != ParseStatus::kOk || actual[i].status != ParseStatus::kOk) continue;
    EXPECT_EQ(ToBracketString(expected[i].tree), ToBracketString(actual[i].tree))
        << what << " sentence " << i;
    EXPECT_TRUE(Close(expected[i].log_score, actual[i].log_score))
        << what << " sentence " << i << ": " << expected[i].log_score << " vs "
        << actual[i].log_score;
    EXPECT_TRUE(Close(expected[i].log_likelihood, actual[i].log_likelihood))
        << what << " sentence " << i << ": " << expected[i].log_likelihood << " vs "
        << actual[i].log_likelihood;
  }
}

#define SKIP_WITHOUT_DEVICE() \
  if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device"

// One seed a test, so that each runs in one process under racecheck within a device command's
// limit (the three seeds together took over 280 s a variant).
class CudaMaxRuleRandomGrammarsTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(CudaMaxRuleRandomGrammarsTest, MatchesReference) {
  SKIP_WITHOUT_DEVICE();
  const uint64_t seed = GetParam();
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
  CompareAll(model.grammar, lexicon, sentences, "seed " + std::to_string(seed));
}

INSTANTIATE_TEST_SUITE_P(Seeds, CudaMaxRuleRandomGrammarsTest, ::testing::Values(1, 2, 3));

// K-best lists (both styles) from the device's posteriors equal the CPU reference's: same trees,
// scores within 1e-9 (the device's charts are doubles as the CPU's; sums may differ in order).
TEST(CudaMaxRuleTest, KBestMatchesReference) {
  SKIP_WITHOUT_DEVICE();
  RandomGrammarOptions options;
  options.phrasal_symbols = 6;
  options.tags = 4;
  options.substates = 3;
  options.seed = 7;
  BerkeleyModel model = MakeRandomModel(options);
  Lexicon lexicon = *Lexicon::Build(model);
  auto sentences = MakeRandomSentences(model, 20, 1, 25, 5);
  AddLengthEdgeCases(60, &sentences);
  for (bool berkeley : {false, true}) {
    const DecoderOptions decoder{
        .kbest = 5, .kbest_style = berkeley ? KBestStyle::kBerkeley : KBestStyle::kExact};
    auto cuda = MakeCudaMaxRuleBackend(model.grammar, {.decoder = decoder});
    ASSERT_TRUE(cuda.ok()) << cuda.status().message();
    Parser device(model.grammar, lexicon, std::move(*cuda));
    Parser reference(model.grammar, lexicon, MakeReferenceMaxRuleBackend(model.grammar, decoder));
    auto expected = reference.Parse(sentences);
    auto actual = device.Parse(sentences);
    int lists = 0;
    for (size_t i = 0; i < sentences.size(); ++i) {
      SCOPED_TRACE("sentence " + std::to_string(i) + (berkeley ? ", berkeley" : ", exact"));
      ASSERT_EQ(expected[i].status, actual[i].status);
      ASSERT_EQ(expected[i].kbest.size(), actual[i].kbest.size());
      for (size_t r = 0; r < expected[i].kbest.size(); ++r) {
        EXPECT_EQ(expected[i].kbest[r].tree, actual[i].kbest[r].tree) << "rank " << r;
        EXPECT_NEAR(expected[i].kbest[r].log_score, actual[i].kbest[r].log_score, 1e-9);
      }
      if (expected[i].kbest.size() == 5) ++lists;
    }
    EXPECT_GT(lists, 10);
  }
}

// Symbols of 35 substates: tiles cut into bands, Q blocks of 35 x 35 in the max-rule kernel.
TEST(CudaMaxRuleTest, MatchesReferenceWithManySubstates) {
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
  AddLengthEdgeCases(20, &sentences);
  CompareAll(model.grammar, lexicon, sentences, "35 substates");
}

// A parent with more rules than a block's threads, and a parent symbol whose base rules fill
// more than one max-rule chunk.
TEST(CudaMaxRuleTest, MatchesReferenceWithABigParent) {
  SKIP_WITHOUT_DEVICE();
  RandomGrammarOptions options;
  options.phrasal_symbols = 5;
  options.tags = 4;
  options.substates = 4;
  options.big_parent_rules = 700;
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
  sentences.push_back(std::vector<std::string>(40, "w2"));
  CompareAll(g, lexicon, sentences, "big parent");
}

TEST(CudaMaxRuleTest, SplitsBatchesAndFallsBackToCpu) {
  SKIP_WITHOUT_DEVICE();
  RandomGrammarOptions options;
  options.phrasal_symbols = 5;
  options.tags = 3;
  options.seed = 8;
  BerkeleyModel model = MakeRandomModel(options);
  const Grammar& g = model.grammar;
  Lexicon lexicon = *Lexicon::Build(model);
  auto sentences = MakeRandomSentences(model, 12, 1, 12, 3);
  sentences.insert(sentences.begin() + 5, std::vector<std::string>(30, "w1"));
  CompareAll(g, lexicon, sentences, "3 per batch", {.device = {.max_batch_sentences = 3}});

  // A budget of two 12-word sentences: the 30-word one never fits and is parsed on the CPU.
  std::string error;
  auto device = cuda::DeviceInsideOutside::Create(CudaGrammarView(g), {}, &error);
  ASSERT_TRUE(device) << error;
  EXPECT_GE(device->MaxLength(), 200);  // sentences up to 200 words run on the device
  CudaMaxRuleOptions small{
      .device = {.max_batch_bytes = 2 * device->BytesForSentence(12), .max_batch_sentences = 1000}};
  Parser scorer(g, lexicon, MakeReferenceBackend(g));
  std::vector<SentenceInput> inputs;
  for (const auto& words : sentences) inputs.push_back({words, scorer.ScoreWords(words)});
  auto backend = MakeCudaMaxRuleBackend(g, small);
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  const auto actual = (*backend)->ParseBatch(inputs);
  const auto expected = MakeReferenceMaxRuleBackend(g)->ParseBatch(inputs);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(actual[i].status, expected[i].status) << i;
    if (actual[i].status == ParseStatus::kOk && expected[i].status == ParseStatus::kOk)
      EXPECT_EQ(ToBracketString(actual[i].tree), ToBracketString(expected[i].tree)) << i;
  }
  ASSERT_EQ(actual[5].status, ParseStatus::kOk) << actual[5].message;
  EXPECT_NE(actual[5].message.find("parsed on the CPU"), std::string::npos) << actual[5].message;
}

void CompareOnSharedGrammar(const std::string& prefix, size_t max_sentences) {
  const std::string shared = SharedDataDir();
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
  auto gum = ReadTokenizedSentences(shared + "/grammars/reference/small_sm2/sentences.txt");
  ASSERT_TRUE(gum.ok() && !gum->empty());
  std::vector<std::vector<std::string>> sentences = *gum;
  if (sentences.size() > max_sentences) sentences.resize(max_sentences);
  size_t longest = 0;
  for (size_t i = 0; i < gum->size(); ++i)
    if ((*gum)[i].size() > (*gum)[longest].size()) longest = i;
  sentences.push_back({(*gum)[0][0]});
  sentences.push_back({(*gum)[0][0], (*gum)[0][1]});
  sentences.push_back((*gum)[longest]);  // the longest of the reference sentences
  KeepTestShard(&sentences);
  CompareAll(model->grammar, *lexicon, sentences, prefix);
}

TEST(CudaMaxRuleTest, MatchesReferenceOnSmallSm2WithGumSentences) {
  SKIP_WITHOUT_DEVICE();
  CompareOnSharedGrammar("grammars/berkeley-small/small_sm2.gr", 40);
}

TEST(CudaMaxRuleTest, MatchesReferenceOnWsj1WithGumSentences) {
  SKIP_WITHOUT_DEVICE();
  CompareOnSharedGrammar("grammars/wsj-projected/wsj_1.gr", 12);
}

}  // namespace
}  // namespace cky
