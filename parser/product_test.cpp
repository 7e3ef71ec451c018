#include "parser/product.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "grammar_io/default_grammar.h"
#include "lexicon/lexicon.h"
#include "parser/cpu_backend.h"
#include "parser/max_rule_test_util.h"
#include "parser/parser.h"
#include "parser/random_grammar.h"
#include "parser/tree_format.h"

namespace cky {
namespace {

namespace fs = std::filesystem;

// Scores the product's reference and fast paths must agree within (sums in other orders).
constexpr double kTolerance = 1e-9;

struct Model {
  BerkeleyModel model;
  Lexicon lexicon;
  explicit Model(BerkeleyModel m) : model(std::move(m)), lexicon(*Lexicon::Build(model)) {}
  const Grammar& grammar() const { return model.grammar; }
};

std::unique_ptr<Model> RandomModel(uint64_t seed, double density = 0.4, double unary = 0.2,
                                   int phrasal = 4) {
  RandomGrammarOptions options;
  options.phrasal_symbols = phrasal;
  options.tags = 3;
  options.substates = 2;
  options.base_rule_density = density;
  options.unary_density = unary;
  options.seed = seed;
  return std::make_unique<Model>(MakeRandomModel(options));
}

std::unique_ptr<GrammarProduct> Product(const std::vector<const Model*>& models) {
  std::vector<const Grammar*> grammars;
  std::vector<std::string> labels;
  for (const Model* m : models) {
    grammars.push_back(&m->grammar());
    labels.push_back("g" + std::to_string(labels.size()));
  }
  auto product = GrammarProduct::Create(grammars, labels);
  EXPECT_TRUE(product.ok()) << product.status().message();
  return std::move(*product);
}

std::vector<const Lexicon*> Lexicons(const std::vector<const Model*>& models) {
  std::vector<const Lexicon*> lexicons;
  for (const Model* m : models) lexicons.push_back(&m->lexicon);
  return lexicons;
}

std::vector<ParseOutcome> ParseAll(const GrammarProduct& product,
                                   const std::vector<const Model*>& models,
                                   const ProductOptions& options,
                                   const std::vector<std::vector<std::string>>& sentences) {
  auto backend = MakeProductBackend(product, Lexicons(models), options);
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  Parser parser(models[0]->grammar(), models[0]->lexicon, std::move(*backend),
                {.retry_with_wider_lexicon = false});
  return parser.Parse(sentences);
}

std::vector<ParseOutcome> ParseSingle(const Model& model, const DecoderOptions& decoder,
                                      const std::vector<std::vector<std::string>>& sentences,
                                      bool reference = false) {
  Parser parser(model.grammar(), model.lexicon,
                reference ? MakeReferenceMaxRuleBackend(model.grammar(), decoder)
                          : MakeCpuMaxRuleBackend(model.grammar(), 2, decoder),
                {.retry_with_wider_lexicon = false});
  return parser.Parse(sentences);
}

std::vector<std::vector<std::string>> Sentences(const Model& model, uint64_t seed,
                                                int longest = 30) {
  auto sentences = MakeRandomSentences(model.model, 14, 1, std::min(14, longest), seed);
  AddLengthEdgeCases(longest, &sentences);
  sentences.push_back({});
  return sentences;
}

// A product of one grammar decodes that grammar's max-rule trees, scores and k-best lists exactly
// (the same sums in the same order), with the fast path and, within the tolerance, the reference.
TEST(ProductTest, ProductOfOneGrammarIsThatGrammarsMaxRule) {
  int parsed = 0;
  for (uint64_t seed : {1, 7, 21}) {
    auto model = RandomModel(seed);
    const std::vector<const Model*> one = {model.get()};
    auto product = Product(one);
    const auto sentences = Sentences(*model, seed);
    const DecoderOptions decoder{.kbest = 4};
    const auto single = ParseSingle(*model, decoder, sentences);
    const auto fast = ParseAll(*product, one, {.threads = 2, .decoder = decoder}, sentences);
    const auto reference =
        ParseAll(*product, one, {.reference = true, .decoder = decoder}, sentences);
    for (size_t i = 0; i < sentences.size(); ++i) {
      ASSERT_EQ(single[i].status, fast[i].status) << seed << " " << i;
      ASSERT_EQ(single[i].status, reference[i].status) << seed << " " << i;
      if (single[i].status != ParseStatus::kOk) continue;
      ++parsed;
      EXPECT_EQ(single[i].tree, fast[i].tree);
      EXPECT_EQ(single[i].log_score, fast[i].log_score);  // exactly
      EXPECT_EQ(fast[i].log_likelihood, kNegInf);         // a product defines no P(w)
      EXPECT_EQ(single[i].tree, reference[i].tree);
      EXPECT_NEAR(single[i].log_score, reference[i].log_score, kTolerance);
      ASSERT_EQ(single[i].kbest.size(), fast[i].kbest.size());
      for (size_t r = 0; r < single[i].kbest.size(); ++r) {
        EXPECT_EQ(single[i].kbest[r].tree, fast[i].kbest[r].tree);
        EXPECT_EQ(single[i].kbest[r].log_score, fast[i].kbest[r].log_score);
      }
    }
    EXPECT_EQ(fast.back().status, ParseStatus::kNoParse);  // the empty sentence
  }
  EXPECT_GT(parsed, 30);
}

// A product of a grammar with itself: the same trees, every score exactly doubled.
TEST(ProductTest, ProductOfTwoIdenticalGrammarsKeepsTheTrees) {
  int parsed = 0;
  for (uint64_t seed : {2, 5}) {
    auto model = RandomModel(seed);
    auto product = Product({model.get(), model.get()});
    const auto sentences = Sentences(*model, seed);
    const DecoderOptions decoder{.kbest = 3};
    const auto single = ParseSingle(*model, decoder, sentences);
    const auto fast = ParseAll(*product, {model.get(), model.get()},
                               {.threads = 2, .decoder = decoder}, sentences);
    const auto reference = ParseAll(*product, {model.get(), model.get()},
                                    {.reference = true, .decoder = decoder}, sentences);
    for (size_t i = 0; i < sentences.size(); ++i) {
      ASSERT_EQ(single[i].status, fast[i].status);
      ASSERT_EQ(single[i].status, reference[i].status);
      if (single[i].status != ParseStatus::kOk) continue;
      ++parsed;
      EXPECT_EQ(single[i].tree, fast[i].tree);
      EXPECT_EQ(2 * single[i].log_score, fast[i].log_score);
      EXPECT_EQ(single[i].tree, reference[i].tree);
      EXPECT_NEAR(2 * single[i].log_score, reference[i].log_score, kTolerance);
      ASSERT_EQ(single[i].kbest.size(), fast[i].kbest.size());
      for (size_t r = 0; r < single[i].kbest.size(); ++r) {
        EXPECT_EQ(single[i].kbest[r].tree, fast[i].kbest[r].tree);
        EXPECT_EQ(2 * single[i].kbest[r].log_score, fast[i].kbest[r].log_score);
      }
    }
  }
  EXPECT_GT(parsed, 20);
}

// Charts of the same sentence, reference and fast, for a product of different grammars.
struct Charts {
  std::vector<LexicalScores> lexical;
  std::vector<InsideOutsideCharts> charts;
  std::vector<MemberCharts> members;
};

Charts Compute(const GrammarProduct& product, const std::vector<const Model*>& models,
               const std::vector<std::string>& words, bool reference) {
  Charts c;
  c.lexical.resize(models.size());
  c.charts.resize(models.size());
  for (size_t k = 0; k < models.size(); ++k) {
    const Grammar& g = models[k]->grammar();
    c.lexical[k] = ScoreWords(g, models[k]->lexicon, words);
    if (reference) {
      ReferenceInsideOutside(g, c.lexical[k], &c.charts[k]);
    } else {
      FastInsideOutside(g, product.rules(k), c.lexical[k], &c.charts[k]);
    }
  }
  for (size_t k = 0; k < models.size(); ++k) c.members.push_back({&c.lexical[k], &c.charts[k]});
  return c;
}

// The reference and the fast path agree on every cell of the product chart, and so do the
// backends built on them (trees, scores, k-best lists), on products of 2 and 3 grammars.
TEST(ProductTest, ReferenceEqualsFastOnProductsOfDifferentGrammars) {
  int cells = 0, parsed = 0;
  for (uint64_t seed : {3, 11, 19}) {
    auto a = RandomModel(seed), b = RandomModel(seed + 100), c = RandomModel(seed + 200);
    for (const std::vector<const Model*>& models :
         {std::vector<const Model*>{a.get(), b.get()}, {a.get(), b.get(), c.get()}}) {
      auto product = Product(models);
      const auto sentences = Sentences(*a, seed, 16);  // the reference's plain loops are slow
      for (const auto& words : sentences) {
        if (words.empty()) continue;
        Charts slow = Compute(*product, models, words, true);
        Charts fast = Compute(*product, models, words, false);
        if (std::any_of(slow.charts.begin(), slow.charts.end(),
                        [](const auto& ch) { return !(ch.log_likelihood > kNegInf); })) {
          continue;
        }
        MaxRuleChart expected, actual;
        ReferenceProductMaxRuleChart(*product, slow.members, &expected);
        FastProductMaxRuleChart(*product, fast.members, &actual);
        ASSERT_EQ(expected.score.size(), actual.score.size());
        for (size_t i = 0; i < expected.score.size(); ++i) {
          ASSERT_EQ(expected.score[i] > kNegInf, actual.score[i] > kNegInf) << i;
          if (!(expected.score[i] > kNegInf)) continue;
          ++cells;
          EXPECT_NEAR(expected.score[i], actual.score[i], kTolerance);
          EXPECT_EQ(expected.unary_child[i], actual.unary_child[i]);
          ASSERT_EQ(expected.score_before_unary[i] > kNegInf,
                    actual.score_before_unary[i] > kNegInf);
          if (!(expected.score_before_unary[i] > kNegInf)) continue;
          EXPECT_NEAR(expected.score_before_unary[i], actual.score_before_unary[i], kTolerance);
          EXPECT_EQ(expected.split[i], actual.split[i]);
          EXPECT_EQ(expected.left[i], actual.left[i]);
          EXPECT_EQ(expected.right[i], actual.right[i]);
        }
      }
      const DecoderOptions decoder{.kbest = 5};
      const auto reference =
          ParseAll(*product, models, {.reference = true, .decoder = decoder}, sentences);
      const auto threaded =
          ParseAll(*product, models, {.threads = 2, .decoder = decoder}, sentences);
      for (size_t i = 0; i < sentences.size(); ++i) {
        ASSERT_EQ(reference[i].status, threaded[i].status) << i << ": " << reference[i].message;
        if (reference[i].status != ParseStatus::kOk) continue;
        ++parsed;
        EXPECT_EQ(reference[i].tree, threaded[i].tree);
        EXPECT_NEAR(reference[i].log_score, threaded[i].log_score, kTolerance);
        ASSERT_EQ(reference[i].kbest.size(), threaded[i].kbest.size());
        for (size_t r = 0; r < reference[i].kbest.size(); ++r) {
          EXPECT_NEAR(reference[i].kbest[r].log_score, threaded[i].kbest[r].log_score, kTolerance);
        }
      }
    }
  }
  EXPECT_GT(cells, 1000);
  EXPECT_GT(parsed, 40);
}

// The product = the brute-force argmax, over base-symbol trees, of the sum over the grammars of
// the tree's log event posteriors, each posterior summed over every derivation of its grammar that
// uses it (unaries only at ROOT, where Berkeley's unary formula is the true posterior); its k-best
// list = the brute-force ranking.
TEST(ProductTest, EqualsBruteForceArgmaxOfSummedLogPosteriors) {
  int checked = 0, unique = 0, deep = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    auto a = RandomModel(seed, 0.4, 0.0, 3), b = RandomModel(seed + 50, 0.4, 0.0, 3);
    const std::vector<const Model*> models = {a.get(), b.get()};
    auto product = Product(models);
    for (const auto& words : MakeRandomSentences(a->model, 16, 2, 4, seed * 3)) {
      std::vector<BruteForcePosteriors> brute;
      for (const Model* m : models) {
        brute.push_back(
            EnumerateRulePosteriors(m->grammar(), ScoreWords(m->grammar(), m->lexicon, words)));
      }
      if (brute[0].trees.empty() || brute[1].trees.empty()) continue;
      // Trees of either grammar whose every event has a posterior in both.
      std::set<std::vector<std::string>> trees = brute[0].trees;
      trees.insert(brute[1].trees.begin(), brute[1].trees.end());
      std::vector<double> scores;
      for (const auto& t : trees) {
        double score = 0;
        bool in_both = true;
        for (const auto& b : brute) {
          for (const auto& e : t) {
            auto it = b.posterior.find(e);
            if (it == b.posterior.end()) {
              in_both = false;
              break;
            }
            score += std::log(it->second);
          }
        }
        if (in_both) scores.push_back(score);
      }
      std::sort(scores.rbegin(), scores.rend());
      auto parser = ProductParser::Create(*product, Lexicons(models), {.decoder = {.kbest = 6}});
      ASSERT_TRUE(parser.ok());
      const ParseOutcome outcome = (*parser)->Parse(words);
      if (scores.empty()) {
        EXPECT_EQ(outcome.status, ParseStatus::kNoParse);
        continue;
      }
      ASSERT_EQ(outcome.status, ParseStatus::kOk) << outcome.message;
      ++checked;
      EXPECT_NEAR(outcome.log_score, scores[0], 1e-9) << "seed " << seed;
      EXPECT_EQ(Leaves(outcome.tree), words);
      ASSERT_EQ(outcome.kbest.size(), std::min<size_t>(6, scores.size()));
      for (size_t r = 0; r < outcome.kbest.size(); ++r) {
        EXPECT_NEAR(outcome.kbest[r].log_score, scores[r], 1e-9)
            << "seed " << seed << " rank " << r;
      }
      if (scores.size() == 1 || scores[0] - scores[1] > 1e-6) ++unique;
      deep += scores.size() > 3;
    }
  }
  EXPECT_GT(checked, 20);
  EXPECT_GT(unique, 10);
  EXPECT_GT(deep, 5);
}

// Grammars are matched by symbol name: a grammar whose symbols are numbered otherwise (a text
// export read back with its .splits lines reversed) makes the same product as the same grammar
// numbered as grammar 0, in either place.
TEST(ProductTest, MatchesSymbolsByName) {
  auto model = RandomModel(4);
  const fs::path dir = fs::temp_directory_path() / "cky_product_test_symbols";
  fs::create_directories(dir);
  const std::string prefix = (dir / "g").string();
  ASSERT_TRUE(WriteGrammarTextFiles(model->model, prefix).ok());
  auto plain = ReadWriteGrammarTextFiles(prefix, {.use_cache = false});
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  std::vector<std::string> lines;
  {
    std::ifstream in(prefix + ".splits");
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  std::reverse(lines.begin(), lines.end());
  {
    std::ofstream out(prefix + ".splits");
    for (const auto& line : lines) out << line << "\n";
  }
  auto reread = ReadWriteGrammarTextFiles(prefix, {.use_cache = false});
  ASSERT_TRUE(reread.ok()) << reread.status().message();
  fs::remove_all(dir);
  Model same(std::move(*plain)), permuted(std::move(*reread));
  ASSERT_NE(permuted.grammar().symbol_names, same.grammar().symbol_names);
  const auto sentences = Sentences(same, 9);
  auto twice = Product({&same, &same});
  const auto expected = ParseAll(*twice, {&same, &same}, {.threads = 2}, sentences);
  int parsed = 0;
  for (const std::vector<const Model*>& models :
       {std::vector<const Model*>{&same, &permuted}, {&permuted, &same}}) {
    auto mixed = Product(models);
    const auto actual = ParseAll(*mixed, models, {.threads = 2}, sentences);
    for (size_t i = 0; i < sentences.size(); ++i) {
      ASSERT_EQ(expected[i].status, actual[i].status);
      if (expected[i].status != ParseStatus::kOk) continue;
      ++parsed;
      EXPECT_EQ(expected[i].tree, actual[i].tree);
      EXPECT_NEAR(expected[i].log_score, actual[i].log_score, kTolerance);
    }
  }
  EXPECT_GT(parsed, 20);
}

TEST(ProductTest, RefusesGrammarsWhoseSymbolsDiffer) {
  auto a = RandomModel(1, 0.4, 0.2, 4), b = RandomModel(2, 0.4, 0.2, 5);
  auto product = GrammarProduct::Create({&a->grammar(), &b->grammar()}, {"a.ckybin", "b.ckybin"});
  ASSERT_FALSE(product.ok());
  EXPECT_EQ(product.status().message(),
            "grammars a.ckybin and b.ckybin have different base symbols, and a product needs the "
            "same: only in b.ckybin: P4");
  EXPECT_FALSE(GrammarProduct::Create({}, {}).ok());
}

// The products of the first 1, 2 and 3 grammars from one set of charts equal the separate
// products' parses, pruned (both masks) and exact.
TEST(ProductTest, PrefixesEqualSeparateProducts) {
  auto a = RandomModel(6), b = RandomModel(106), c = RandomModel(206);
  const std::vector<const Model*> all = {a.get(), b.get(), c.get()};
  auto product = Product(all);
  const auto sentences = Sentences(*a, 6);
  const std::vector<int> sizes = {1, 2, 3};
  for (const ProductOptions& options :
       {ProductOptions{}, ProductOptions{.pruning = PruningOptions::Safe()},
        ProductOptions{.pruning = PruningOptions::Berkeley(false),
        .mask = ProductPruning::kShared}}) {
    auto parser = ProductParser::Create(*product, Lexicons(all), options);
    ASSERT_TRUE(parser.ok());
    for (int size : sizes) {
      const std::vector<const Model*> first(all.begin(), all.begin() + size);
      auto separate = Product(first);
      const auto expected = ParseAll(*separate, first, options, sentences);
      for (size_t i = 0; i < sentences.size(); ++i) {
        const auto outcomes = (*parser)->ParsePrefixes(sentences[i], sizes);
        ASSERT_EQ(outcomes.size(), sizes.size());
        const ParseOutcome& actual = outcomes[size - 1];
        ASSERT_EQ(expected[i].status, actual.status) << i;
        EXPECT_EQ(expected[i].tree, actual.tree) << i;
        EXPECT_EQ(expected[i].log_score, actual.log_score) << i;
      }
    }
  }
}

// Pruning that cuts nothing a derivation uses (PruningOptions::Exact) keeps the exact product's
// trees and scores with each grammar's own mask. A shared mask (grammar 0's) restricts the other
// grammars to grammar 0's items, which changes their posteriors (pruned mass, as pruning changes
// one grammar's), so it keeps the exact product only when the grammars derive the same items: a
// grammar with itself.
TEST(ProductTest, ExactPruningKeepsTheTrees) {
  auto a = RandomModel(8), b = RandomModel(108);
  int parsed = 0;
  for (const auto& [models, mask] :
       {std::pair{std::vector<const Model*>{a.get(), b.get()}, ProductPruning::kPerGrammar},
        std::pair{std::vector<const Model*>{a.get(), a.get()}, ProductPruning::kPerGrammar},
        std::pair{std::vector<const Model*>{a.get(), a.get()}, ProductPruning::kShared}}) {
    SCOPED_TRACE(mask == ProductPruning::kShared ? "shared" : "per grammar");
    auto product = Product(models);
    const auto sentences = Sentences(*a, 8);
    const auto exact = ParseAll(*product, models, {.threads = 2}, sentences);
    const auto pruned =
        ParseAll(*product, models, {.threads = 2, .pruning = PruningOptions::Exact(), .mask = mask},
                 sentences);
    for (size_t i = 0; i < sentences.size(); ++i) {
      ASSERT_EQ(exact[i].status, pruned[i].status) << i;
      EXPECT_EQ(exact[i].tree, pruned[i].tree) << i;
      if (exact[i].status != ParseStatus::kOk) continue;
      ++parsed;
      EXPECT_NEAR(exact[i].log_score, pruned[i].log_score, kTolerance);
    }
  }
  EXPECT_GT(parsed, 20);
}

// The built-in grammar: a product of it with itself keeps its max-rule trees (fast path, pruned
// per grammar with the safe thresholds against the single pruned backend, and exact).
TEST(ProductTest, BuiltInGrammarWithItself) {
  auto loaded = LoadDefaultGrammar();
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  Model model(std::move(*loaded));
  const std::vector<std::vector<std::string>> sentences = {
      {"The", "parser", "reads", "raw", "text", "."},
      {"It", "does", "n't", "need", "a", "GPU", "."},
      {"Researchers", "at", "the", "university", "trained", "it", "."}};
  auto product = Product({&model, &model});
  const auto single = ParseSingle(model, {}, sentences);
  const auto twice = ParseAll(*product, {&model, &model}, {.threads = 2}, sentences);
  auto pruned_single =
      MakePrunedCpuBackend(model.grammar(), DecoderKind::kMaxRule, PruningOptions::Safe(), 2);
  ASSERT_TRUE(pruned_single.ok());
  Parser pruned_parser(model.grammar(), model.lexicon, std::move(*pruned_single));
  const auto pruned = pruned_parser.Parse(sentences);
  // Each grammar's own mask: the product of a grammar with itself is then the pruned single parse
  // with twice its scores (a shared mask allows every substate of a surviving symbol).
  const auto pruned_twice = ParseAll(
      *product, {&model, &model},
      {.threads = 2, .pruning = PruningOptions::Safe(), .mask = ProductPruning::kPerGrammar},
      sentences);
  for (size_t i = 0; i < sentences.size(); ++i) {
    ASSERT_EQ(single[i].status, ParseStatus::kOk);
    ASSERT_EQ(twice[i].status, ParseStatus::kOk);
    EXPECT_EQ(single[i].tree, twice[i].tree);
    EXPECT_EQ(2 * single[i].log_score, twice[i].log_score);
    ASSERT_EQ(pruned_twice[i].status, ParseStatus::kOk);
    EXPECT_EQ(pruned[i].tree, pruned_twice[i].tree);
    EXPECT_EQ(2 * pruned[i].log_score, pruned_twice[i].log_score);
  }
}

// Two different built-in grammars (the built-in product's first two members): the reference and
// the threaded fast path give the same trees and scores (short sentences: the reference's plain
// loops run over every rule of both grammars).
TEST(ProductTest, BuiltInProductReferenceEqualsFast) {
  auto members = LoadDefaultProductGrammar();
  ASSERT_TRUE(members.ok()) << members.status().message();
  ASSERT_GE(members->size(), 2u);
  Model a(std::move((*members)[0].model)), b(std::move((*members)[1].model));
  const std::vector<const Model*> models = {&a, &b};
  auto product = Product(models);
  const std::vector<std::vector<std::string>> sentences = {
      {"The", "parser", "reads", "text", "."}, {"Researchers", "trained", "it", "twice", "."}};
  const auto reference = ParseAll(*product, models, {.reference = true}, sentences);
  const auto fast = ParseAll(*product, models, {.threads = 2}, sentences);
  for (size_t i = 0; i < sentences.size(); ++i) {
    ASSERT_EQ(reference[i].status, ParseStatus::kOk) << reference[i].message;
    ASSERT_EQ(fast[i].status, ParseStatus::kOk) << fast[i].message;
    EXPECT_EQ(reference[i].tree, fast[i].tree);
    EXPECT_NEAR(reference[i].log_score, fast[i].log_score, kTolerance);
  }
}

}  // namespace
}  // namespace cky
