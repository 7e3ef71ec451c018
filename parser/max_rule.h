// Max-rule-product decoding (Petrov & Klein 2007), the Berkeley parser's default output: the tree
// over base symbols (no substates) whose product of rule posteriors is largest, computed from the
// inside and outside scores of parser/inside_outside_cpu.h exactly as CoarseToFineMaxRuleParser's
// doConstrainedMaxCScores and extractBestMaxRuleParse do.
//
// Per span and base symbol A (its substates a), with P(w) the sentence probability:
//   one word:  score(T) = log sum_t outpre(T_t) P(word | T_t) / P(w)                  (a tag T)
//   binary:    score(A) = max_{A -> B C, split} log r + score(B, left) + score(C, right),
//              r = sum_{a,b,c} outpre(A_a) p(A_a -> B_b C_c) in(B_b) in(C_c) / P(w)
//   unary layer (once per cell, children read before it): score(A) = max(score(A),
//              max_{A -> C} log sum_{a,c} outpre(A_a) p_sum(A_a -> C_c) in(C_c) / P(w) + score(C))
// The root is ROOT's score over the sentence; extraction follows the recorded argmaxes from ROOT,
// printing a unary chain's intermediate symbol (Grammar::unary_intermediate) as Berkeley does.
// Ties keep the first candidate in the order: parent symbol, rule (grammar order), split point.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "grammar_io/grammar.h"
#include "parser/backend.h"
#include "parser/inside_outside_cpu.h"
#include "parser/max_rule_chart.h"
#include "treebank/tree.h"

namespace cky {

// Fills `maxc` from a sentence's inside and outside charts (log_likelihood must be finite).
void ReferenceMaxRuleChart(const Grammar& grammar, const LexicalScores& lexical,
                           const InsideOutsideCharts& charts, MaxRuleChart* maxc);
// The same with the rule index the fast CPU path builds once per grammar.
void FastMaxRuleChart(const Grammar& grammar, const SumProductRules& rules,
                      const LexicalScores& lexical, const InsideOutsideCharts& charts,
                      MaxRuleChart* maxc);

// The max-rule tree: "ROOT" over the binarized tree of base symbols ("@NP" intermediates kept,
// no substates), leaves the words. Fails when ROOT has no derivation.
StatusOr<Tree> ExtractMaxRuleTree(const Grammar& grammar, const MaxRuleChart& maxc,
                                  const std::vector<std::string>& words);

// A sentence's outcome from its max-rule chart and log P(w) (-infinity: no parse): status, the
// max-rule tree, its score and P(w). Every max-rule backend ends with it.
ParseOutcome MaxRuleOutcome(const Grammar& grammar, const std::vector<std::string>& words,
                            double log_likelihood, const MaxRuleChart& maxc);

// One sentence with FastInsideOutside and the max-rule pass. When `allowed` is given (per cell in
// Chart's order and state, 1 = usable; coarse-to-fine pruning), only those items take part.
// With decoder.kbest > 1 the outcome also holds the k best trees (parser/kbest.h).
ParseOutcome ParseMaxRule(const Grammar& grammar, const SumProductRules& rules,
                          const SentenceInput& sentence,
                          const std::vector<uint8_t>* allowed = nullptr,
                          const DecoderOptions& decoder = {});
// The same with the reference inside-outside pass (ReferenceInsideOutside; no mask): the oracle.
ParseOutcome ParseMaxRuleReference(const Grammar& grammar, const SumProductRules& rules,
                                   const SentenceInput& sentence,
                                   const DecoderOptions& decoder = {});

// Adds the k best trees (decoder.kbest > 1) to an outcome of MaxRuleOutcome, from the sentence's
// charts and a CPU max-rule chart (the CUDA backend calls it with the device's charts).
void AddKBest(const Grammar& grammar, const std::vector<std::string>& words,
              const InsideOutsideCharts& charts, const MaxRuleChart& maxc,
              const DecoderOptions& decoder, ParseOutcome* outcome);

// The pieces of the max-rule pass, shared with the product of grammars (parser/product.h), which
// combines them over several grammars' charts. `charts` must have a finite log_likelihood.
//
// Per cell (Chart's order), the states with a positive inside score that are some binary rule's
// left child: the only left children a binary posterior sum visits.
std::vector<std::vector<int32_t>> NonzeroLeftStates(const SumProductRules& rules,
                                                    const ScaledChart& inside);
// The one-word formula above for tag symbol `tag` over word `start`: log sum_t outpre(T_t)
// P(word | T_t) / P(w); -infinity for a phrasal symbol or a zero sum.
double LogTagPosterior(const Grammar& grammar, const LexicalScores& lexical,
                       const InsideOutsideCharts& charts, int32_t start, int32_t tag);
// The binary rule sums of span [start, end) at `split`, before their common factor: adds
// outpre(A_a) p(A_a -> B_b C_c) in(B_b) in(C_c) (cell-scaled values) into (*binary_sum)[base rule]
// (SumProductRules::base_binaries order; the caller zeroes what it read), appending each base rule
// it makes non-zero to `touched`. Returns the factor exp(out_scale + left_scale + right_scale -
// log P(w)) that makes a sum a posterior r; 0, adding nothing, when a cell has no mass.
double AddBinaryRuleSums(const SumProductRules& rules, const InsideOutsideCharts& charts,
                         const std::vector<std::vector<int32_t>>& nonzero, int32_t start,
                         int32_t split, int32_t end, std::vector<double>* binary_sum,
                         std::vector<int32_t>* touched);
// Offers the binary `rule` at `split` of [start, end), with rule score `log_rule` (log r), to the
// chart: its candidate log_rule + score(left) + score(right) replaces the parent's when larger, or
// when equal with a smaller `key` (base rule * sentence length + split: the tie order above);
// (*best_key)[parent] holds the winner's key (INT64_MAX before any).
void OfferBinaryCandidate(const SumProductRules::BaseBinary& rule, int32_t start, int32_t split,
                          int32_t end, double log_rule, int64_t key, std::vector<int64_t>* best_key,
                          MaxRuleChart* maxc);
// The unary layer's sums of span [start, end): (*unary_sum)[base unary] (base_unaries order,
// zeroed first) = sum outpre(A_a) p_sum(A_a -> C_c) in(C_c). Returns their factor exp(out_scale +
// in_scale - log P(w)); 0 when the cell has no outside or no inside mass.
double UnaryRuleSums(const Grammar& grammar, const SumProductRules& rules,
                     const InsideOutsideCharts& charts, int32_t start, int32_t end,
                     std::vector<double>* unary_sum);

}  // namespace cky
