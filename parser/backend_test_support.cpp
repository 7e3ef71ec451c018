#include "parser/backend_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "common/sentence_file.h"
#include "common/test_variants.h"
#include "common/thread_pool.h"
#include "cuda/common/device.h"
#include "parser/cpu_backend.h"
#include "parser/tree_format.h"

namespace cky {
namespace {

constexpr int kMostParse = -1;

// Where a fixture's grammar comes from: random options, or a shared grammar's path.
struct GrammarSpec {
  std::string key;              // unique per grammar: fixtures with one key share it
  RandomGrammarOptions random;  // when `shared` is empty
  std::string shared;           // relative to SharedGrammarPath("")
};

struct FixtureSpec {
  std::string name;
  GrammarSpec grammar;
  std::function<Sentences(const TestGrammar&)> sentences;
  // What the fixture promises about its grammar or sentences; "" when kept.
  std::function<std::string(const TestGrammar&, const Sentences&)> check;
  int min_parsed = 1;  // kMostParse: more than half of the sentences (after KeepTestShard)
  std::vector<size_t> must_parse;
  int min_full_kbest_lists = 1;
  bool all_on_device = false;
};

std::string RandomKey(const RandomGrammarOptions& o) {
  std::ostringstream key;
  key << "random:" << o.phrasal_symbols << "," << o.tags << "," << o.substates << ","
      << o.base_rule_density << "," << o.unary_density << "," << o.vocabulary << ","
      << o.tags_per_word << "," << o.big_parent_rules << "," << o.seed;
  return key.str();
}

GrammarSpec Random(const RandomGrammarOptions& options) {
  return {RandomKey(options), options, ""};
}
GrammarSpec Shared(const std::string& relative) { return {"shared:" + relative, {}, relative}; }

// A sparse grammar: few rules, one tag per word, few unaries (the Viterbi kernels' presence masks
// skip most of their work on it).
RandomGrammarOptions SparseShape() {
  return {.phrasal_symbols = 30,
          .tags = 12,
          .substates = 2,
          .base_rule_density = 0.008,
          .unary_density = 0.005,
          .vocabulary = 40,
          .tags_per_word = 1,
          .seed = 3};
}

// The CPU decoders' grammars: 6 phrasal symbols, 4 tags, 2 substates.
RandomGrammarOptions TwoSubstateShape(uint64_t seed) {
  return {.phrasal_symbols = 6, .tags = 4, .substates = 2, .seed = seed};
}

// The most binary rules of one parent state.
int32_t MostRulesOfAParent(const Grammar& g) {
  int32_t most = 0;
  for (int32_t p = 0; p < g.num_states(); ++p)
    most = std::max(most, g.binary_parent_begin[p + 1] - g.binary_parent_begin[p]);
  return most;
}

std::vector<FixtureSpec> FixtureSpecs() {
  std::vector<FixtureSpec> specs;
  // Every backend's everyday case, and the empty sentence (no parse).
  for (uint64_t seed : {1, 2, 3}) {
    specs.push_back({.name = "random_seed" + std::to_string(seed),
                     .grammar = Random(StandardShape(seed)),
                     .sentences = [seed](const TestGrammar& g) {
                       Sentences s = RandomTestSentences(g.model, 30, 1, 25, seed * 13, 60);
                       s.push_back({});
                       return s;
                     }});
  }
  // The GPU k-best test's grammar: more than 10 full lists of 5.
  specs.push_back(
      {.name = "random_seed7",
       .grammar = Random(StandardShape(7)),
       .sentences =
           [](const TestGrammar& g) { return RandomTestSentences(g.model, 20, 1, 25, 5, 60); },
       .min_full_kbest_lists = 11});
  // The CPU decoders' grammars (2 substates). Seed 1 has states whose inside is 0 but whose
  // outside reaches Berkeley's unary posterior.
  for (uint64_t seed : {1, 21, 33, 9}) {
    specs.push_back({.name = "small_random_seed" + std::to_string(seed),
                     .grammar = Random(TwoSubstateShape(seed)),
                     .sentences =
                         [](const TestGrammar& g) {
                           Sentences s = RandomTestSentences(g.model, 24, 1, 20, 4, 60);
                           s.push_back({});
                           return s;
                         },
                     .min_parsed = 11,
                     .min_full_kbest_lists = 6});
  }
  specs.push_back(
      {.name = "many_substates",
       .grammar = Random(ManySubstatesShape()),
       .sentences =
           [](const TestGrammar& g) { return RandomTestSentences(g.model, 6, 3, 8, 99, 20); },
       .check = [](const TestGrammar& g, const Sentences&) -> std::string {
         if (g.grammar().num_binary_rules() > 35 * 35 * 35) return "";
         return "fewer than 35^3 binary rules";
       }});
  specs.push_back({.name = "big_parent",
                   .grammar = Random(BigParentShape()),
                   .sentences =
                       [](const TestGrammar& g) {
                         Sentences s = MakeRandomSentences(g.model, 20, 1, 20, 77);
                         s.push_back({"w4"});
                         s.push_back({"w0", "w1"});
                         s.push_back(std::vector<std::string>(40, "w2"));
                         return s;
                       },
                   .check = [](const TestGrammar& g, const Sentences&) -> std::string {
                     if (MostRulesOfAParent(g.grammar()) > 256) return "";
                     return "no parent state with more than 256 binary rules";
                   }});
  // The shared real grammars with GUM sentences.
  struct Real {
    const char* name;
    const char* path;
    size_t count;
  };
  for (const Real& real : {Real{"small_sm2", "berkeley-small/small_sm2.gr", 40},
                           Real{"wsj_1", "wsj-projected/wsj_1.gr", 12},
                           Real{"gum_sm3", "berkeley-gum/gum_sm3.gr", 25}}) {
    specs.push_back({.name = real.name,
                     .grammar = Shared(real.path),
                     .sentences =
                         [count = real.count](const TestGrammar&) {
                           return RealGrammarSentences(SharedReferenceSentences(), count);
                         },
                     .min_parsed = kMostParse});
  }
  // The coarse-to-fine grammars: two pre-parse levels below the fine grammar.
  for (uint64_t seed : {1, 21, 33}) {
    specs.push_back({.name = "split_seed" + std::to_string(seed),
                     .grammar = Random(SplitShape(seed)),
                     .sentences =
                         [seed](const TestGrammar& g) {
                           return RandomTestSentences(g.model, 12, 1, 16, seed, 60);
                         },
                     .min_parsed = 9});
  }
  // A fine grammar of 8 substates a symbol: the pruned fine Viterbi pass runs on the pair
  // kernels there (cuda/pruning/pruned_viterbi.h), below them on kernels 2.
  specs.push_back(
      {.name = "split8_seed5",
       .grammar = Random(SplitShape(5, 8)),
       .sentences =
           [](const TestGrammar& g) { return RandomTestSentences(g.model, 12, 1, 16, 5, 40); },
       .min_parsed = 9});
  specs.push_back(
      {.name = "unsplit",
       .grammar = Random(SplitShape(4, 1)),
       .sentences =
           [](const TestGrammar& g) { return RandomTestSentences(g.model, 12, 1, 16, 4, 30); },
       .min_parsed = 8});
  // The Viterbi kernels' batch layouts. 8 copies each of 8 sentences of 10 words: each group of 8
  // cells holds one sentence's cell, so the presence masks skip most (tile, group) iterations (no
  // other lengths: they would change that layout; sparse_mixed has them).
  specs.push_back({.name = "sparse_copies",
                   .grammar = Random(SparseShape()),
                   .sentences = [](const TestGrammar& g) {
                     Sentences s;
                     for (const auto& sentence : MakeRandomSentences(g.model, 8, 10, 10, 5))
                       for (int copy = 0; copy < 8; ++copy) s.push_back(sentence);
                     return s;
                   }});
  // Sentences of several lengths on the sparse grammar: groups hold several sentences' cells.
  specs.push_back({.name = "sparse_mixed",
                   .grammar = Random(SparseShape()),
                   .sentences = [](const TestGrammar& g) {
                     Sentences s = MakeRandomSentences(g.model, 24, 2, 14, 6);
                     AddLengthEdgeCases(14, &s);
                     return s;
                   }});
  // About 1,000 sentences of 8 to 12 words in one batch: each block of the pair-seg kernels loops
  // over several cell groups of its tile (the -g variants take up to 4 groups at once), and spans 1
  // and 2 have over 8,448 cells (the -u unary pass takes several cells per block).
  specs.push_back(
      {.name = "thousand",
       .grammar = Random(StandardShape(2)),
       .sentences =
           [](const TestGrammar& g) { return RandomTestSentences(g.model, 1000, 8, 12, 21, 12); },
       .check = [](const TestGrammar&, const Sentences& s) -> std::string {
         int64_t one_word_cells = 0;
         for (const auto& words : s) one_word_cells += int64_t(words.size());
         return one_word_cells >= 8 * 1000 ? "" : "fewer than 8,000 one-word cells";
       }});
  // A 30-word sentence among short ones (sentence 5): batches of a few sentences, and a budget that
  // the long one never fits.
  specs.push_back({.name = "splits",
                   .grammar = Random({.phrasal_symbols = 5, .tags = 3, .seed = 8}),
                   .sentences = [](const TestGrammar& g) {
                     Sentences s = MakeRandomSentences(g.model, 12, 1, 12, 3);
                     s.insert(s.begin() + 5, std::vector<std::string>(30, "w1"));
                     AddLengthEdgeCases(30, &s);
                     return s;
                   }});
  // 800 words: span lengths where a block of every kernel needs the shared-memory opt-in (767 and
  // up with one substate a symbol). Dense enough that the sentence has a parse.
  specs.push_back({.name = "eight_hundred",
                   .grammar = Random({.phrasal_symbols = 2,
                                      .tags = 2,
                                      .substates = 1,
                                      .base_rule_density = 0.9,
                                      .vocabulary = 4,
                                      .seed = 1}),
                   .sentences =
                       [](const TestGrammar& g) {
                         Sentences s = MakeRandomSentences(g.model, 1, 800, 800, 5);
                         s.push_back({"w1", "w2", "w3"});
                         s.push_back({"w1"});
                         s.push_back({"w2", "w3"});
                         return s;
                       },
                   .must_parse = {0},
                   .all_on_device = true});
  return specs;
}

std::mutex& CacheMutex() {
  static std::mutex mutex;
  return mutex;
}

// Grammars by GrammarSpec::key, null when absent (with why).
std::map<std::string, std::pair<std::unique_ptr<TestGrammar>, std::string>>& Grammars() {
  static auto* grammars =
      new std::map<std::string, std::pair<std::unique_ptr<TestGrammar>, std::string>>();
  return *grammars;
}

const TestGrammar* LoadGrammar(const GrammarSpec& spec, std::string* skip) {
  auto& entry = Grammars()[spec.key];
  if (!entry.first && entry.second.empty()) {
    if (spec.shared.empty()) {
      entry.first = std::make_unique<TestGrammar>(MakeRandomTestGrammar(spec.random));
    } else if (!SharedGrammarPresent(spec.shared)) {
      entry.second = "no " + SharedGrammarPath(spec.shared);
    } else if (SharedReferenceSentences().empty()) {
      entry.second = "no reference sentences under " + SharedGrammarPath("reference");
    } else {
      auto model = LoadBerkeleyModel(SharedGrammarPath(spec.shared));
      if (!model.ok()) throw std::runtime_error(model.status().message());
      auto lexicon = Lexicon::Build(*model);
      if (!lexicon.ok()) throw std::runtime_error(lexicon.status().message());
      entry.first =
          std::make_unique<TestGrammar>(TestGrammar{std::move(*model), std::move(*lexicon)});
    }
  }
  *skip = entry.second;
  return entry.first.get();
}

// The outcomes of a single-threaded oracle: sentence i on thread i mod threads, one backend each.
std::vector<ParseOutcome> ParseOnAllCores(const TestGrammar& grammar, const Oracle& oracle,
                                          const Sentences& sentences, std::string* error) {
  const size_t threads =
      std::max<size_t>(1, std::min<size_t>(ThreadPool::DefaultThreads(), sentences.size()));
  std::vector<ParseOutcome> outcomes(sentences.size());
  std::vector<std::string> errors(threads);
  std::vector<std::thread> workers;
  for (size_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto backend = oracle.make(grammar.grammar());
      if (!backend.ok()) {
        errors[t] = backend.status().message();
        return;
      }
      Sentences mine;
      for (size_t i = t; i < sentences.size(); i += threads) mine.push_back(sentences[i]);
      const auto parsed = ParseWith(grammar, std::move(*backend), mine, {.scoring_threads = 1});
      for (size_t k = 0; k < parsed.size(); ++k) outcomes[t + k * threads] = parsed[k];
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (const std::string& e : errors)
    if (!e.empty()) *error = e;
  return outcomes;
}

}  // namespace

TestGrammar MakeRandomTestGrammar(const RandomGrammarOptions& options) {
  TestGrammar grammar{MakeRandomModel(options), {}};
  auto lexicon = Lexicon::Build(grammar.model);
  if (!lexicon.ok()) throw std::runtime_error(lexicon.status().message());
  grammar.lexicon = std::move(*lexicon);
  return grammar;
}

RandomGrammarOptions TinyShape(uint64_t seed) {
  return {.phrasal_symbols = 2, .tags = 2, .substates = 2, .base_rule_density = 0.25, .seed = seed};
}

RandomGrammarOptions StandardShape(uint64_t seed) {
  return {.phrasal_symbols = 6, .tags = 4, .substates = 3, .seed = seed};
}

RandomGrammarOptions SplitShape(uint64_t seed, int substates) {
  return {.phrasal_symbols = 5, .tags = 4, .substates = substates, .seed = seed};
}

RandomGrammarOptions ManySubstatesShape() {
  return {.phrasal_symbols = 2, .tags = 2, .substates = 35, .base_rule_density = 0.25, .seed = 11};
}

RandomGrammarOptions BigParentShape() {
  return {.phrasal_symbols = 5, .tags = 4, .substates = 4, .big_parent_rules = 700, .seed = 5};
}

Sentences RandomTestSentences(const BerkeleyModel& model, int count, int min_length, int max_length,
                              uint64_t seed, int longest) {
  Sentences sentences = MakeRandomSentences(model, count, min_length, max_length, seed);
  AddLengthEdgeCases(longest, &sentences);
  return sentences;
}

std::string SharedGrammarPath(const std::string& relative) {
  return SharedDataDir() + "/grammars/" + relative;
}

bool SharedGrammarPresent(const std::string& relative) {
  const std::string path = SharedGrammarPath(relative);
  for (const char* suffix : {"", ".binary", ".grammar", ".grammar.gz"})
    if (std::filesystem::exists(path + suffix)) return true;
  return false;
}

Sentences SharedReferenceSentences() {
  auto sentences = ReadTokenizedSentences(SharedGrammarPath("reference/small_sm2/sentences.txt"));
  return sentences.ok() ? *sentences : Sentences{};
}

Sentences RealGrammarSentences(const Sentences& reference, size_t count) {
  if (reference.empty()) return {};
  Sentences sentences(reference.begin(), reference.begin() + std::min(count, reference.size()));
  size_t longest = 0, longest_here = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    if (reference[i].size() > reference[longest].size()) longest = i;
    if (i < sentences.size() && reference[i].size() > reference[longest_here].size())
      longest_here = i;
  }
  sentences.push_back({reference[0][0]});
  sentences.push_back({reference[0][0], reference[0][1]});
  sentences.push_back(reference[longest]);
  std::vector<std::string> twice = reference[longest_here];
  twice.insert(twice.end(), reference[longest_here].begin(), reference[longest_here].end());
  sentences.push_back(std::move(twice));
  KeepTestShard(&sentences);
  return sentences;
}

const TestFixture* FindTestFixture(const std::string& name, std::string* skip) {
  std::lock_guard lock(CacheMutex());
  static auto* fixtures = new std::map<std::string, std::unique_ptr<TestFixture>>();
  skip->clear();
  if (auto it = fixtures->find(name); it != fixtures->end()) return it->second.get();
  for (const FixtureSpec& spec : FixtureSpecs()) {
    if (spec.name != name) continue;
    const TestGrammar* grammar = LoadGrammar(spec.grammar, skip);
    if (!grammar) return nullptr;
    auto fixture =
        std::make_unique<TestFixture>(TestFixture{.name = spec.name,
                                                  .grammar = grammar,
                                                  .sentences = spec.sentences(*grammar),
                                                  .min_parsed = spec.min_parsed,
                                                  .must_parse = spec.must_parse,
                                                  .min_full_kbest_lists = spec.min_full_kbest_lists,
                                                  .all_on_device = spec.all_on_device});
    if (spec.min_parsed == kMostParse)
      fixture->min_parsed = static_cast<int>(fixture->sentences.size() / 2 + 1);
    if (spec.check) fixture->broken = spec.check(*grammar, fixture->sentences);
    const TestFixture* loaded = fixture.get();
    (*fixtures)[name] = std::move(fixture);
    return loaded;
  }
  throw std::invalid_argument("no test fixture named " + name);
}

std::vector<std::string> TestFixtureNames() {
  std::vector<std::string> names;
  for (const FixtureSpec& spec : FixtureSpecs()) names.push_back(spec.name);
  return names;
}

Oracle ReferenceViterbiOracle() {
  return {"reference/viterbi",
          [](const Grammar& g) -> StatusOr<std::unique_ptr<Backend>> {
            return MakeReferenceBackend(g);
          },
          true};
}

Oracle ReferenceMaxRuleOracle(const DecoderOptions& decoding) {
  std::string key = "reference/max-rule";
  if (decoding.kbest > 1) {
    key += "/kbest" + std::to_string(decoding.kbest) +
           (decoding.kbest_style == KBestStyle::kBerkeley ? "-berkeley" : "-exact");
  }
  return {key,
          [decoding](const Grammar& g) -> StatusOr<std::unique_ptr<Backend>> {
            return MakeReferenceMaxRuleBackend(g, decoding);
          },
          true};
}

Oracle CpuPrunedOracle(DecoderKind decoder, const std::string& pruning,
                       const DecoderOptions& decoding) {
  std::string key = "cpu/pruned/" +
                    std::string(decoder == DecoderKind::kViterbi ? "viterbi" : "max-rule") + "/" +
                    pruning;
  if (decoding.kbest > 1) {
    key += "/kbest" + std::to_string(decoding.kbest) +
           (decoding.kbest_style == KBestStyle::kBerkeley ? "-berkeley" : "-exact");
  }
  return {key, [decoder, pruning, decoding](const Grammar& g) {
            return MakePrunedCpuBackend(g, decoder, TestPruning(pruning), 0, decoding);
          }};
}

PruningOptions TestPruning(const std::string& name) {
  if (name == "tight") {
    PruningOptions tight;
    tight.thresholds = {-2, -3};
    return tight;
  }
  auto options = PruningOptions::FromSpec(name);
  if (!options.ok()) throw std::invalid_argument(options.status().message());
  return *options;
}

const std::vector<ParseOutcome>& OracleOutcomes(const TestFixture& fixture, const Oracle& oracle) {
  static auto* outcomes =
      new std::map<std::pair<std::string, std::string>, std::vector<ParseOutcome>>();
  std::lock_guard lock(CacheMutex());
  const auto key = std::make_pair(fixture.name, oracle.key);
  if (auto it = outcomes->find(key); it != outcomes->end()) return it->second;
  std::string error;
  std::vector<ParseOutcome> parsed;
  if (oracle.single_threaded) {
    parsed = ParseOnAllCores(*fixture.grammar, oracle, fixture.sentences, &error);
  } else if (auto backend = oracle.make(fixture.grammar->grammar()); backend.ok()) {
    parsed = ParseWith(*fixture.grammar, std::move(*backend), fixture.sentences);
  } else {
    error = backend.status().message();
  }
  if (!error.empty()) {
    ADD_FAILURE() << oracle.key << " on " << fixture.name << ": " << error;
    static const std::vector<ParseOutcome> none;
    return none;
  }
  return (*outcomes)[key] = std::move(parsed);
}

std::vector<ParseOutcome> ParseWith(const TestGrammar& grammar, std::unique_ptr<Backend> backend,
                                    const Sentences& sentences, const ParserOptions& options) {
  Parser parser(grammar.grammar(), grammar.lexicon, std::move(backend), options);
  return parser.Parse(sentences);
}

std::vector<SentenceInput> ScoredInputs(const TestGrammar& grammar, const Sentences& sentences) {
  Parser scorer(grammar.grammar(), grammar.lexicon, MakeReferenceBackend(grammar.grammar()));
  std::vector<SentenceInput> inputs;
  for (const auto& words : sentences) inputs.push_back({words, scorer.ScoreWords(words)});
  return inputs;
}

bool ScoreTolerance::Holds(double expected, double actual) const {
  if (expected == actual) return true;
  if (!std::isfinite(expected) || !std::isfinite(actual)) return false;
  const double diff = std::abs(expected - actual);
  switch (kind) {
    case Kind::kIdentical:
      return false;
    case Kind::kAbsolute:
      return diff <= value;
    case Kind::kRelative:
      return diff <= value * std::max(1.0, std::abs(expected) + std::abs(actual));
    case Kind::kBerkeley:
      return diff / (std::abs(expected) + std::abs(actual) + 1e-10) < value;
    case Kind::kRelativeToExpected:
      return diff <= value * std::abs(expected);
  }
  return false;
}

std::string ScoreTolerance::Describe() const {
  std::ostringstream out;
  switch (kind) {
    case Kind::kIdentical:
      return "bit for bit";
    case Kind::kAbsolute:
      out << "within " << value << " absolute";
      break;
    case Kind::kRelative:
      out << "within " << value << " relative (absolute near zero)";
      break;
    case Kind::kBerkeley:
      out << "within " << value << " relative (Berkeley's test)";
      break;
    case Kind::kRelativeToExpected:
      out << "within " << value << " of the expected score, relative";
      break;
  }
  return out.str();
}

int ExpectSameOutcomes(const std::vector<ParseOutcome>& expected,
                       const std::vector<ParseOutcome>& actual, const OutcomeComparison& compare,
                       const std::string& what, const Sentences& sentences) {
  EXPECT_EQ(expected.size(), actual.size()) << what;
  if (expected.size() != actual.size()) return 0;
  auto scores = [](double want, double got, const ScoreTolerance& tolerance) {
    std::ostringstream out;
    out.precision(17);
    out << want << " expected, " << got << " (" << tolerance.Describe() << ")";
    return out.str();
  };
  int parsed = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string at = what + ", sentence " + std::to_string(i);
    if (i < sentences.size()) at += " (" + std::to_string(sentences[i].size()) + " words)";
    const ParseOutcome& e = expected[i];
    const ParseOutcome& a = actual[i];
    EXPECT_EQ(e.status, a.status) << at << ": '" << a.message << "'";
    if (e.status != ParseStatus::kOk) continue;
    ++parsed;
    if (a.status != ParseStatus::kOk) continue;
    EXPECT_EQ(ToBracketString(e.tree), ToBracketString(a.tree)) << at;
    EXPECT_TRUE(compare.score.Holds(e.log_score, a.log_score))
        << at << ": score " << scores(e.log_score, a.log_score, compare.score);
    if (compare.likelihood) {
      EXPECT_TRUE(compare.score.Holds(e.log_likelihood, a.log_likelihood))
          << at << ": log P(w) " << scores(e.log_likelihood, a.log_likelihood, compare.score);
    }
    if (!compare.kbest) continue;
    EXPECT_EQ(e.kbest.size(), a.kbest.size()) << at;
    for (size_t r = 0; r < e.kbest.size() && r < a.kbest.size(); ++r) {
      EXPECT_EQ(ToBracketString(e.kbest[r].tree), ToBracketString(a.kbest[r].tree))
          << at << ", k-best rank " << r;
      EXPECT_TRUE(compare.kbest_score.Holds(e.kbest[r].log_score, a.kbest[r].log_score))
          << at << ", k-best rank " << r << ": "
          << scores(e.kbest[r].log_score, a.kbest[r].log_score, compare.kbest_score);
    }
  }
  return parsed;
}

std::vector<std::string> PrintedOutcomes(const std::vector<ParseOutcome>& outcomes) {
  std::vector<std::string> lines;
  for (const ParseOutcome& o : outcomes) {
    lines.push_back(std::to_string(static_cast<int>(o.status)) + " " +
                    (o.status == ParseStatus::kOk ? FormatTree(o.tree, {}) : "(())") + " " +
                    std::to_string(o.log_score) + " " + std::to_string(o.log_likelihood));
  }
  return lines;
}

namespace {

class DerivationEnumerator {
 public:
  DerivationEnumerator(const Grammar& g, const LexicalScores& lex) : g_(g), lex_(lex) {}

  std::vector<ViterbiDerivation> Direct(int32_t state, int32_t start, int32_t end) const {
    std::vector<ViterbiDerivation> out;
    if (end - start == 1) {
      const double s = lex_.word(start)[state];
      if (s > kNegInf) out.push_back({s, {{start, end, state}}});
      return out;
    }
    for (int32_t r = g_.binary_parent_begin[state]; r < g_.binary_parent_begin[state + 1]; ++r) {
      for (int32_t split = start + 1; split < end; ++split) {
        for (const ViterbiDerivation& l : Any(g_.binary_left[r], start, split)) {
          for (const ViterbiDerivation& rr : Any(g_.binary_right[r], split, end)) {
            ViterbiDerivation d{g_.binary_log_prob[r] + l.score + rr.score, l.items};
            d.items.insert(rr.items.begin(), rr.items.end());
            d.items.insert({start, end, state});
            out.push_back(std::move(d));
          }
        }
      }
    }
    return out;
  }

  std::vector<ViterbiDerivation> Any(int32_t state, int32_t start, int32_t end) const {
    std::vector<ViterbiDerivation> out = Direct(state, start, end);
    for (int32_t u = g_.unary_parent_begin[state]; u < g_.unary_parent_begin[state + 1]; ++u) {
      for (ViterbiDerivation d : Direct(g_.unary_child[u], start, end)) {
        d.score += g_.unary_log_prob[u];
        d.items.insert({start, end, state});
        out.push_back(std::move(d));
      }
    }
    return out;
  }

 private:
  const Grammar& g_;
  const LexicalScores& lex_;
};

}  // namespace

std::vector<ViterbiDerivation> EnumerateViterbiDerivations(const Grammar& grammar,
                                                           const LexicalScores& lexical,
                                                           int32_t state, int32_t start,
                                                           int32_t end) {
  return DerivationEnumerator(grammar, lexical).Any(state, start, end);
}

std::vector<MaxRuleKernelVariant> MaxRuleKernelVariants() {
  return {{"default"},
          {"g16", 16},
          {"pair-sum-1", 8, 1},
          {"pair-sum-2", 8, 2},
          {"pair-sum-3", 8, 3},
          {"max-rule-1", 8, 0, 1},
          {"max-rule-2", 8, 0, 2},
          {"max-rule-7", 8, 0, 7},
          {"max-rule-9", 8, 0, 9},
          {"max-rule-11", 8, 0, 11},
          {"max-rule-14", 8, 0, 14}};
}

bool CudaDevicePresent() { return cuda::BuiltWithCuda() && cuda::DeviceAvailable(); }

}  // namespace cky
