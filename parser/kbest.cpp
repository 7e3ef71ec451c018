#include "parser/kbest.h"

#include <cmath>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace cky {
namespace {

using Edge = MaxRuleEdge;

// Score of a node's best derivation (-infinity: none).
double Best(const MaxRuleChart& maxc, int32_t start, int32_t end, int32_t symbol, bool after) {
  const int64_t index = maxc.Index(start, end, symbol);
  return after ? maxc.score[index] : maxc.score_before_unary[index];
}

// The index among `edges` of the max-rule chart's own choice for the node (-1: none).
int32_t ChartEdge(const MaxRuleChart& maxc, int32_t start, int32_t end, int32_t symbol, bool after,
                  const std::vector<Edge>& edges) {
  const int64_t index = maxc.Index(start, end, symbol);
  for (size_t e = 0; e < edges.size(); ++e) {
    const Edge& edge = edges[e];
    const bool chosen =
        after ? edge.left == (maxc.unary_child[index] < 0 ? symbol : maxc.unary_child[index])
              : edge.split == maxc.split[index] && edge.left == maxc.left[index] &&
                    edge.right == maxc.right[index];
    if (chosen) return static_cast<int32_t>(e);
  }
  return -1;
}

// The max-rule hypergraph's edges of one grammar, computed from a sentence's charts.
class GrammarEdgeSource : public MaxRuleEdgeSource {
 public:
  GrammarEdgeSource(const Grammar& g, const InsideOutsideCharts& charts, const MaxRuleChart& maxc)
      : g_(g), charts_(charts), maxc_(maxc) {}

  void Compute(int32_t start, int32_t end, int32_t symbol, bool after,
               std::vector<Edge>* edges) const override {
    if (!after) {
      if (end - start == 1) return;
      std::map<std::pair<int32_t, int32_t>, double> sums;
      for (int32_t split = start + 1; split < end; ++split) {
        sums.clear();
        BinaryEdgePosteriors(g_, charts_, start, split, end, symbol, &sums);
        for (const auto& [children, sum] : sums) {
          const auto [l, r] = children;
          if (!(Best(maxc_, start, split, l, true) > kNegInf) ||
              !(Best(maxc_, split, end, r, true) > kNegInf)) {
            continue;
          }
          edges->push_back({split, l, r, std::log(sum)});
        }
      }
      return;
    }
    if (Best(maxc_, start, end, symbol, false) > kNegInf) edges->push_back({-1, symbol, -1, 0.0});
    std::map<int32_t, double> sums;
    UnaryEdgePosteriors(g_, charts_, start, end, symbol, &sums);
    for (const auto& [child, sum] : sums) {
      if (!(Best(maxc_, start, end, child, false) > kNegInf)) continue;
      edges->push_back({-1, child, -1, std::log(sum)});
    }
  }

 private:
  const Grammar& g_;
  const InsideOutsideCharts& charts_;
  const MaxRuleChart& maxc_;
};

// A derivation of a node: an edge and the ranks of the derivations of its children.
struct Derivation {
  double score = kNegInf;
  int32_t edge = -1;  // -1: the max-rule chart's own choice (the node's best, not yet expanded)
  int32_t rank0 = 0, rank1 = 0;
};

// Best first; ties by edge order, then by ranks.
struct Worse {
  bool operator()(const Derivation& a, const Derivation& b) const {
    if (a.score != b.score) return a.score < b.score;
    return std::tie(a.edge, a.rank0, a.rank1) > std::tie(b.edge, b.rank0, b.rank1);
  }
};

struct Node {
  int32_t start = 0, end = 0, symbol = 0;
  bool after = false;
  bool expanded = false;
  size_t successors_done = 0;  // found[0 .. successors_done) have had their successors queued
  std::vector<Edge> edges;
  std::vector<Derivation> found;  // the node's derivations so far, best first
  std::priority_queue<Derivation, std::vector<Derivation>, Worse> candidates;
  std::set<std::tuple<int32_t, int32_t, int32_t>> seen;  // (edge, rank0, rank1) queued or found
};

class KBest {
 public:
  KBest(const Grammar& g, const MaxRuleEdgeSource& edges, const MaxRuleChart& maxc,
        const std::vector<std::string>& words)
      : g_(g), maxc_(maxc), words_(words), edges_(edges) {}

  Node& At(int32_t start, int32_t end, int32_t symbol, bool after) {
    const int64_t index = maxc_.Index(start, end, symbol);
    auto [it, inserted] = nodes_.try_emplace(index * 2 + (after ? 1 : 0));
    Node& v = it->second;
    if (inserted) {
      v.start = start;
      v.end = end;
      v.symbol = symbol;
      v.after = after;
      const double best = after ? maxc_.score[index] : maxc_.score_before_unary[index];
      if (best > kNegInf) v.found.push_back({best, -1, 0, 0});
    }
    return v;
  }

  // The node's derivation of `rank` (0 = best), or null when it has fewer.
  const Derivation* Get(Node& v, size_t rank) {
    if (rank < v.found.size()) return &v.found[rank];
    if (v.found.empty()) return nullptr;
    if (!v.expanded) Expand(v);
    while (v.found.size() <= rank) {
      while (v.successors_done < v.found.size()) {
        const Derivation d = v.found[v.successors_done++];
        QueueSuccessors(v, d);
      }
      if (v.candidates.empty()) return nullptr;
      v.found.push_back(v.candidates.top());
      v.candidates.pop();
    }
    return &v.found[rank];
  }

  Tree Build(Node& v, size_t rank) {
    const Derivation d = v.found[rank];
    const std::string& label = g_.symbol_names[v.symbol];
    const int64_t index = maxc_.Index(v.start, v.end, v.symbol);
    if (!v.after) {
      if (v.end - v.start == 1) return Tree(label, {Tree(words_[v.start])});
      Edge e = d.edge >= 0 ? v.edges[d.edge]
                           : Edge{maxc_.split[index], maxc_.left[index], maxc_.right[index], 0};
      Tree left = Build(At(v.start, e.split, e.left, true), d.rank0);
      Tree right = Build(At(e.split, v.end, e.right, true), d.rank1);
      return Tree(label, {std::move(left), std::move(right)});
    }
    int32_t child = v.symbol;
    if (d.edge >= 0) {
      child = v.edges[d.edge].left;
    } else if (maxc_.unary_child[index] >= 0) {
      child = maxc_.unary_child[index];
    }
    Tree below = Build(At(v.start, v.end, child, false), d.rank0);
    if (child == v.symbol) return below;
    const int32_t middle = g_.UnaryIntermediate(v.symbol, child);
    if (middle > 0) below = Tree(g_.symbol_names[middle], {std::move(below)});
    return Tree(label, {std::move(below)});
  }

 private:
  // Computes the node's incoming edges, matches the chart's best derivation to its edge and queues
  // every other edge with its children's best derivations.
  void Expand(Node& v) {
    v.expanded = true;
    edges_.Compute(v.start, v.end, v.symbol, v.after, &v.edges);
    const int32_t chart_edge = ChartEdge(maxc_, v.start, v.end, v.symbol, v.after, v.edges);
    if (chart_edge >= 0) {
      v.found[0].edge = chart_edge;
      v.seen.insert({chart_edge, 0, 0});
    } else {
      // The chart's choice has no matching edge (cannot happen with consistent charts): it keeps
      // no successors, and no other edge can be ranked against it reliably.
      v.successors_done = v.found.size();
    }
    for (int32_t e = 0; e < static_cast<int32_t>(v.edges.size()); ++e) {
      if (e == chart_edge) continue;
      Queue(v, e, 0, 0);
    }
  }

  // Queues derivation (e, rank0, rank1) of `v` when its children have those derivations.
  void Queue(Node& v, int32_t e, int32_t rank0, int32_t rank1) {
    if (!v.seen.insert({e, rank0, rank1}).second) return;
    const Edge edge = v.edges[e];
    double score = edge.rule;
    if (!v.after) {
      const Derivation* l = Get(At(v.start, edge.split, edge.left, true), rank0);
      if (!l) return;
      const double l_score = l->score;
      const Derivation* r = Get(At(edge.split, v.end, edge.right, true), rank1);
      if (!r) return;
      score += l_score + r->score;
    } else {
      const Derivation* c = Get(At(v.start, v.end, edge.left, false), rank0);
      if (!c) return;
      score += c->score;
    }
    v.candidates.push({score, e, rank0, rank1});
  }

  void QueueSuccessors(Node& v, const Derivation& d) {
    if (d.edge < 0) return;
    if (!v.after) {
      Queue(v, d.edge, d.rank0 + 1, d.rank1);
      Queue(v, d.edge, d.rank0, d.rank1 + 1);
    } else {
      Queue(v, d.edge, d.rank0 + 1, 0);
    }
  }

  const Grammar& g_;
  const MaxRuleChart& maxc_;
  const std::vector<std::string>& words_;
  const MaxRuleEdgeSource& edges_;
  std::unordered_map<int64_t, Node> nodes_;  // references stay valid as it grows
};


// The Berkeley parser 1.7's k-best lists (CoarseToFineNBestParser with LazyList and HyperEdge),
// re-implemented from its description for comparison: every node keeps a sorted list and a fringe;
// a derivation's successors enter its node's fringe only when a tree that uses it is extracted, a
// binary derivation then gets one successor (the better of advancing its left or its right child,
// and only children over more than one word advance), two-word spans offer only their best binary
// edge and one-word spans only their best unary (plus the tag itself), and a popped edge is
// dropped when it "differs in POS at most" from one already listed (HyperEdge.differsInPOSatMost).
struct BerkeleyDerivation {
  double score = kNegInf;
  int32_t edge = 0;
  int32_t rank0 = 0, rank1 = 0;
  bool chart = false;  // the max-rule chart's own choice: first among equal scores
  bool expanded = false;
};

struct BerkeleyWorse {
  bool operator()(const BerkeleyDerivation& a, const BerkeleyDerivation& b) const {
    if (a.score != b.score) return a.score < b.score;
    if (a.chart != b.chart) return b.chart;
    return std::tie(a.edge, a.rank0, a.rank1) > std::tie(b.edge, b.rank0, b.rank1);
  }
};

struct BerkeleyNode {
  int32_t start = 0, end = 0, symbol = 0;
  bool after = false;
  std::vector<Edge> edges;
  std::vector<BerkeleyDerivation> sorted;
  std::priority_queue<BerkeleyDerivation, std::vector<BerkeleyDerivation>, BerkeleyWorse> fringe;
};

class BerkeleyKBest {
 public:
  BerkeleyKBest(const Grammar& g, const MaxRuleEdgeSource& edges, const MaxRuleChart& maxc,
                const std::vector<std::string>& words)
      : g_(g), words_(words), maxc_(maxc), edges_(edges) {}

  BerkeleyNode& At(int32_t start, int32_t end, int32_t symbol, bool after) {
    const int64_t key = (int64_t(start) * (words_.size() + 1) + end) * g_.num_symbols() * 2 +
                        int64_t(symbol) * 2 + (after ? 1 : 0);
    auto [it, inserted] = nodes_.try_emplace(key);
    BerkeleyNode& v = it->second;
    if (inserted) Init(v, start, end, symbol, after);
    return v;
  }

  // LazyList.getKbest: the derivation of `rank`, or -1 when there is none.
  int32_t Get(BerkeleyNode& v, size_t rank) {
    if (rank > v.sorted.size()) return -1;
    if (rank == v.sorted.size()) NextBest(v);
    return rank < v.sorted.size() ? static_cast<int32_t>(rank) : -1;
  }

  // extractBestMaxRuleParse1: the tree of ROOT-or-other `symbol`'s after-derivation of `rank`,
  // expanding every derivation it uses; false when a derivation is missing.
  bool Extract(int32_t start, int32_t end, int32_t symbol, size_t rank, Tree* out) {
    BerkeleyNode& parent = At(start, end, symbol, true);
    const int32_t p = Get(parent, rank);
    if (p < 0) return false;
    const BerkeleyDerivation pd = parent.sorted[p];
    const int32_t child_symbol = parent.edges[pd.edge].left;
    BerkeleyNode& child = At(start, end, child_symbol, false);
    const int32_t c = Get(child, pd.rank0);
    if (c < 0) return false;
    const BerkeleyDerivation cd = child.sorted[c];
    Tree tree;
    if (end - start == 1) {
      tree = Tree(g_.symbol_names[child_symbol], {Tree(words_[start])});
    } else {
      const Edge e = child.edges[cd.edge];
      Tree left, right;
      if (!Extract(start, e.split, e.left, cd.rank0, &left)) return false;
      if (!Extract(e.split, end, e.right, cd.rank1, &right)) return false;
      tree = Tree(g_.symbol_names[child_symbol], {std::move(left), std::move(right)});
    }
    Expand(child, c);
    if (child_symbol != symbol) {
      const int32_t middle = g_.UnaryIntermediate(symbol, child_symbol);
      if (middle > 0) tree = Tree(g_.symbol_names[middle], {std::move(tree)});
      tree = Tree(g_.symbol_names[symbol], {std::move(tree)});
    }
    Expand(parent, p);
    *out = std::move(tree);
    return true;
  }

 private:
  void Push(BerkeleyNode& v, int32_t e, int32_t rank0, int32_t rank1, double score, bool chart) {
    v.fringe.push({score, e, rank0, rank1, chart, false});
  }

  void Init(BerkeleyNode& v, int32_t start, int32_t end, int32_t symbol, bool after) {
    v.start = start;
    v.end = end;
    v.symbol = symbol;
    v.after = after;
    const int32_t span = end - start;
    if (!after && span == 1) {
      const double best = Best(maxc_, start, end, symbol, false);
      if (best > kNegInf) {
        v.edges.push_back({start, -1, -1, best});
        Push(v, 0, 0, 0, best, true);
      }
      return;
    }
    edges_.Compute(start, end, symbol, after, &v.edges);
    const int32_t chart_edge = ChartEdge(maxc_, start, end, symbol, after, v.edges);
    auto score_of = [&](const Edge& e) {
      if (!after) {
        return e.rule + Best(maxc_, start, e.split, e.left, true) +
               Best(maxc_, e.split, end, e.right, true);
      }
      return e.rule + Best(maxc_, start, end, e.left, false);
    };
    if (!after && span == 2) {  // only the best binary edge
      if (chart_edge >= 0) {
        Push(v, chart_edge, 0, 0, Best(maxc_, start, end, symbol, false), true);
      }
      return;
    }
    if (after && span == 1) {  // the best unary and the tag itself
      int32_t best = -1;
      for (int32_t e = 0; e < static_cast<int32_t>(v.edges.size()); ++e) {
        if (v.edges[e].left == symbol) {
          Push(v, e, 0, 0, score_of(v.edges[e]), e == chart_edge);
        } else if (best < 0 || score_of(v.edges[e]) > score_of(v.edges[best])) {
          best = e;
        }
      }
      if (best >= 0) Push(v, best, 0, 0, score_of(v.edges[best]), best == chart_edge);
      return;
    }
    for (int32_t e = 0; e < static_cast<int32_t>(v.edges.size()); ++e) {
      Push(v, e, 0, 0, score_of(v.edges[e]), e == chart_edge);
    }
  }

  // HyperEdge.differsInPOSatMost(listed, popped), for edges of the same node.
  bool DiffersInPosAtMost(const BerkeleyNode& v, const BerkeleyDerivation& listed,
                          const BerkeleyDerivation& popped) const {
    const Edge& a = v.edges[listed.edge];
    const Edge& b = v.edges[popped.edge];
    if (v.after) return a.left == b.left && listed.rank0 == popped.rank0;
    if (a.split != b.split) return false;
    const auto tag = [&](int32_t symbol) { return !g_.symbol_is_phrasal[symbol]; };
    if (v.end - a.split == 1 && a.left == b.left && listed.rank0 == popped.rank0 &&
        tag(a.right) && tag(b.right)) {
      return true;
    }
    if (a.split - v.start == 1 && a.right == b.right && listed.rank1 == popped.rank1) return true;
    return a.left == b.left && a.right == b.right && listed.rank0 == popped.rank0 &&
           listed.rank1 == popped.rank1 && tag(a.left) && tag(b.left);
  }

  void NextBest(BerkeleyNode& v) {
    while (!v.fringe.empty()) {
      const BerkeleyDerivation d = v.fringe.top();
      v.fringe.pop();
      bool fresh = true;
      for (const BerkeleyDerivation& listed : v.sorted) {
        if (DiffersInPosAtMost(v, listed, d)) {
          fresh = false;
          break;
        }
      }
      if (fresh) {
        v.sorted.push_back(d);
        return;
      }
    }
  }

  // updateConstrainedMaxCScores: queues the successor of a derivation used by an extracted tree.
  void Expand(BerkeleyNode& v, int32_t index) {
    BerkeleyDerivation d = v.sorted[index];
    if (d.expanded) return;
    const Edge e = v.edges[d.edge];
    if (!v.after) {
      v.sorted[index].expanded = true;
      if (v.end - v.start == 1) return;
      BerkeleyNode& left = At(v.start, e.split, e.left, true);
      BerkeleyNode& right = At(e.split, v.end, e.right, true);
      double left_score = kNegInf, right_score = kNegInf;
      if (e.split - v.start > 1) {
        const int32_t l = Get(left, d.rank0 + 1);
        const int32_t r = Get(right, d.rank1);
        if (l >= 0 && r >= 0) left_score = left.sorted[l].score + right.sorted[r].score + e.rule;
      }
      if (v.end - e.split > 1) {
        const int32_t r = Get(right, d.rank1 + 1);
        const int32_t l = Get(left, d.rank0);
        if (l >= 0 && r >= 0) right_score = left.sorted[l].score + right.sorted[r].score + e.rule;
      }
      const bool has_left = left_score > kNegInf, has_right = right_score > kNegInf;
      if (has_left && (!has_right || left_score > right_score)) {
        Push(v, d.edge, d.rank0 + 1, d.rank1, left_score, false);
      } else if (has_right) {
        Push(v, d.edge, d.rank0, d.rank1 + 1, right_score, false);
      }
      return;
    }
    if (v.end - v.start > 1) {
      BerkeleyNode& child = At(v.start, v.end, e.left, false);
      const int32_t c = Get(child, d.rank0 + 1);
      if (c >= 0) Push(v, d.edge, d.rank0 + 1, 0, child.sorted[c].score + e.rule, false);
      v.sorted[index].expanded = true;
    }
  }

  const Grammar& g_;
  const std::vector<std::string>& words_;
  const MaxRuleChart& maxc_;
  const MaxRuleEdgeSource& edges_;
  std::unordered_map<int64_t, BerkeleyNode> nodes_;
};
}  // namespace

void BinaryEdgePosteriors(const Grammar& g, const InsideOutsideCharts& charts, int32_t start,
                          int32_t split, int32_t end, int32_t parent,
                          std::map<std::pair<int32_t, int32_t>, double>* posteriors) {
  const ScaledChart& in = charts.inside;
  const double out_scale = charts.outside.scale(start, end);
  const double left_scale = in.scale(start, split);
  const double right_scale = in.scale(split, end);
  if (out_scale == kNegInf || left_scale == kNegInf || right_scale == kNegInf) return;
  const double factor = std::exp(out_scale + left_scale + right_scale - charts.log_likelihood);
  const double* outside = charts.outside.cell(start, end);
  const double* left = in.cell(start, split);
  const double* right = in.cell(split, end);
  std::map<std::pair<int32_t, int32_t>, double> sums;
  const int32_t first = g.symbol_first_state[parent];
  for (int32_t a = first; a < first + g.symbol_num_substates[parent]; ++a) {
    const double o = outside[a];
    if (o == 0) continue;
    for (int32_t r = g.binary_parent_begin[a]; r < g.binary_parent_begin[a + 1]; ++r) {
      const double lv = left[g.binary_left[r]];
      const double rv = right[g.binary_right[r]];
      if (lv == 0 || rv == 0) continue;
      sums[{g.state_symbol[g.binary_left[r]], g.state_symbol[g.binary_right[r]]}] +=
          o * std::exp(g.binary_log_prob[r]) * lv * rv;
    }
  }
  for (const auto& [children, sum] : sums) {
    if (sum > 0) (*posteriors)[children] = sum * factor;
  }
}

void UnaryEdgePosteriors(const Grammar& g, const InsideOutsideCharts& charts, int32_t start,
                         int32_t end, int32_t parent, std::map<int32_t, double>* posteriors) {
  const double out_scale = charts.outside.scale(start, end);
  const double in_scale = charts.inside.scale(start, end);
  if (out_scale == kNegInf || in_scale == kNegInf) return;
  const double factor = std::exp(out_scale + in_scale - charts.log_likelihood);
  const double* outside = charts.outside.cell(start, end);
  const double* inside = charts.inside.cell(start, end);
  std::map<int32_t, double> sums;
  const int32_t first = g.symbol_first_state[parent];
  for (int32_t a = first; a < first + g.symbol_num_substates[parent]; ++a) {
    const double o = outside[a];
    if (o == 0) continue;
    for (int32_t u = g.sum_unary_parent_begin[a]; u < g.sum_unary_parent_begin[a + 1]; ++u) {
      const double c = inside[g.sum_unary_child[u]];
      if (c == 0) continue;
      sums[g.state_symbol[g.sum_unary_child[u]]] += o * std::exp(g.sum_unary_log_prob[u]) * c;
    }
  }
  for (const auto& [child, sum] : sums) {
    if (child != parent && sum > 0) (*posteriors)[child] = sum * factor;
  }
}

StatusOr<std::vector<ScoredTree>> KBestMaxRuleTrees(const Grammar& grammar,
                                                    const InsideOutsideCharts& charts,
                                                    const MaxRuleChart& maxc,
                                                    const std::vector<std::string>& words, int k,
                                                    KBestStyle style) {
  if (!(charts.log_likelihood > kNegInf)) return Status::Error("no max-rule derivation of ROOT");
  GrammarEdgeSource edges(grammar, charts, maxc);
  return KBestMaxRuleTrees(grammar, edges, maxc, words, k, style);
}

StatusOr<std::vector<ScoredTree>> KBestMaxRuleTrees(const Grammar& grammar,
                                                    const MaxRuleEdgeSource& edges,
                                                    const MaxRuleChart& maxc,
                                                    const std::vector<std::string>& words, int k,
                                                    KBestStyle style) {
  if (maxc.length == 0 || !(maxc.root_score() > kNegInf)) {
    return Status::Error("no max-rule derivation of ROOT");
  }
  if (maxc.score_before_unary.size() != maxc.score.size()) {
    return Status::Error("k-best needs the max-rule chart of a CPU pass (scores before unaries)");
  }
  if (style == KBestStyle::kBerkeley) {
    BerkeleyKBest kbest(grammar, edges, maxc, words);
    std::vector<ScoredTree> trees;
    for (int rank = 0; rank < k; ++rank) {
      ScoredTree scored;
      if (!kbest.Extract(0, maxc.length, Grammar::kRootState, rank, &scored.tree)) break;
      BerkeleyNode& root = kbest.At(0, maxc.length, Grammar::kRootState, true);
      scored.log_score = root.sorted[rank].score;
      scored.tree.score = scored.log_score;
      trees.push_back(std::move(scored));
    }
    return trees;
  }
  KBest kbest(grammar, edges, maxc, words);
  Node& root = kbest.At(0, maxc.length, Grammar::kRootState, true);
  std::vector<ScoredTree> trees;
  for (int rank = 0; rank < k; ++rank) {
    const Derivation* d = kbest.Get(root, rank);
    if (!d) break;
    const double score = d->score;
    ScoredTree scored;
    scored.tree = kbest.Build(root, rank);
    scored.tree.score = score;
    scored.log_score = score;
    trees.push_back(std::move(scored));
  }
  return trees;
}

}  // namespace cky
