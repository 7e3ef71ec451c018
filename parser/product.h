// Products of latent-variable grammars (Petrov 2010, "Products of Random Latent Variable
// Grammars", NAACL, section 3): K grammars over the same base symbols (say, trained from the same
// trees with different seeds), each with its own substates and lexicon, decode a sentence
// together. Each grammar computes its own inside and outside scores (parser/inside_outside.h) and
// rule posteriors (the formulas of parser/max_rule.h); the product scores a rule use by the SUM
// over the grammars of its log posteriors and decodes the max-rule tree of those scores with
// max_rule.h's recurrences:
//
//   one word:  score(T) = sum_k log post_k(tag T over the word)
//   binary:    score(A) = max_{A -> B C, split} sum_k log r_k(A -> B C at split) + score(B, left)
//                         + score(C, right)
//   unary layer (once per cell, children read before it): score(A) = max(score(A),
//              max_{A -> C} sum_k log u_k(A -> C) + score(C))
//
// A rule, unary or tag that one grammar gives posterior 0 (the grammar lacks it, or derives
// nothing over the span with it) is out of the product. Symbols are matched by name: grammar 0's
// symbols, names and unary-chain intermediate symbols (Grammar::UnaryIntermediate) are the
// output's, and ties are broken as in max_rule.h (parent symbol, then grammar 0's base rule
// order, then split). A product of one grammar decodes exactly that grammar's max-rule trees and
// scores (the same sums, in the same order); a product of a grammar with itself the same trees
// with twice the scores (doubling is exact in floating point).
//
// The product is a decoding rule, not a normalised model: it defines no P(w) or P(T, w).
// ParseOutcome::log_likelihood is -infinity for a product, and ParseOutcome::log_score (and each
// k-best tree's) is the product's max-rule score: the sum over the grammars of their max-rule
// scores of the tree.
//
// Pruning (ProductPruning): each grammar's own coarse-to-fine pre-parses (parser/coarse_to_fine.h)
// and its surviving items, or one mask shared by all: grammar 0's survivors projected to base
// symbols, every substate of a surviving (span, symbol) allowed in every grammar. Both keep the
// exact product's trees about equally (bench/RESULTS.md, on GUM dev); the shared mask pre-parses
// once instead of K times, so kShared is the default.
//
// Backends: the CPU (MakeProductBackend: the reference, or the fast path on threads) and CUDA
// (parser/cuda_product_backend.h: each grammar's pruned inside-outside passes on the device, and
// the combination on the device, cuda/inside_outside/product_max_rule.h; with k-best lists the
// charts copied back and FastProductMaxRuleChart over MemberCharts on host threads). Both decide lexical scores, retries, masks and outcomes with the functions below
// ProductParser, and are tested against ReferenceProductMaxRuleChart.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "grammar_io/grammar.h"
#include "lexicon/lexicon.h"
#include "parser/backend.h"
#include "parser/coarse_to_fine.h"
#include "parser/inside_outside_cpu.h"
#include "parser/kbest.h"
#include "parser/max_rule.h"

namespace cky {

// K grammars over the same base symbols and the maps between their symbol and rule numberings.
class GrammarProduct {
 public:
  // Fails when a grammar's base symbols differ from grammar 0's (by name, and tag or phrasal
  // kind), naming both grammars by their labels. The grammars must outlive the product.
  static StatusOr<std::unique_ptr<GrammarProduct>> Create(std::vector<const Grammar*> grammars,
                                                          std::vector<std::string> labels);

  int size() const { return static_cast<int>(members_.size()); }
  const Grammar& grammar(int k) const { return *members_[k].grammar; }
  const std::string& label(int k) const { return members_[k].label; }
  const SumProductRules& rules(int k) const { return *members_[k].rules; }
  // Grammar 0: the product's symbols and the output's names.
  const Grammar& base() const { return grammar(0); }
  // Grammar k's symbol of product (grammar 0's) symbol `symbol`, and back.
  int32_t member_symbol(int k, int32_t symbol) const { return members_[k].to_member[symbol]; }
  int32_t product_symbol(int k, int32_t symbol) const { return members_[k].to_product[symbol]; }
  // The product base binary (an index into rules(0).base_binaries) of grammar k's base binary
  // `b`; -1 when grammar 0 has no such base rule.
  int32_t product_binary(int k, int32_t b) const { return members_[k].binary_to_product[b]; }
  // Grammar k's base unary (rules(k).base_unaries index) of product base unary `u` (grammar 0's);
  // -1 when grammar k has none.
  int32_t member_unary(int k, int32_t u) const { return members_[k].unary_to_member[u]; }

 private:
  struct Member {
    const Grammar* grammar = nullptr;
    std::string label;
    std::unique_ptr<SumProductRules> rules;
    std::vector<int32_t> to_member, to_product;
    std::vector<int32_t> binary_to_product, unary_to_member;
  };
  GrammarProduct() = default;
  std::vector<Member> members_;
};

// One grammar's part of a sentence: its lexical scores and inside-outside charts.
struct MemberCharts {
  const LexicalScores* lexical = nullptr;
  const InsideOutsideCharts* charts = nullptr;
};

// The product max-rule chart (max_rule.h's MaxRuleChart over grammar 0's symbols, the scores
// before the unary layer included) of the first members.size() grammars (<= product.size()), all
// with a finite log_likelihood.
//   reference: THE CPU REFERENCE for products: plain loops over every rule of every grammar, the
//              posteriors from the charts' log-scores, never tuned.
//   fast:      max_rule.h's sparse sums (AddBinaryRuleSums, UnaryRuleSums, LogTagPosterior)
//              combined base rule by base rule.
// The two agree up to the order of floating-point sums (tested).
void ReferenceProductMaxRuleChart(const GrammarProduct& product,
                                  std::span<const MemberCharts> members, MaxRuleChart* maxc);
void FastProductMaxRuleChart(const GrammarProduct& product, std::span<const MemberCharts> members,
                             MaxRuleChart* maxc);

// The k best trees of the product's max-rule hypergraph (parser/kbest.h), each edge scored by the
// sum over the grammars of their log rule posteriors; `maxc` from either pass above.
StatusOr<std::vector<ScoredTree>> ProductKBestTrees(const GrammarProduct& product,
                                                    std::span<const MemberCharts> members,
                                                    const MaxRuleChart& maxc,
                                                    const std::vector<std::string>& words, int k,
                                                    KBestStyle style = KBestStyle::kExact);

enum class ProductPruning {
  kPerGrammar,  // each grammar's own coarse-to-fine survivors
  kShared,      // grammar 0's survivors, projected to base symbols, for every grammar
};

struct ProductOptions {
  // The plain reference: one sentence after another, ReferenceInsideOutside for each grammar and
  // ReferenceProductMaxRuleChart; never pruned.
  bool reference = false;
  int threads = 0;  // the fast path: sentences in parallel on this many threads (0: all)
  // The fast path's coarse-to-fine thresholds (parser/coarse_to_fine.h); none: exact.
  std::optional<PruningOptions> pruning;
  ProductPruning mask = ProductPruning::kShared;
  DecoderOptions decoder;  // k-best lists
  // A grammar that cannot parse a sentence parses it again with its lexicon widened (when that
  // lexicon is not exact), as ParserOptions::retry_with_wider_lexicon does for one grammar.
  bool retry_with_wider_lexicon = true;
};

// Parses sentences with a product. Grammar k's words are scored by lexicons[k] (grammar 0's may
// be given, as Parser computes them with lexicons[0]). A grammar that cannot parse a sentence
// parses it again with its lexicon widened when that lexicon is not exact (lexicon/lexicon.h), as
// Parser retries one grammar (unless options.retry_with_wider_lexicon is false). With pruning, a
// grammar whose pre-parses find nothing is parsed unpruned, and a sentence whose pruned product has
// no tree is parsed again unpruned. A sentence that the grammars parse but share no tree for (every
// tree of one uses a rule another gives posterior 0) is kNoParse, saying so. `product` and
// `lexicons` must outlive the parser; Parse and ParsePrefixes may be called from several threads at
// once.
class ProductParser {
 public:
  static StatusOr<std::unique_ptr<ProductParser>> Create(const GrammarProduct& product,
                                                         std::vector<const Lexicon*> lexicons,
                                                         const ProductOptions& options = {});
  ~ProductParser();

  // One sentence with the whole product; `lexical0`, when given, holds grammar 0's scores.
  ParseOutcome Parse(const std::vector<std::string>& words,
                     const LexicalScores* lexical0 = nullptr) const;
  // The products of the first sizes[i] grammars (sizes ascending, each in 1..product.size()),
  // from one set of per-grammar charts: outcome i equals Parse's with a product of those grammars
  // (same options). How accuracy against K is measured without parsing each grammar once per K.
  std::vector<ParseOutcome> ParsePrefixes(const std::vector<std::string>& words,
                                          std::span<const int> sizes) const;

  const GrammarProduct& product() const { return product_; }
  const ProductOptions& options() const { return options_; }

 private:
  struct Member;
  struct Sentence;
  ProductParser(const GrammarProduct& product, std::vector<const Lexicon*> lexicons,
                const ProductOptions& options);
  // Fills member k's lexical scores and charts for `sentence` (pruned when `pruned`).
  void Compute(int k, bool pruned, Sentence* sentence) const;
  ParseOutcome Decode(int members, Sentence* sentence) const;

  const GrammarProduct& product_;
  std::vector<const Lexicon*> lexicons_;
  ProductOptions options_;
  std::vector<std::unique_ptr<CoarseToFinePruner>> pruners_;  // per grammar, or grammar 0's only
};

// What the product's backends share (ProductParser, parser/cuda_product_backend.h), so that they
// decide alike.
//
// Grammar k's lexical scores of `words`: grammar 0's `given` ones (the SentenceInput's) when given
// and not widened, else lexicon k's (widened when asked).
LexicalScores ProductLexicalScores(const GrammarProduct& product, int k, const Lexicon& lexicon,
                                   const std::vector<std::string>& words,
                                   const LexicalScores* given, bool widen);
// Whether a grammar that derives nothing is parsed again with its lexicon widened.
bool ProductRetriesWiderLexicon(const ProductOptions& options, const Lexicon& lexicon);
// The kShared mask: grammar 0's survivors (fine, its states) projected to its base symbols, per
// cell NumSymbols bytes (1: some substate survives).
std::vector<uint8_t> SharedProductMask(const Grammar& g0, const ItemMask& fine);
// Grammar k's items that `shared` (SharedProductMask, a sentence of `length` words) allows.
ItemMask MemberMaskFromShared(const GrammarProduct& product, int k,
                              const std::vector<uint8_t>& shared, int32_t length);
// The outcome of a sentence whose grammar k derives no tree (kNoParse, saying which).
ParseOutcome ProductMemberHasNoTree(const GrammarProduct& product, int k);
// The product max-rule chart of the members (all with a tree): the reference's or the fast one.
void ProductMaxRuleChart(const GrammarProduct& product, std::span<const MemberCharts> members,
                         bool reference, MaxRuleChart* maxc);
// The outcome from the product's chart: the max-rule tree, its score, log_likelihood -infinity,
// the k best trees when `decoder` asks; kNoParse saying that the grammars share no tree when the
// chart has none. (A backend whose members' charts were pruned parses such a sentence again
// unpruned first.)
ParseOutcome ProductOutcome(const GrammarProduct& product, std::span<const MemberCharts> members,
                            const MaxRuleChart& maxc, const std::vector<std::string>& words,
                            const DecoderOptions& decoder);

// A backend (parser/backend.h) over a ProductParser: sentences in parallel on options.threads
// threads (the reference: one after another), grammar 0's lexical scores the SentenceInput's.
StatusOr<std::unique_ptr<Backend>> MakeProductBackend(const GrammarProduct& product,
                                                      std::vector<const Lexicon*> lexicons,
                                                      const ProductOptions& options = {});

}  // namespace cky
