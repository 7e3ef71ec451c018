#include "parser/tree_extraction.h"

#include <algorithm>
#include <cmath>

namespace cky {
namespace {

std::string NodeLabel(const Grammar& g, int32_t state) { return ViterbiNodeLabel(g, state); }

class Extractor {
 public:
  Extractor(const Grammar& g, const Chart& chart, const std::vector<std::string>& words,
            const ExtractionOptions& options)
      : g_(g),
        chart_(chart),
        words_(words),
        tolerance_(options.tolerance),
        lexical_(options.lexical) {}

  StatusOr<Tree> Extract(int32_t state, int32_t start, int32_t end) {
    const double best = chart_.score(start, end, state);
    Tree node(NodeLabel(g_, state));
    node.score = best;
    const bool phrasal = g_.symbol_is_phrasal[g_.state_symbol[state]];
    if (end - start == 1) {
      if (!phrasal) {
        node.children.emplace_back(words_[start]);
        return node;
      }
      // A phrasal state over one word: its best unary down to a POS tag; ties go to the last.
      double very_best = kNegInf;
      int32_t tag = -1;
      for (int32_t u = g_.unary_parent_begin[state]; u < g_.unary_parent_begin[state + 1]; ++u) {
        const int32_t child = g_.unary_child[u];
        if (g_.symbol_is_phrasal[g_.state_symbol[child]]) continue;
        const double score = chart_.score(start, end, child) + g_.unary_log_prob[u];
        if (score >= very_best && score > kNegInf) {
          very_best = score;
          tag = child;
        }
      }
      if (tag < 0) return OneWordWithoutTag(std::move(node), state, start);
      Tree preterminal(NodeLabel(g_, tag));
      preterminal.score = chart_.score(start, end, tag);
      preterminal.children.emplace_back(words_[start]);
      node.children.push_back(std::move(preterminal));
      return node;
    }
    auto binary = ExtractBinary(&node, state, start, end, best);
    if (!binary.ok()) return binary.status();
    if (*binary) return node;
    return ExtractUnary(std::move(node), state, start, end);
  }

 private:
  // Binary rule r over [start, end) split at `split`, with its children's chart scores.
  double BinaryRuleScore(int32_t r, int32_t start, int32_t split, int32_t end) const {
    return g_.binary_log_prob[r] + chart_.score(start, split, g_.binary_left[r]) +
           chart_.score(split, end, g_.binary_right[r]);
  }

  // Adds the two children of the first binary rule and split whose score reproduces `target`;
  // false when none does.
  StatusOr<bool> ExtractBinary(Tree* node, int32_t state, int32_t start, int32_t end,
                               double target) {
    for (int32_t split = start + 1; split < end; ++split) {
      for (int32_t r = g_.binary_parent_begin[state]; r < g_.binary_parent_begin[state + 1]; ++r) {
        const double score = BinaryRuleScore(r, start, split, end);
        if (score > kNegInf && ScoresMatch(score, target, tolerance_)) {
          auto left = Extract(g_.binary_left[r], start, split);
          if (!left.ok()) return left.status();
          auto right = Extract(g_.binary_right[r], split, end);
          if (!right.ok()) return right.status();
          node->children.push_back(std::move(*left));
          node->children.push_back(std::move(*right));
          return true;
        }
      }
    }
    return false;
  }

  // The best score of `state` over a span of two or more words by a binary rule: its chart score
  // before the unary layer (ReferenceViterbiInside's `pre`).
  double BinaryScore(int32_t state, int32_t start, int32_t end) const {
    double best = kNegInf;
    for (int32_t split = start + 1; split < end; ++split) {
      for (int32_t r = g_.binary_parent_begin[state]; r < g_.binary_parent_begin[state + 1]; ++r) {
        best = std::max(best, BinaryRuleScore(r, start, split, end));
      }
    }
    return best;
  }

  // A node whose chart score a closed unary over a child's chart score reproduces.
  StatusOr<Tree> ExtractUnary(Tree node, int32_t state, int32_t start, int32_t end) {
    const double best = chart_.score(start, end, state);
    for (int32_t u = g_.unary_parent_begin[state]; u < g_.unary_parent_begin[state + 1]; ++u) {
      const int32_t child = g_.unary_child[u];
      const double score = g_.unary_log_prob[u] + chart_.score(start, end, child);
      if (score > kNegInf && ScoresMatch(score, best, tolerance_)) {
        if (++unary_depth_ > kMaxUnaryChain) return Fail(state, start, end);
        auto below = Extract(child, start, end);
        --unary_depth_;
        if (!below.ok()) return below;
        node.children.push_back(std::move(*below));
        return node;
      }
    }
    // A unary closure that is not transitive (U(A,B) + U(B,C) > U(A,C): en_sm6s's text export
    // has such chains) can raise a child's chart score, by its own unary, above any match: the
    // inside pass built this node on the child's score before its unary layer, so match that, and
    // the child by a binary rule (one unary per span, as the inside pass has it).
    if (end - start >= 2) {
      for (int32_t u = g_.unary_parent_begin[state]; u < g_.unary_parent_begin[state + 1]; ++u) {
        const int32_t child = g_.unary_child[u];
        const double child_binary = BinaryScore(child, start, end);
        const double score = g_.unary_log_prob[u] + child_binary;
        if (!(score > kNegInf) || !ScoresMatch(score, best, tolerance_)) continue;
        Tree below(NodeLabel(g_, child));
        below.score = chart_.score(start, end, child);
        auto binary = ExtractBinary(&below, child, start, end, child_binary);
        if (!binary.ok()) return binary.status();
        if (!*binary) continue;
        node.children.push_back(std::move(below));
        return node;
      }
    }
    return Fail(state, start, end);
  }

  // A phrasal state over one word with no unary to a POS tag: a preterminal itself when its own
  // lexical score is its chart score, else a unary to another phrasal state.
  StatusOr<Tree> OneWordWithoutTag(Tree node, int32_t state, int32_t start) {
    if (lexical_ != nullptr) {
      const double own = lexical_->word(start)[state];
      if (own > kNegInf && ScoresMatch(own, chart_.score(start, start + 1, state), tolerance_)) {
        node.children.emplace_back(words_[start]);
        return node;
      }
    }
    return ExtractUnary(std::move(node), state, start, start + 1);
  }

  // Chains of matched unaries are short in practice; the bound guards against cycles of
  // zero-cost unaries in hand-made grammars.
  static constexpr int kMaxUnaryChain = 64;

  Status Fail(int32_t state, int32_t start, int32_t end) const {
    return Status::Error("could not find the optimal way to build " + g_.StateName(state) +
                         " over words " + std::to_string(start) + ".." + std::to_string(end));
  }

  const Grammar& g_;
  const Chart& chart_;
  const std::vector<std::string>& words_;
  double tolerance_;
  const LexicalScores* lexical_;
  int unary_depth_ = 0;
};

}  // namespace

std::string ViterbiNodeLabel(const Grammar& g, int32_t state) {
  return g.SymbolOfState(state) + "-" + std::to_string(g.state_substate[state]);
}

bool ScoresMatch(double x, double y, double tolerance) {
  return std::abs(x - y) / (std::abs(x) + std::abs(y) + 1e-10) < tolerance;
}

StatusOr<Tree> ExtractViterbiTree(const Grammar& grammar, const Chart& chart,
                                  const std::vector<std::string>& words,
                                  const ExtractionOptions& options) {
  const int32_t n = chart.length();
  if (n == 0 || static_cast<int32_t>(words.size()) != n) {
    return Status::Error("chart and sentence lengths differ");
  }
  if (!(chart.score(0, n, Grammar::kRootState) > kNegInf)) return Status::Error("no parse");
  Extractor extractor(grammar, chart, words, options);
  return extractor.Extract(Grammar::kRootState, 0, n);
}

namespace {

Tree FromBackpointers(const Grammar& g, const Chart& chart, const Backpointers& bp,
                      const std::vector<std::string>& words, int32_t state, int32_t start,
                      int32_t end, bool after_unary_layer) {
  const int64_t index = chart.CellIndex(start, end) * chart.num_states() + state;
  Tree node(NodeLabel(g, state));
  node.score = chart.score(start, end, state);
  if (after_unary_layer && bp.unary_rule[index] >= 0) {
    const int32_t child = g.unary_child[bp.unary_rule[index]];
    node.children.push_back(FromBackpointers(g, chart, bp, words, child, start, end, false));
    return node;
  }
  if (end - start == 1) {
    node.children.emplace_back(words[start]);
    return node;
  }
  const int32_t r = bp.binary_rule[index];
  const int32_t split = bp.split[index];
  node.children.push_back(
      FromBackpointers(g, chart, bp, words, g.binary_left[r], start, split, true));
  node.children.push_back(
      FromBackpointers(g, chart, bp, words, g.binary_right[r], split, end, true));
  return node;
}

}  // namespace

StatusOr<Tree> ExtractFromBackpointers(const Grammar& grammar, const Chart& chart,
                                       const Backpointers& backpointers,
                                       const std::vector<std::string>& words) {
  const int32_t n = chart.length();
  if (n == 0 || static_cast<int32_t>(words.size()) != n) {
    return Status::Error("chart and sentence lengths differ");
  }
  if (!(chart.score(0, n, Grammar::kRootState) > kNegInf)) return Status::Error("no parse");
  return FromBackpointers(grammar, chart, backpointers, words, Grammar::kRootState, 0, n, true);
}

}  // namespace cky
