// K-best max-rule trees: the K trees over base symbols with the largest max-rule scores (sum of the
// log rule posteriors of parser/max_rule.h), best first. The Berkeley parser's -kbest
// (CoarseToFineNBestParser) ranks the same trees by the same score, lazily; this is the lazy k-best
// algorithm of Huang & Chiang (2005, Algorithm 3) over the max-rule hypergraph:
//
//   node before(span, A): a binary edge (A -> B C, split) from after(left, B) and after(right,
//                         C), with the rule score log r of parser/max_rule.h; on one word, the
//                         tag's leaf
//   node after(span, A):  before(span, A) itself (score 0), or a closed sum unary A -> C over
//                         before(span, C)
//   a derivation's score = the sum of its edges' rule scores; ROOT's after node over the sentence
//   is the goal.
//
// The first tree is the max-rule tree itself (the chart's choices, parser/max_rule.h, with their
// tie order); later ones come out in order of score, ties by edge order (split, left child, right
// child; unary children by symbol). A node's incoming edges are computed only when its second-best
// derivation is first asked for, from the inside and outside charts. Unlike Berkeley's
// CoarseToFineNBestParser, which is exact only up to some shortcuts (two-word spans keep only
// their best binary edge, one-word spans only their best unary, a binary derivation's successor
// advances only one child, and edges that differ only in a one-word child's tag are dropped), this
// list is the exact top K (tested against brute force in kbest_test.cpp). KBestStyle::kBerkeley
// reproduces Berkeley's list, shortcuts included, to compare with its output.
#pragma once

#include <vector>

#include "common/status.h"
#include "grammar_io/grammar.h"
#include "parser/backend.h"
#include "parser/inside_outside_cpu.h"
#include "parser/max_rule_chart.h"

namespace cky {

// The `k` best max-rule trees of one sentence (fewer when the chart holds fewer), best first, each
// as ExtractMaxRuleTree makes it ("ROOT" over the binarized tree) with its max-rule score. `maxc`
// must have been filled by a CPU max-rule pass from `charts` (score_before_unary present). Fails
// when the sentence has no parse.
StatusOr<std::vector<ScoredTree>> KBestMaxRuleTrees(const Grammar& grammar,
                                                    const InsideOutsideCharts& charts,
                                                    const MaxRuleChart& maxc,
                                                    const std::vector<std::string>& words, int k,
                                                    KBestStyle style = KBestStyle::kExact);

}  // namespace cky
