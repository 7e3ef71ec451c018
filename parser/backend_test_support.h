// Test support for the backend tests (parser/backend_conformance_test.cpp and the per-backend
// tests beside it): named fixtures (a grammar with its lexicon and the sentences parsed with it:
// seeded random grammars of several shapes, and the shared real grammars under SharedDataDir()),
// the oracles a backend is compared with (the CPU reference, or the CPU pruned backend) with their
// outcomes computed once per process, and outcome comparisons with stated tolerances.
//
// Every fixture's sentences hold one word, two words and the longest sentence its tests parse
// (except where a fixture is about a batch layout: see the fixture list in the .cpp). Fixtures,
// grammars and oracle outcomes live until the process ends; parsers may refer to them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "grammar_io/berkeley_model.h"
#include "lexicon/lexicon.h"
#include "parser/backend.h"
#include "parser/coarse_to_fine.h"
#include "parser/parser.h"
#include "parser/random_grammar.h"

namespace cky {

using Sentences = std::vector<std::vector<std::string>>;

// A grammar and its lexicon.
struct TestGrammar {
  BerkeleyModel model;
  Lexicon lexicon;
  const Grammar& grammar() const { return model.grammar; }
};

TestGrammar MakeRandomTestGrammar(const RandomGrammarOptions& options);

// The random grammar shapes the backend tests share.
// 2 phrasal symbols, 2 tags, 2 substates, sparse rules: small enough to enumerate every derivation.
RandomGrammarOptions TinyShape(uint64_t seed);
// 6 phrasal symbols, 4 tags, 3 substates: every backend's everyday case.
RandomGrammarOptions StandardShape(uint64_t seed);
// 5 phrasal symbols, 4 tags, `substates` (4: two pre-parse levels below the fine grammar; 1:
// unsplit, no pre-parse level): the coarse-to-fine tests' grammars.
RandomGrammarOptions SplitShape(uint64_t seed, int substates = 4);
// Symbols of 35 substates: child pairs of 1,225 substate pairs (kernels cut them into bands, tiles
// of hundreds of pairs, blocks that are not multiples of 4 floats).
RandomGrammarOptions ManySubstatesShape();
// One parent with 700 binary rules, more than a block's threads (virtual parents; max-rule chunks).
RandomGrammarOptions BigParentShape();

// `count` random sentences of [min_length, max_length] words, then AddLengthEdgeCases(longest).
Sentences RandomTestSentences(const BerkeleyModel& model, int count, int min_length, int max_length,
                              uint64_t seed, int longest);

// $CKY_SHARED_DIR/grammars/`relative` (SharedDataDir()): a .gr file or a text export's prefix.
std::string SharedGrammarPath(const std::string& relative);
// True when the shared grammar is there (a file, or some file of a text export's prefix).
bool SharedGrammarPresent(const std::string& relative);
// The GUM sentences the real-grammar tests parse (grammars/reference/small_sm2/sentences.txt);
// empty when absent.
Sentences SharedReferenceSentences();
// A real grammar's sentence set: the first `count` of `reference`, its first word alone, its first
// two words, its longest sentence, and the longest of the first `count` twice over (the longest a
// test parses); then this process's share (KeepTestShard, common/test_variants.h).
Sentences RealGrammarSentences(const Sentences& reference, size_t count);

// A grammar and the sentences a test parses with it, from the list in backend_test_support.cpp.
struct TestFixture {
  std::string name;            // "random_seed1", "small_sm2", ...
  const TestGrammar* grammar;  // shared by the fixtures of one grammar
  Sentences sentences;
  // What the fixture promises (a rule count, a big parent, ...); empty when kept. Tests assert it.
  std::string broken;
  // Oracles parse at least this many sentences (a comparison needs trees to compare).
  int min_parsed = 1;
  // ... and these sentences (indices) among them.
  std::vector<size_t> must_parse;
  // K-best oracles give at least this many full lists (of k trees).
  int min_full_kbest_lists = 1;
  // Device backends must parse every sentence on the device (no CPU fallback message).
  bool all_on_device = false;
};

// The fixture named `name`, loaded once; null with *skip saying why when its data is absent (a
// shared grammar), so that the caller skips. Throws std::invalid_argument for an unknown name.
const TestFixture* FindTestFixture(const std::string& name, std::string* skip);
// Every fixture name, in the list's order.
std::vector<std::string> TestFixtureNames();

// Makes a backend for a grammar (on the calling thread).
using GrammarBackendFactory =
    std::function<StatusOr<std::unique_ptr<Backend>>(const Grammar& grammar)>;

// A backend that others are compared with.
struct Oracle {
  std::string key;  // names the configuration: outcomes are kept per (fixture, key)
  GrammarBackendFactory make;
  // One sentence after another (the reference): the sentences are parsed on all cores, with one
  // backend per thread; the outcomes are the same.
  bool single_threaded = false;
};

// The references (parser/cpu_backend.h), k-best lists when `decoding` asks.
Oracle ReferenceViterbiOracle();
Oracle ReferenceMaxRuleOracle(const DecoderOptions& decoding = {});
// The CPU pruned backend with the pruning TestPruning(pruning) names.
Oracle CpuPrunedOracle(DecoderKind decoder, const std::string& pruning,
                       const DecoderOptions& decoding = {});

// The pruning settings of the tests: "tight" (thresholds -2 and -3: prunes a good share of the
// random grammars' items), else PruningOptions::FromSpec ("fast", "safe", "exact", "exact@1", ...).
PruningOptions TestPruning(const std::string& name);

// The oracle's outcomes on the fixture's sentences (through Parser, default options), computed
// once per process. A backend the oracle cannot make fails the calling test (empty outcomes).
const std::vector<ParseOutcome>& OracleOutcomes(const TestFixture& fixture, const Oracle& oracle);

// Every sentence through Parser (default options; `options` otherwise) with `backend`.
std::vector<ParseOutcome> ParseWith(const TestGrammar& grammar, std::unique_ptr<Backend> backend,
                                    const Sentences& sentences, const ParserOptions& options = {});

// The sentences with their lexical scores, as Parser computes them.
std::vector<SentenceInput> ScoredInputs(const TestGrammar& grammar, const Sentences& sentences);

// How closely two log-scores must agree. Equal values (both -infinity included) always agree;
// -infinity and a finite value never.
struct ScoreTolerance {
  enum class Kind {
    kIdentical,           // bit for bit
    kAbsolute,            // |x - y| <= value
    kRelative,            // |x - y| <= value * max(1, |x| + |y|): relative, absolute near zero
    kBerkeley,            // |x - y| / (|x| + |y| + 1e-10) < value (ScoresMatch, tree extraction's)
    kRelativeToExpected,  // |x - y| <= value * |x|, x the oracle's
  };
  Kind kind = Kind::kIdentical;
  double value = 0;

  bool Holds(double expected, double actual) const;
  std::string Describe() const;
};

// The stated tolerances, by where the scores come from.
// The CPU Viterbi paths: the reference's charts bit for bit (parser/cpu_backend.h).
inline constexpr ScoreTolerance kIdenticalScores{ScoreTolerance::Kind::kIdentical, 0};
// The CPU pruned Viterbi path against the reference: its masked fine pass adds each candidate's
// three terms child pair first (CoarseToFinePruner::order(), as the device's), the reference rule
// first, so a score may differ in its last bits.
inline constexpr ScoreTolerance kPairFirstScores{ScoreTolerance::Kind::kRelative, 1e-13};
// The fast CPU max-rule path against the reference: the same doubles summed in other orders.
inline constexpr ScoreTolerance kCpuSumTolerance{ScoreTolerance::Kind::kAbsolute, 1e-9};
// GPU inside-outside and max-rule (cuda/inside_outside/inside_outside.h): 1e-9 relative, or 1e-9
// absolute near zero.
inline constexpr ScoreTolerance kDeviceSumTolerance{ScoreTolerance::Kind::kRelative, 1e-9};
// GPU Viterbi in floats (parser/cuda_backend.h): Berkeley's relative test at 1e-5.
inline constexpr ScoreTolerance kDeviceFloatTolerance{ScoreTolerance::Kind::kBerkeley, 1e-5};
// GPU pruned Viterbi against the CPU pruned backend: 1e-5 relative to the CPU's score (pruned
// charts agree bit for bit; a sentence pruning lost is parsed again in floats).
inline constexpr ScoreTolerance kDevicePrunedTolerance{ScoreTolerance::Kind::kRelativeToExpected,
                                                       1e-5};

// What ExpectSameOutcomes compares besides statuses and trees.
struct OutcomeComparison {
  ScoreTolerance score;     // log_score
  bool likelihood = false;  // log_likelihood too, within `score` (max-rule: log P(w))
  bool kbest = false;       // the k-best lists: same lengths, same trees, scores within kbest_score
  ScoreTolerance kbest_score;
};

// Same statuses, and where the oracle parsed: the same trees (bracketings) and scores within the
// tolerances. Returns how many sentences the oracle parsed. `sentences` only names them in
// failures (may be empty).
int ExpectSameOutcomes(const std::vector<ParseOutcome>& expected,
                       const std::vector<ParseOutcome>& actual, const OutcomeComparison& compare,
                       const std::string& what, const Sentences& sentences = {});

// What `cky parse` would print of each outcome (status, tree or "(())", both scores to six
// decimals): for comparisons that must be byte-identical.
std::vector<std::string> PrintedOutcomes(const std::vector<ParseOutcome>& outcomes);

// Every Viterbi derivation of a span, enumerated one by one (no dynamic programming), under
// parser/chart.h's semantics: a cell offers each state directly (a binary rule, or the lexical
// score on one word) or through one closed unary over another state's direct form. Each comes
// with its score and the (start, end, state) items it uses. Exponential: tiny grammars only.
struct ViterbiDerivation {
  double score;
  std::set<std::tuple<int32_t, int32_t, int32_t>> items;
};
std::vector<ViterbiDerivation> EnumerateViterbiDerivations(const Grammar& grammar,
                                                           const LexicalScores& lexical,
                                                           int32_t state, int32_t start,
                                                           int32_t end);

// The CUDA max-rule kernel variants the tests run (cuda/inside_outside/inside_outside.h): the
// defaults ("default"), 16 cells per pair-sum group ("g16"), and the other pair-sum ("pair-sum-N")
// and max-rule binary ("max-rule-N") kernels. 0: the default kernel.
struct MaxRuleKernelVariant {
  std::string name;  // for CKY_TEST_VARIANTS
  int cells_per_group = 8;
  int pair_sum_kernel = 0;
  int max_rule_kernel = 0;
};
std::vector<MaxRuleKernelVariant> MaxRuleKernelVariants();

// True when this build has CUDA and a device is present.
bool CudaDevicePresent();

}  // namespace cky

// In a test body: skips the test without a CUDA device.
#define CKY_SKIP_WITHOUT_CUDA_DEVICE() \
  if (!::cky::CudaDevicePresent()) GTEST_SKIP() << "no CUDA device"
