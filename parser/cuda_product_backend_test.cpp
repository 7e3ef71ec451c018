// The CUDA product backend (parser/cuda_product_backend.h) against the CPU's (parser/product.h):
// on seeded random grammars, products of 1, 2 and 3 grammars, sentences of one word, two words and
// the longest the test parses, in small batches (several device batches a call, extraction behind
// the device): the reference's (ReferenceProductMaxRuleChart) statuses and trees, scores within
// kProductDeviceTolerance, k-best lists; both combinations (on the device, the k-best 1 default,
// cuda/inside_outside/product_max_rule.h; on the host, CudaProductOptions::host_combination and
// every k-best list); a product of one grammar gives the CUDA max-rule backend's trees and k-best
// lists; pruned (each grammar's mask, and the shared mask) the CPU pruned product's; the
// wider-lexicon retry; the CPU fallback for a sentence over the host combination's budget; the
// built-in product. Skips without a CUDA device (the built-in product's test also without its
// file); without one, making the backend fails saying so.
#include "parser/cuda_product_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "grammar_io/default_grammar.h"
#include "grammar_io/grammar_argument.h"
#include "parser/backend_test_support.h"
#include "parser/chart.h"
#include "parser/cuda_max_rule_backend.h"
#include "parser/inside_outside_cpu.h"

namespace cky {
namespace {

// Each grammar's posteriors come from device charts, within cuda/inside_outside/inside_outside.h's
// 1e-9 relative; the product sums up to three grammars' log posteriors.
constexpr ScoreTolerance kProductDeviceTolerance{ScoreTolerance::Kind::kRelative, 3e-9};

std::unique_ptr<TestGrammar> Random(const RandomGrammarOptions& shape) {
  return std::make_unique<TestGrammar>(MakeRandomTestGrammar(shape));
}

// A product of the grammars, with their lexicons.
struct Product {
  std::vector<const TestGrammar*> grammars;
  std::unique_ptr<GrammarProduct> product;
  std::vector<const Lexicon*> lexicons;
};

Product MakeProduct(std::vector<const TestGrammar*> grammars) {
  Product p;
  p.grammars = std::move(grammars);
  std::vector<const Grammar*> gs;
  std::vector<std::string> labels;
  for (const TestGrammar* g : p.grammars) {
    gs.push_back(&g->grammar());
    p.lexicons.push_back(&g->lexicon);
    labels.push_back("g" + std::to_string(labels.size() + 1));
  }
  auto made = GrammarProduct::Create(gs, labels);
  EXPECT_TRUE(made.ok()) << made.status().message();
  if (made.ok()) p.product = std::move(*made);
  return p;
}

std::vector<ParseOutcome> ParseCpu(const Product& p, const ProductOptions& options,
                                   const Sentences& sentences) {
  auto backend = MakeProductBackend(*p.product, p.lexicons, options);
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  return ParseWith(*p.grammars[0], std::move(*backend), sentences,
                   {.retry_with_wider_lexicon = false});
}

std::vector<ParseOutcome> ParseCuda(const Product& p, const CudaProductOptions& options,
                                    const Sentences& sentences, std::string* name = nullptr) {
  auto backend = MakeCudaProductBackend(*p.product, p.lexicons, options);
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  if (!backend.ok()) return {};
  if (name) *name = (*backend)->name();
  return ParseWith(*p.grammars[0], std::move(*backend), sentences,
                   {.retry_with_wider_lexicon = false});
}

Sentences WithEmpty(Sentences sentences) {
  sentences.push_back({});
  return sentences;
}

// Test grammars (with their lexicons) of loaded product members; fails the test on a lexicon that
// cannot be built.
std::vector<std::unique_ptr<TestGrammar>> TestGrammarsOf(
    std::vector<ProductGrammarMember>* members) {
  std::vector<std::unique_ptr<TestGrammar>> grammars;
  for (ProductGrammarMember& m : *members) {
    auto lexicon = Lexicon::Build(m.model);
    EXPECT_TRUE(lexicon.ok()) << lexicon.status().message();
    if (!lexicon.ok()) return {};
    grammars.push_back(
        std::make_unique<TestGrammar>(TestGrammar{std::move(m.model), std::move(*lexicon)}));
  }
  return grammars;
}

// The product of the toy grammar with itself ("saw" is only a verb in it: a sentence with "saw"
// as a noun needs the widened lexicon) parsed by `parse`: with the wider-lexicon retry on and off,
// the CPU product's outcomes (scores within `tolerance`); off, the first sentence derives nothing.
void ExpectTheToyRetry(
    const std::function<std::vector<ParseOutcome>(const Product&, bool, const Sentences&)>& parse,
    const ScoreTolerance& tolerance) {
  auto members = LoadProductGrammarArguments(
      std::vector<std::string>{"tests/data/toy", "tests/data/toy"}, {.use_cache = false});
  ASSERT_TRUE(members.ok()) << members.status().message();
  const std::vector<std::unique_ptr<TestGrammar>> grammars = TestGrammarsOf(&*members);
  ASSERT_EQ(grammars.size(), 2u);
  for (const auto& g : grammars) ASSERT_FALSE(g->lexicon.exact());
  const Product p = MakeProduct({grammars[0].get(), grammars[1].get()});
  const Sentences sentences = {{"the", "dog", "saw", "the", "saw", "."},
                               {"the", "dog", "saw", "the", "cat", "."}};
  for (bool retry : {true, false}) {
    const std::string what = retry ? "retry" : "no retry";
    const auto expected = ParseCpu(p, {.threads = 2, .retry_with_wider_lexicon = retry}, sentences);
    const auto actual = parse(p, retry, sentences);
    ExpectSameOutcomes(expected, actual, {.score = tolerance}, what, sentences);
    ASSERT_EQ(actual.size(), 2u);
    EXPECT_EQ(actual[0].status, retry ? ParseStatus::kOk : ParseStatus::kNoParse)
        << what << ": " << actual[0].message;
    if (!retry) EXPECT_NE(actual[0].message.find("derives no tree"), std::string::npos);
    EXPECT_EQ(actual[1].status, ParseStatus::kOk) << what << ": " << actual[1].message;
  }
}

// Three random grammars of one shape (seeds seed, seed + 100, seed + 200) and the products of the
// first 1, 2 and 3 of them.
struct ThreeGrammars {
  ThreeGrammars(const std::function<RandomGrammarOptions(uint64_t)>& shape, uint64_t seed)
      : a(Random(shape(seed))), b(Random(shape(seed + 100))), c(Random(shape(seed + 200))) {}
  std::vector<std::vector<const TestGrammar*>> Prefixes(int from = 1) const {
    const std::vector<const TestGrammar*> all = {a.get(), b.get(), c.get()};
    std::vector<std::vector<const TestGrammar*>> prefixes;
    for (int k = from; k <= 3; ++k) prefixes.emplace_back(all.begin(), all.begin() + k);
    return prefixes;
  }
  // `count` random sentences of grammar a (1 to max_words words, then one of `longest`), and an
  // empty one.
  Sentences SentencesOf(uint64_t seed, int count, int max_words, int longest) const {
    return WithEmpty(RandomTestSentences(a->model, count, 1, max_words, seed, longest));
  }
  std::unique_ptr<TestGrammar> a, b, c;
};

using Grammars = std::vector<const TestGrammar*>;

// Runs body(seed, grammars, product, sentences) for each seed and each product of the first k
// (from `from` to 3) of the seed's three grammars, over the seed's sentences (SentencesOf with
// sentences = {count, max_words, longest}).
template <typename Body>
void ForEachProduct(const std::function<RandomGrammarOptions(uint64_t)>& shape,
                    std::initializer_list<uint64_t> seeds, int from, std::array<int, 3> sentences,
                    Body&& body) {
  for (uint64_t seed : seeds) {
    const ThreeGrammars three(shape, seed);
    const Sentences of_seed = three.SentencesOf(seed, sentences[0], sentences[1], sentences[2]);
    for (const Grammars& grammars : three.Prefixes(from)) {
      const Product p = MakeProduct(grammars);
      body(seed, grammars, p, of_seed);
    }
  }
}

// Products of 1, 2 and 3 grammars against the CPU reference (sentences up to 16 words: the
// reference's plain loops are slow; one word, two words and 16), in batches of 5 sentences: the
// combination on the device (k-best 1), on the host (k-best 1 with host_combination, and k-best
// 3, whose lists the host decodes).
TEST(CudaProductBackendTest, MatchesTheCpuReference) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  int parsed = 0;
  ForEachProduct(
      StandardShape, {1, 7}, 1, {10, 12, 16},
      [&](uint64_t seed, const Grammars& grammars, const Product& p, const Sentences& sentences) {
        for (auto [kbest, host] : {std::pair{1, false}, std::pair{1, true}, std::pair{3, false}}) {
          const DecoderOptions decoder{.kbest = kbest};
          const std::string what = "seed " + std::to_string(seed) + ", " +
                                   std::to_string(grammars.size()) + " grammars, k " +
                                   std::to_string(kbest) + ", combined on the " +
                                   (host || kbest > 1 ? "host" : "device");
          const auto expected = ParseCpu(p, {.reference = true, .decoder = decoder}, sentences);
          std::string name;
          const auto actual = ParseCuda(p,
                                        {.device = {.max_batch_sentences = 5},
                                         .product = {.decoder = decoder},
                                         .host_combination = host},
                                        sentences, &name);
          EXPECT_EQ(name,
                    "cuda/max-rule-product of " + std::to_string(grammars.size()) + " grammars");
          parsed += ExpectSameOutcomes(expected, actual,
                                       {.score = kProductDeviceTolerance,
                                        .likelihood = true,
                                        .kbest = kbest > 1,
                                        .kbest_score = kProductDeviceTolerance},
                                       what, sentences);
          ASSERT_EQ(actual.size(), sentences.size());
          EXPECT_EQ(actual.back().status, ParseStatus::kNoParse);  // the empty sentence
          for (const ParseOutcome& o : actual) {
            EXPECT_EQ(o.message.find("CPU"), std::string::npos) << what << ": " << o.message;
          }
        }
      });
  EXPECT_GT(parsed, 60);
}

// Longer sentences (up to 40 words) against the fast CPU path (itself tested against the
// reference in parser/product_test.cpp), one batch and batches of 4. The second grammar is the
// first one again (its own device objects): two random grammars of different seeds share a tree
// for few long sentences (2 of 8 here), a grammar and its copy for every sentence it parses.
TEST(CudaProductBackendTest, LongSentencesMatchTheFastCpuPath) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  auto a = Random(StandardShape(3)), b = Random(StandardShape(3));
  const Product p = MakeProduct({a.get(), b.get()});
  const Sentences sentences = RandomTestSentences(a->model, 8, 10, 30, 3, /*longest=*/40);
  const auto expected = ParseCpu(p, {.threads = 2}, sentences);
  int parsed = 0;
  for (bool host : {false, true}) {
    for (int batch : {256, 4}) {
      const auto actual = ParseCuda(
          p, {.device = {.max_batch_sentences = batch}, .host_combination = host}, sentences);
      parsed += ExpectSameOutcomes(expected, actual,
                                   {.score = kProductDeviceTolerance, .likelihood = true},
                                   std::string(host ? "host" : "device") +
                                       " combination, batches of " + std::to_string(batch),
                                   sentences);
    }
  }
  EXPECT_GT(parsed, 20);
}

// A product of one grammar: the CUDA max-rule backend's trees, scores and k-best lists (within the
// device tolerance: its best score is the device's max-rule pass, the product's its own device
// pass (k-best 1) or the host's over the device's charts (k-best 4); the k-best lists both decode
// on the host from device charts, whose sums the device's atomics may order differently from run
// to run).
TEST(CudaProductBackendTest, ProductOfOneGrammarIsItsCudaMaxRule) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  int parsed = 0;
  for (auto [seed, kbest] : {std::pair{2, 1}, std::pair{9, 1}, std::pair{2, 4}, std::pair{9, 4}}) {
    auto a = Random(StandardShape(seed));
    const Product p = MakeProduct({a.get()});
    const Sentences sentences = RandomTestSentences(a->model, 12, 1, 20, seed, /*longest=*/30);
    const DecoderOptions decoder{.kbest = kbest};
    auto single = MakeCudaMaxRuleBackend(a->grammar(), {.decoder = decoder});
    ASSERT_TRUE(single.ok()) << single.status().message();
    const auto expected = ParseWith(*a, std::move(*single), sentences);
    const auto actual = ParseCuda(p, {.product = {.decoder = decoder}}, sentences);
    ASSERT_EQ(expected.size(), actual.size());
    for (size_t i = 0; i < sentences.size(); ++i) {
      ASSERT_EQ(expected[i].status, actual[i].status)
          << "k " << kbest << ", sentence " << i << ": " << actual[i].message;
      if (expected[i].status != ParseStatus::kOk) continue;
      ++parsed;
      EXPECT_EQ(ToBracketString(expected[i].tree), ToBracketString(actual[i].tree))
          << "k " << kbest << ", sentence " << i;
      EXPECT_TRUE(kDeviceSumTolerance.Holds(expected[i].log_score, actual[i].log_score))
          << "k " << kbest << ", sentence " << i << ": " << expected[i].log_score << " "
          << actual[i].log_score;
      EXPECT_EQ(actual[i].log_likelihood, kNegInf);
      ASSERT_EQ(expected[i].kbest.size(), actual[i].kbest.size()) << i;
      for (size_t r = 0; r < expected[i].kbest.size(); ++r) {
        EXPECT_EQ(ToBracketString(expected[i].kbest[r].tree),
                  ToBracketString(actual[i].kbest[r].tree));
        EXPECT_TRUE(
            kDeviceSumTolerance.Holds(expected[i].kbest[r].log_score, actual[i].kbest[r].log_score))
            << i << " rank " << r;
      }
    }
  }
  EXPECT_GT(parsed, 40);
}

// Pruned: the CPU pruned product's trees (the device's pre-parses keep the CPU pruner's items bit
// for bit), each grammar's own mask and the shared one, tight thresholds (member-level and
// sentence-level unpruned retries happen: the retried charts replace the kept ones on the device)
// and batches of 4; without thresholds the exact product's. The combination on the device, and
// with tight thresholds on the host too.
TEST(CudaProductBackendTest, PrunedMatchesTheCpuPrunedProduct) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  int parsed = 0;
  const auto split = [](uint64_t s) { return SplitShape(s); };
  ForEachProduct(
      split, {1, 21}, /*from=*/2, {12, 16, 24},
      [&](uint64_t seed, const Grammars& grammars, const Product& p, const Sentences& sentences) {
        for (ProductPruning mask : {ProductPruning::kPerGrammar, ProductPruning::kShared}) {
          for (auto [pruning, host] : {std::pair<std::string, bool>{"tight", false},
                                       std::pair<std::string, bool>{"tight", true},
                                       std::pair<std::string, bool>{"exact", false}}) {
            const std::string what =
                std::string(mask == ProductPruning::kShared ? "shared" : "own") + " masks, " +
                pruning + ", seed " + std::to_string(seed) + ", " +
                std::to_string(grammars.size()) + " grammars, combined on the " +
                (host ? "host" : "device");
            const ProductOptions options{.pruning = TestPruning(pruning), .mask = mask};
            ProductOptions cpu = options;
            cpu.threads = 2;
            const auto expected = ParseCpu(p, cpu, sentences);
            std::string name;
            const auto actual = ParseCuda(p,
                                          {.device = {.max_batch_sentences = 4},
                                           .product = options,
                                           .host_combination = host},
                                          sentences, &name);
            EXPECT_EQ(name, "cuda/pruned-max-rule-product of " + std::to_string(grammars.size()) +
                                " grammars");
            parsed += ExpectSameOutcomes(expected, actual,
                                         {.score = kProductDeviceTolerance, .likelihood = true},
                                         what, sentences);
            if (pruning == "exact" && mask == ProductPruning::kPerGrammar) {
              // Pruning without thresholds keeps the exact product's trees.
              ExpectSameOutcomes(ParseCpu(p, {.threads = 2}, sentences), actual,
                                 {.score = kProductDeviceTolerance}, what + " against exact",
                                 sentences);
            }
          }
        }
      });
  EXPECT_GT(parsed, 75);  // sentences with a tree, over the 24 settings (84 on the CPU)
}

// The device combination's kernels at their edges, against the fast CPU path (itself tested
// against the reference): a parent with 700 base rules (many chunks of one symbol, merged in rule
// order), symbols of 35 substates (base rules with hundreds of entries, several passes a warp),
// sentences up to 40 words (more than 32 split points: several groups of a warp's lanes); each
// grammar with a second seed of its shape, and with itself (every rule shared: doubled scores).
TEST(CudaProductBackendTest, DeviceCombinationOnBigRulesAndLongSentences) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  for (RandomGrammarOptions shape : {BigParentShape(), ManySubstatesShape()}) {
    auto a = Random(shape);
    shape.seed += 100;
    auto b = Random(shape);
    const Sentences sentences = RandomTestSentences(a->model, 6, 1, 24, 5, /*longest=*/40);
    int parsed = 0;
    for (const Grammars& grammars : {Grammars{a.get(), b.get()}, Grammars{a.get(), a.get()}}) {
      const Product p = MakeProduct(grammars);
      const std::string what = "shape seed " + std::to_string(shape.seed - 100) + ", " +
                               (grammars[1] == a.get() ? "with itself" : "two seeds");
      const auto expected = ParseCpu(p, {.threads = 2}, sentences);
      const auto actual = ParseCuda(p, {.device = {.max_batch_sentences = 4}}, sentences);
      parsed += ExpectSameOutcomes(expected, actual,
                                   {.score = kProductDeviceTolerance, .likelihood = true}, what,
                                   sentences);
    }
    EXPECT_GT(parsed, 0) << "shape seed " << shape.seed - 100;
  }
}

// The wider-lexicon retry with the combination on the device: grammar k's retried charts replace
// its first ones on the device.
TEST(CudaProductBackendTest, RetriesAGrammarWithItsLexiconWidenedOnTheDevice) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  ExpectTheToyRetry(
      [](const Product& p, bool retry, const Sentences& sentences) {
        return ParseCuda(p, {.product = {.retry_with_wider_lexicon = retry}}, sentences);
      },
      kProductDeviceTolerance);
}

// The host combination: a sentence over the host chart budget is parsed on the CPU
// (MakeProductBackend, same options), saying so; the others on the device.
TEST(CudaProductBackendTest, SentencesOverTheBudgetAreParsedOnTheCpu) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  auto a = Random(StandardShape(4)), b = Random(StandardShape(104));
  const Product p = MakeProduct({a.get(), b.get()});
  const Sentences sentences = RandomTestSentences(a->model, 10, 4, 14, 4, /*longest=*/20);
  // The header's count: per grammar NumCells(n) x (states + 1) doubles, inside and outside, four
  // times; sentences up to 10 words fit (1% over their count, against rounding; 11 words need 20%
  // more).
  double bytes = 0;
  for (const TestGrammar* g : p.grammars) {
    bytes += 4 * 2.0 * double(Chart::NumCells(10)) * (g->grammar().num_states() + 1) * 8;
  }
  const auto expected = ParseCpu(p, {.threads = 2}, sentences);
  const auto actual =
      ParseCuda(p, {.host_combination = true, .host_chart_bytes = size_t(1.01 * bytes)}, sentences);
  ExpectSameOutcomes(expected, actual, {.score = kProductDeviceTolerance}, "budget", sentences);
  int on_cpu = 0;
  for (size_t i = 0; i < sentences.size(); ++i) {
    const bool long_sentence = sentences[i].size() > 10;
    if (actual[i].status != ParseStatus::kOk) continue;
    EXPECT_EQ(actual[i].message.rfind("parsed on the CPU", 0) == 0, long_sentence)
        << i << ": " << actual[i].message;
    on_cpu += long_sentence;
  }
  EXPECT_GT(on_cpu, 0);
}

// The built-in product (data/default_grammar), one word, two words, up to 28: exact against the
// fast CPU path, and pruned (safe, each grammar's mask: the cky parse default; and the shared
// mask) against the CPU pruned product; the combination on the device.
TEST(CudaProductBackendTest, BuiltInProduct) {
  CKY_SKIP_WITHOUT_CUDA_DEVICE();
  auto members = LoadDefaultProductGrammar();
  if (!members.ok()) GTEST_SKIP() << members.status().message();
  const std::vector<std::unique_ptr<TestGrammar>> grammars = TestGrammarsOf(&*members);
  ASSERT_FALSE(grammars.empty());
  std::vector<const TestGrammar*> pointers;
  for (const auto& g : grammars) pointers.push_back(g.get());
  const Product p = MakeProduct(pointers);
  const Sentences sentences = {
      {"The", "parser", "reads", "raw", "text", "."},
      {"It", "does", "n't", "need", "a", "GPU", "."},
      {"Researchers", "at", "the", "university", "trained", "it", "."},
      {"Go", "!"},
      {"Yes"},
      {"When",     "the",      "old",     "library", "on",   "the",      "hill",
       "finally",  "reopened", "its",     "doors",   "last", "spring",   ",",
       "hundreds", "of",       "readers", "came",    "to",   "see",      "the",
       "rare",     "maps",     "that",    "had",     "been", "restored", "."}};
  for (auto [pruning, mask] :
       {std::pair{std::optional<PruningOptions>(), ProductPruning::kPerGrammar},
        std::pair{std::optional<PruningOptions>(PruningOptions::Safe()),
                  ProductPruning::kPerGrammar},
        std::pair{std::optional<PruningOptions>(PruningOptions::Safe()),
                  ProductPruning::kShared}}) {
    const std::string what = !pruning                          ? "exact"
                             : mask == ProductPruning::kShared ? "safe, shared mask"
                                                               : "safe, own masks";
    const auto expected = ParseCpu(p, {.threads = 2, .pruning = pruning, .mask = mask}, sentences);
    const auto actual = ParseCuda(p, {.product = {.pruning = pruning, .mask = mask}}, sentences);
    EXPECT_EQ(
        ExpectSameOutcomes(expected, actual, {.score = kProductDeviceTolerance}, what, sentences),
        int(sentences.size()));
  }
}

// A DeviceInsideOutside on the CPU (FastInsideOutside) with the device objects' contract, for the
// host side's tests without a device: results are views valid until the second next batch (two
// buffers alternate; a reused buffer's old values are overwritten with NaN first, so that a view
// read too late shows); batches of more than fail_over sentences fail as out of memory.
class CpuStandIn : public cuda::DeviceInsideOutside {
 public:
  CpuStandIn(const Grammar& grammar, const SumProductRules& rules, int fail_over)
      : grammar_(grammar), rules_(rules), fail_over_(fail_over) {}
  size_t BytesForSentence(int32_t n) const override {
    return size_t(Chart::NumCells(n)) * grammar_.num_states() * 24;
  }
  size_t BatchBudget() const override { return size_t{1} << 32; }
  int32_t MaxLength() const override { return 25; }
  void SetProfiling(bool) override {}
  std::string ProfileReport() const override { return ""; }
  cuda::IoBatchResult MaxRuleBatch(const std::vector<cuda::IoSentence>& batch, bool keep_charts,
                                   std::vector<cuda::IoResult>* results,
                                   std::string* error) override {
    return MaskedMaxRuleBatch(batch, nullptr, keep_charts, results, error);
  }
  cuda::IoBatchResult MaskedMaxRuleBatch(const std::vector<cuda::IoSentence>& batch,
                                         const uint8_t* allowed, bool keep_charts,
                                         std::vector<cuda::IoResult>* results,
                                         std::string* error) override {
    if (allowed != nullptr || !keep_charts) {
      *error = "the stand-in runs exact passes that keep their charts";
      return cuda::IoBatchResult::kFailed;
    }
    if (static_cast<int>(batch.size()) > fail_over_) {
      *error = "stand-in: batch too big";
      return cuda::IoBatchResult::kOutOfMemory;
    }
    ++batches;
    std::vector<InsideOutsideCharts>& buffer = buffers_[next_];
    next_ = 1 - next_;
    for (InsideOutsideCharts& c : buffer) {
      for (ScaledChart* chart : {&c.inside, &c.outside}) {
        std::fill(chart->values.begin(), chart->values.end(), std::nan(""));
        std::fill(chart->log_scale.begin(), chart->log_scale.end(), std::nan(""));
      }
    }
    if (buffer.size() < batch.size()) buffer.resize(batch.size());
    results->assign(batch.size(), {});
    for (size_t i = 0; i < batch.size(); ++i) {
      LexicalScores lexical{.length = batch[i].length, .num_states = grammar_.num_states()};
      lexical.scores.assign(batch[i].lexical,
                            batch[i].lexical + size_t(batch[i].length) * grammar_.num_states());
      FastInsideOutside(grammar_, rules_, lexical, &buffer[i]);
      cuda::IoResult& r = (*results)[i];
      r.log_likelihood = buffer[i].log_likelihood;
      r.inside = buffer[i].inside.values.data();
      r.inside_scale = buffer[i].inside.log_scale.data();
      r.outside = buffer[i].outside.values.data();
      r.outside_scale = buffer[i].outside.log_scale.data();
    }
    return cuda::IoBatchResult::kOk;
  }
  int batches = 0;

 private:
  const Grammar& grammar_;
  const SumProductRules& rules_;
  int fail_over_;
  std::vector<InsideOutsideCharts> buffers_[2];
  int next_ = 0;
};

std::vector<ParseOutcome> ParseStandIn(const Product& p, const CudaProductOptions& options,
                                       const Sentences& sentences, int fail_over = 1 << 20) {
  std::vector<std::unique_ptr<cuda::DeviceInsideOutside>> devices;
  for (int k = 0; k < p.product->size(); ++k) {
    devices.push_back(
        std::make_unique<CpuStandIn>(p.product->grammar(k), p.product->rules(k), fail_over));
  }
  auto backend = MakeCudaProductBackendOver(*p.product, p.lexicons, std::move(devices), options);
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  EXPECT_EQ((*backend)->name(),
            "cuda/max-rule-product of " + std::to_string(p.product->size()) + " grammars");
  return ParseWith(*p.grammars[0], std::move(*backend), sentences,
                   {.retry_with_wider_lexicon = false});
}

// The host side (batches, lexical scores, chart copies, the combination behind the next batch,
// retries in halves, the CPU fallback for sentences over MaxLength) over stand-in devices that
// compute with the fast CPU path: the CPU product's outcomes bit for bit, k-best lists included.
TEST(CudaProductBackendHostTest, EqualsTheCpuProductOverCpuStandIns) {
  int parsed = 0;
  // Up to 30 words: those over the stand-in's MaxLength (25) are parsed on the CPU.
  ForEachProduct(
      StandardShape, {3, 8}, 1, {14, 14, 30},
      [&](uint64_t seed, const Grammars& grammars, const Product& p, const Sentences& sentences) {
        const DecoderOptions decoder{.kbest = 3};
        const auto expected = ParseCpu(p, {.threads = 2, .decoder = decoder}, sentences);
        for (int fail_over : {1 << 20, 2}) {
          const std::string what = std::to_string(grammars.size()) + " grammars, seed " +
                                   std::to_string(seed) + ", failing over " +
                                   std::to_string(fail_over);
          const auto actual =
              ParseStandIn(p,
                           {.device = {.max_batch_sentences = 5, .extraction_threads = 2},
                            .product = {.decoder = decoder}},
                           sentences, fail_over);
          parsed += ExpectSameOutcomes(expected, actual,
                                       {.score = kIdenticalScores,
                                        .likelihood = true,
                                        .kbest = true,
                                        .kbest_score = kIdenticalScores},
                                       what, sentences);
          ASSERT_EQ(actual.size(), sentences.size());
          for (size_t i = 0; i < sentences.size(); ++i) {
            if (actual[i].status != ParseStatus::kOk) continue;
            EXPECT_EQ(actual[i].message.rfind("parsed on the CPU", 0) == 0,
                      sentences[i].size() > 25)
                << what << ", sentence " << i << ": " << actual[i].message;
          }
        }
      });
  EXPECT_GT(parsed, 60);
}

// A grammar that cannot parse a sentence with its lexicon parses it again with the lexicon
// widened, as the CPU product does; not with the retry off.
TEST(CudaProductBackendHostTest, RetriesAGrammarWithItsLexiconWidened) {
  ExpectTheToyRetry(
      [](const Product& p, bool retry, const Sentences& sentences) {
        return ParseStandIn(p, {.product = {.retry_with_wider_lexicon = retry}}, sentences);
      },
      kIdenticalScores);
}

// Without a device (or CUDA support) the backend cannot be made, and says why.
TEST(CudaProductBackendTest, SaysWhyWithoutADevice) {
  if (CudaDevicePresent()) GTEST_SKIP() << "a CUDA device is present";
  auto a = Random(StandardShape(1));
  const Product p = MakeProduct({a.get()});
  auto backend = MakeCudaProductBackend(*p.product, p.lexicons);
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.status().message().find("use --backend cpu"), std::string::npos)
      << backend.status().message();
}

}  // namespace
}  // namespace cky
