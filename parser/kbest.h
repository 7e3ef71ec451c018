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

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "grammar_io/grammar.h"
#include "parser/backend.h"
#include "parser/inside_outside_cpu.h"
#include "parser/max_rule_chart.h"

namespace cky {

// One incoming hyperedge of a node: for a before node (span > 1) a binary rule at `split` over the
// after nodes of `left` and `right`; for an after node the before node of symbol `left` below it
// (the node's own symbol: the identity edge, score 0; another: a closed sum unary). `rule` is the
// edge's rule score (log).
struct MaxRuleEdge {
  int32_t split = -1;
  int32_t left = -1;
  int32_t right = -1;
  double rule = 0;
};

// Where the k-best search finds a node's incoming edges: one grammar's charts (below), or a product
// of grammars (parser/product.h).
class MaxRuleEdgeSource {
 public:
  virtual ~MaxRuleEdgeSource() = default;
  // Appends the incoming edges of node (start, end, symbol; below its cell's unary layer or
  // `after` it) to `edges`: only edges whose children have a derivation in the max-rule chart, in
  // edge order (binary: by split, then (left, right); after nodes: the identity edge first, when
  // the before node has a derivation, then unaries by child symbol). A one-word before node has
  // none (its tag's leaf).
  virtual void Compute(int32_t start, int32_t end, int32_t symbol, bool after,
                       std::vector<MaxRuleEdge>* edges) const = 0;
};

// One grammar's rule posteriors r (parser/max_rule.h; not logs), the values its edges' scores are
// the logs of, keyed by child symbols: the binary rules of node (start, end, parent) at `split`,
// by (left, right); the closed unaries of its after node, by child (the identity left out). Zero
// posteriors are left out.
void BinaryEdgePosteriors(const Grammar& grammar, const InsideOutsideCharts& charts, int32_t start,
                          int32_t split, int32_t end, int32_t parent,
                          std::map<std::pair<int32_t, int32_t>, double>* posteriors);
void UnaryEdgePosteriors(const Grammar& grammar, const InsideOutsideCharts& charts, int32_t start,
                         int32_t end, int32_t parent, std::map<int32_t, double>* posteriors);

// The `k` best max-rule trees of one sentence (fewer when the chart holds fewer), best first, each
// as ExtractMaxRuleTree makes it ("ROOT" over the binarized tree) with its max-rule score. `maxc`
// must have been filled by a CPU max-rule pass from `charts` (score_before_unary present). Fails
// when the sentence has no parse.
StatusOr<std::vector<ScoredTree>> KBestMaxRuleTrees(const Grammar& grammar,
                                                    const InsideOutsideCharts& charts,
                                                    const MaxRuleChart& maxc,
                                                    const std::vector<std::string>& words, int k,
                                                    KBestStyle style = KBestStyle::kExact);
// The same over the hypergraph of any edge source whose max-rule chart `maxc` is (the product of
// grammars); `grammar` names the symbols and gives the unary chains' intermediate symbols.
StatusOr<std::vector<ScoredTree>> KBestMaxRuleTrees(const Grammar& grammar,
                                                    const MaxRuleEdgeSource& edges,
                                                    const MaxRuleChart& maxc,
                                                    const std::vector<std::string>& words, int k,
                                                    KBestStyle style = KBestStyle::kExact);

}  // namespace cky
