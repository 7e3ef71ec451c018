#include "parser/product.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "common/thread_pool.h"
#include "parser/parser.h"

namespace cky {

namespace {

// "A, B, C" (at most `limit` names, then "...").
std::string NameList(const std::vector<std::string>& names, size_t limit = 8) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > limit) out += ", ...";
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<GrammarProduct>> GrammarProduct::Create(
    std::vector<const Grammar*> grammars, std::vector<std::string> labels) {
  if (grammars.empty()) return Status::Error("a product needs at least one grammar");
  if (labels.size() != grammars.size()) {
    return Status::Error("a product needs one label per grammar");
  }
  std::unique_ptr<GrammarProduct> product(new GrammarProduct());
  const Grammar& g0 = *grammars[0];
  for (size_t k = 0; k < grammars.size(); ++k) {
    const Grammar& g = *grammars[k];
    Member m;
    m.grammar = &g;
    m.label = labels[k];
    const std::string both = "grammars " + labels[0] + " and " + labels[k];
    m.to_member.assign(g0.num_symbols(), -1);
    m.to_product.assign(g.num_symbols(), -1);
    std::vector<std::string> only_first, only_this;
    for (int32_t s = 0; s < g0.num_symbols(); ++s) {
      const int32_t t = g.FindSymbol(g0.symbol_names[s]);
      if (t < 0) {
        only_first.push_back(g0.symbol_names[s]);
        continue;
      }
      m.to_member[s] = t;
      m.to_product[t] = s;
    }
    for (int32_t t = 0; t < g.num_symbols(); ++t) {
      if (m.to_product[t] < 0) only_this.push_back(g.symbol_names[t]);
    }
    if (!only_first.empty() || !only_this.empty()) {
      std::string what = both + " have different base symbols, and a product needs the same:";
      if (!only_first.empty()) what += " only in " + labels[0] + ": " + NameList(only_first) + ";";
      if (!only_this.empty()) what += " only in " + labels[k] + ": " + NameList(only_this) + ";";
      what.pop_back();
      return Status::Error(what);
    }
    if (m.to_member[Grammar::kRootState] != Grammar::kRootState) {
      return Status::Error(both + ": the root symbol is not ROOT in both");
    }
    for (int32_t s = 0; s < g0.num_symbols(); ++s) {
      if (g0.symbol_is_phrasal[s] != g.symbol_is_phrasal[m.to_member[s]]) {
        auto kind = [](bool phrasal) { return phrasal ? "phrasal" : "a tag"; };
        return Status::Error(both + " differ on symbol " + g0.symbol_names[s] + ": " +
                             kind(g0.symbol_is_phrasal[s]) + " in " + labels[0] + ", " +
                             kind(g.symbol_is_phrasal[m.to_member[s]]) + " in " + labels[k]);
      }
    }
    m.rules = std::make_unique<SumProductRules>(g);
    const SumProductRules& rules0 = k == 0 ? *m.rules : *product->members_[0].rules;
    using Key = std::tuple<int32_t, int32_t, int32_t>;
    auto key0 = [](const SumProductRules::BaseBinary& b) { return Key{b.parent, b.left, b.right}; };
    for (const SumProductRules::BaseBinary& b : m.rules->base_binaries) {
      const Key key{m.to_product[b.parent], m.to_product[b.left], m.to_product[b.right]};
      auto it = std::lower_bound(
          rules0.base_binaries.begin(), rules0.base_binaries.end(), key,
          [&](const SumProductRules::BaseBinary& a, const Key& x) { return key0(a) < x; });
      m.binary_to_product.push_back(it != rules0.base_binaries.end() && key0(*it) == key
                                        ? static_cast<int32_t>(it - rules0.base_binaries.begin())
                                        : -1);
    }
    for (const auto& [parent, child] : rules0.base_unaries) {
      const std::pair<int32_t, int32_t> key{m.to_member[parent], m.to_member[child]};
      auto it = std::lower_bound(m.rules->base_unaries.begin(), m.rules->base_unaries.end(), key);
      m.unary_to_member.push_back(it != m.rules->base_unaries.end() && *it == key
                                      ? static_cast<int32_t>(it - m.rules->base_unaries.begin())
                                      : -1);
    }
    product->members_.push_back(std::move(m));
  }
  return product;
}

namespace {

// Accumulates a product score: the sum over the grammars of their log posteriors, and how many
// grammars gave one (a rule is in the product only when every grammar gives it a posterior).
struct LogSum {
  double sum = 0;
  int count = 0;
  void Add(double posterior) {
    sum += std::log(posterior);
    ++count;
  }
};

// Resets `maxc` for the sentence (grammar 0's symbols, no derivation yet); false when there is
// nothing to decode (no words, or a grammar without a parse).
bool ResetProductChart(const GrammarProduct& product, std::span<const MemberCharts> members,
                       MaxRuleChart* maxc) {
  const int32_t n = members[0].lexical->length;
  maxc->Reset(n, product.base().num_symbols());
  maxc->score_before_unary.assign(maxc->score.size(), kNegInf);
  if (n == 0) return false;
  return std::all_of(members.begin(), members.end(), [](const MemberCharts& member) {
    return member.charts->log_likelihood > kNegInf;
  });
}

}  // namespace

void ReferenceProductMaxRuleChart(const GrammarProduct& product,
                                  std::span<const MemberCharts> members, MaxRuleChart* maxc) {
  const Grammar& g0 = product.base();
  const int m = static_cast<int>(members.size());
  const int32_t n = members[0].lexical->length;
  const int32_t symbols = g0.num_symbols();
  if (!ResetProductChart(product, members, maxc)) return;
  // exp(log_value - log P_k(w)): a posterior of grammar k from log-scores.
  auto posterior = [&](int k, double log_value) {
    return log_value > kNegInf ? std::exp(log_value - members[k].charts->log_likelihood) : 0.0;
  };
  auto in = [&](int k, int32_t s, int32_t e, int32_t state) {
    return members[k].charts->inside.LogScore(s, e, state);
  };
  auto out = [&](int k, int32_t s, int32_t e, int32_t state) {
    return members[k].charts->outside.LogScore(s, e, state);
  };
  using Rule = std::tuple<int32_t, int32_t, int32_t>;  // product symbols (parent, left, right)
  for (int32_t span = 1; span <= n; ++span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      const int32_t end = start + span;
      if (span == 1) {
        for (int32_t tag = 1; tag < symbols; ++tag) {
          if (g0.symbol_is_phrasal[tag]) continue;
          LogSum total;
          for (int k = 0; k < m; ++k) {
            const Grammar& g = product.grammar(k);
            const int32_t t = product.member_symbol(k, tag);
            double sum = 0;
            for (int32_t sub = 0; sub < g.symbol_num_substates[t]; ++sub) {
              const int32_t state = g.symbol_first_state[t] + sub;
              sum +=
                  posterior(k, out(k, start, end, state) + members[k].lexical->word(start)[state]);
            }
            if (sum > 0) total.Add(sum);
          }
          if (total.count == m) maxc->score[maxc->Index(start, end, tag)] = total.sum;
        }
      } else {
        // The best candidate's (left, right, split) per parent: ties go to the first rule (grammar
        // 0's base rule order, by symbols), then the first split.
        std::map<int32_t, std::tuple<int32_t, int32_t, int32_t>> best_key;
        for (int32_t split = start + 1; split < end; ++split) {
          std::map<Rule, LogSum> combined;
          for (int k = 0; k < m; ++k) {
            const Grammar& g = product.grammar(k);
            std::map<Rule, double> sums;
            for (int64_t r = 0; r < g.num_binary_rules(); ++r) {
              const double v =
                  posterior(k, out(k, start, end, g.binary_parent[r]) + g.binary_log_prob[r] +
                                   in(k, start, split, g.binary_left[r]) +
                                   in(k, split, end, g.binary_right[r]));
              if (v > 0) {
                sums[{product.product_symbol(k, g.state_symbol[g.binary_parent[r]]),
                      product.product_symbol(k, g.state_symbol[g.binary_left[r]]),
                      product.product_symbol(k, g.state_symbol[g.binary_right[r]])}] += v;
              }
            }
            for (const auto& [rule, v] : sums) combined[rule].Add(v);
          }
          for (const auto& [rule, total] : combined) {
            if (total.count != m) continue;
            const auto [parent, left, right] = rule;
            const double l = maxc->score[maxc->Index(start, split, left)];
            const double r = maxc->score[maxc->Index(split, end, right)];
            if (!(l > kNegInf) || !(r > kNegInf)) continue;
            const double candidate = total.sum + l + r;
            const int64_t at = maxc->Index(start, end, parent);
            const auto key = std::make_tuple(left, right, split);
            if (candidate > maxc->score[at] ||
                (candidate == maxc->score[at] && key < best_key.at(parent))) {
              maxc->score[at] = candidate;
              maxc->split[at] = split;
              maxc->left[at] = left;
              maxc->right[at] = right;
              best_key[parent] = key;
            }
          }
        }
      }
      const int64_t cell = maxc->Index(start, end, 0);
      std::copy_n(maxc->score.begin() + cell, symbols, maxc->score_before_unary.begin() + cell);
      std::map<std::pair<int32_t, int32_t>, LogSum> combined;  // (parent, child) product symbols
      for (int k = 0; k < m; ++k) {
        const Grammar& g = product.grammar(k);
        std::map<std::pair<int32_t, int32_t>, double> sums;
        for (size_t u = 0; u < g.sum_unary_parent.size(); ++u) {
          const double v =
              posterior(k, out(k, start, end, g.sum_unary_parent[u]) + g.sum_unary_log_prob[u] +
                               in(k, start, end, g.sum_unary_child[u]));
          if (v > 0) {
            sums[{product.product_symbol(k, g.state_symbol[g.sum_unary_parent[u]]),
                  product.product_symbol(k, g.state_symbol[g.sum_unary_child[u]])}] += v;
          }
        }
        for (const auto& [unary, v] : sums) combined[unary].Add(v);
      }
      for (const auto& [unary, total] : combined) {
        const auto [parent, child] = unary;
        const double below = maxc->score_before_unary[cell + child];
        if (total.count != m || !(below > kNegInf)) continue;
        const double candidate = total.sum + below;
        if (candidate > maxc->score[cell + parent]) {
          maxc->score[cell + parent] = candidate;
          maxc->unary_child[cell + parent] = child;
        }
      }
    }
  }
}

void FastProductMaxRuleChart(const GrammarProduct& product, std::span<const MemberCharts> members,
                             MaxRuleChart* maxc) {
  const Grammar& g0 = product.base();
  const SumProductRules& rules0 = product.rules(0);
  const int m = static_cast<int>(members.size());
  const int32_t n = members[0].lexical->length;
  const int32_t symbols = g0.num_symbols();
  if (!ResetProductChart(product, members, maxc)) return;
  // Per grammar: its base rules' sums at one split, the ones it touched, its unary sums and the
  // left children present per cell.
  std::vector<std::vector<double>> binary_sum(m), unary_sum(m);
  std::vector<std::vector<int32_t>> touched(m);
  std::vector<std::vector<std::vector<int32_t>>> nonzero(m);
  std::vector<double> unary_factor(m);
  for (int k = 0; k < m; ++k) {
    binary_sum[k].assign(product.rules(k).base_binaries.size(), 0.0);
    unary_sum[k].assign(product.rules(k).base_unaries.size(), 0.0);
    nonzero[k] = NonzeroLeftStates(product.rules(k), members[k].charts->inside);
  }
  // Product base binaries (rules0's numbering): their sums of logs and how many grammars gave one.
  std::vector<LogSum> combined(rules0.base_binaries.size());
  std::vector<int32_t> product_touched;
  std::vector<int64_t> best_key(symbols);  // tie order: first base rule, then first split
  for (int32_t span = 1; span <= n; ++span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      const int32_t end = start + span;
      if (span == 1) {
        for (int32_t tag = 1; tag < symbols; ++tag) {
          double total = 0;
          for (int k = 0; k < m && total > kNegInf; ++k) {
            total += LogTagPosterior(product.grammar(k), *members[k].lexical, *members[k].charts,
                                     start, product.member_symbol(k, tag));
          }
          maxc->score[maxc->Index(start, end, tag)] = total;
        }
      } else {
        std::fill(best_key.begin(), best_key.end(), INT64_MAX);
        for (int32_t split = start + 1; split < end; ++split) {
          product_touched.clear();
          for (int k = 0; k < m; ++k) {
            touched[k].clear();
            const double factor =
                AddBinaryRuleSums(product.rules(k), *members[k].charts, nonzero[k], start, split,
                                  end, &binary_sum[k], &touched[k]);
            for (int32_t b : touched[k]) {
              const double sum = binary_sum[k][b];
              binary_sum[k][b] = 0;
              const int32_t pb = product.product_binary(k, b);
              // A rule some earlier grammar lacks here is out already: only count the others.
              if (!(sum > 0) || pb < 0 || combined[pb].count != k) continue;
              if (k == 0) product_touched.push_back(pb);
              combined[pb].Add(sum * factor);
            }
          }
          // Base rule order decides ties (max_rule.cpp's order).
          std::sort(product_touched.begin(), product_touched.end());
          for (int32_t pb : product_touched) {
            const LogSum total = combined[pb];
            combined[pb] = LogSum();
            if (total.count != m) continue;
            OfferBinaryCandidate(rules0.base_binaries[pb], start, split, end, total.sum,
                                 int64_t(pb) * n + split, &best_key, maxc);
          }
        }
      }
      const int64_t cell = maxc->Index(start, end, 0);
      std::copy_n(maxc->score.begin() + cell, symbols, maxc->score_before_unary.begin() + cell);
      // The unary layer reads the children's scores from before it.
      bool any = true;
      for (int k = 0; k < m && any; ++k) {
        unary_factor[k] = UnaryRuleSums(product.grammar(k), product.rules(k), *members[k].charts,
                                        start, end, &unary_sum[k]);
        any = unary_factor[k] != 0;
      }
      if (!any) continue;
      for (size_t u = 0; u < rules0.base_unaries.size(); ++u) {
        const auto [parent, child] = rules0.base_unaries[u];
        const double below = maxc->score_before_unary[cell + child];
        if (!(below > kNegInf)) continue;
        LogSum total;
        for (int k = 0; k < m; ++k) {
          const int32_t v = product.member_unary(k, static_cast<int32_t>(u));
          if (v < 0 || !(unary_sum[k][v] > 0)) break;
          total.Add(unary_sum[k][v] * unary_factor[k]);
        }
        if (total.count != m) continue;
        const double candidate = total.sum + below;
        if (candidate > maxc->score[cell + parent]) {
          maxc->score[cell + parent] = candidate;
          maxc->unary_child[cell + parent] = child;
        }
      }
    }
  }
}

namespace {

// The product's max-rule hypergraph edges (parser/kbest.h): each grammar's rule posteriors
// (BinaryEdgePosteriors, UnaryEdgePosteriors) in its own symbols, mapped to the product's and
// combined; an edge is there when every grammar gives it a posterior.
class ProductEdgeSource : public MaxRuleEdgeSource {
 public:
  ProductEdgeSource(const GrammarProduct& product, std::span<const MemberCharts> members,
                    const MaxRuleChart& maxc)
      : product_(product), members_(members), maxc_(maxc) {}

  void Compute(int32_t start, int32_t end, int32_t symbol, bool after,
               std::vector<MaxRuleEdge>* edges) const override {
    const int m = static_cast<int>(members_.size());
    if (!after) {
      if (end - start == 1) return;
      for (int32_t split = start + 1; split < end; ++split) {
        std::map<std::pair<int32_t, int32_t>, LogSum> combined;
        for (int k = 0; k < m; ++k) {
          std::map<std::pair<int32_t, int32_t>, double> posteriors;
          BinaryEdgePosteriors(product_.grammar(k), *members_[k].charts, start, split, end,
                               product_.member_symbol(k, symbol), &posteriors);
          for (const auto& [children, v] : posteriors) {
            combined[{product_.product_symbol(k, children.first),
                      product_.product_symbol(k, children.second)}]
                .Add(v);
          }
        }
        for (const auto& [children, total] : combined) {
          if (total.count != m || !(Best(start, split, children.first, true) > kNegInf) ||
              !(Best(split, end, children.second, true) > kNegInf)) {
            continue;
          }
          edges->push_back({split, children.first, children.second, total.sum});
        }
      }
      return;
    }
    if (Best(start, end, symbol, false) > kNegInf) edges->push_back({-1, symbol, -1, 0.0});
    std::map<int32_t, LogSum> combined;
    for (int k = 0; k < m; ++k) {
      std::map<int32_t, double> posteriors;
      UnaryEdgePosteriors(product_.grammar(k), *members_[k].charts, start, end,
                          product_.member_symbol(k, symbol), &posteriors);
      for (const auto& [child, v] : posteriors) combined[product_.product_symbol(k, child)].Add(v);
    }
    for (const auto& [child, total] : combined) {
      if (total.count == m && Best(start, end, child, false) > kNegInf) {
        edges->push_back({-1, child, -1, total.sum});
      }
    }
  }

 private:
  double Best(int32_t start, int32_t end, int32_t symbol, bool after) const {
    const int64_t index = maxc_.Index(start, end, symbol);
    return after ? maxc_.score[index] : maxc_.score_before_unary[index];
  }

  const GrammarProduct& product_;
  std::span<const MemberCharts> members_;
  const MaxRuleChart& maxc_;
};

}  // namespace

StatusOr<std::vector<ScoredTree>> ProductKBestTrees(const GrammarProduct& product,
                                                    std::span<const MemberCharts> members,
                                                    const MaxRuleChart& maxc,
                                                    const std::vector<std::string>& words, int k,
                                                    KBestStyle style) {
  ProductEdgeSource edges(product, members, maxc);
  return KBestMaxRuleTrees(product.base(), edges, maxc, words, k, style);
}

LexicalScores ProductLexicalScores(const GrammarProduct& product, int k, const Lexicon& lexicon,
                                   const std::vector<std::string>& words,
                                   const LexicalScores* given, bool widen) {
  if (k == 0 && given != nullptr && !widen) return *given;
  return ScoreWords(product.grammar(k), lexicon, words, widen);
}

bool ProductRetriesWiderLexicon(const ProductOptions& options, const Lexicon& lexicon) {
  return options.retry_with_wider_lexicon && !lexicon.exact();
}

std::vector<uint8_t> SharedProductMask(const Grammar& g0, const ItemMask& fine) {
  const int64_t cells = Chart::NumCells(fine.length);
  std::vector<uint8_t> shared(cells * g0.num_symbols(), 0);
  for (int64_t c = 0; c < cells; ++c) {
    for (int32_t state = 0; state < g0.num_states(); ++state) {
      if (fine.cell(c)[state]) shared[c * g0.num_symbols() + g0.state_symbol[state]] = 1;
    }
  }
  return shared;
}

ItemMask MemberMaskFromShared(const GrammarProduct& product, int k,
                              const std::vector<uint8_t>& shared, int32_t length) {
  const Grammar& g = product.grammar(k);
  const int64_t cells = Chart::NumCells(length);
  const int32_t symbols = product.base().num_symbols();
  ItemMask mask;
  mask.length = length;
  mask.num_states = g.num_states();
  mask.allowed.resize(cells * g.num_states());
  for (int64_t c = 0; c < cells; ++c) {
    for (int32_t state = 0; state < g.num_states(); ++state) {
      mask.allowed[c * g.num_states() + state] =
          shared[c * symbols + product.product_symbol(k, g.state_symbol[state])];
    }
  }
  return mask;
}

ParseOutcome ProductMemberHasNoTree(const GrammarProduct& product, int k) {
  ParseOutcome outcome;
  outcome.status = ParseStatus::kNoParse;
  outcome.message = "grammar " + std::to_string(k + 1) + " of the product (" + product.label(k) +
                    ") derives no tree for the sentence";
  return outcome;
}

void ProductMaxRuleChart(const GrammarProduct& product, std::span<const MemberCharts> members,
                         bool reference, MaxRuleChart* maxc) {
  if (reference) {
    ReferenceProductMaxRuleChart(product, members, maxc);
  } else {
    FastProductMaxRuleChart(product, members, maxc);
  }
}

ParseOutcome ProductOutcome(const GrammarProduct& product, std::span<const MemberCharts> members,
                            const MaxRuleChart& maxc, const std::vector<std::string>& words,
                            const DecoderOptions& decoder) {
  ParseOutcome outcome;
  outcome.status = ParseStatus::kNoParse;
  if (!(maxc.root_score() > kNegInf)) {
    outcome.message = "the " + std::to_string(members.size()) +
                      " grammars of the product each parse the sentence but share no tree";
    return outcome;
  }
  auto tree = ExtractMaxRuleTree(product.base(), maxc, words);
  if (!tree.ok()) {
    outcome.message = tree.status().message();
    return outcome;
  }
  outcome.status = ParseStatus::kOk;
  outcome.tree = std::move(*tree);
  outcome.log_score = maxc.root_score();
  outcome.log_likelihood = kNegInf;  // a product defines no P(w)
  if (decoder.kbest > 1) {
    auto trees =
        ProductKBestTrees(product, members, maxc, words, decoder.kbest, decoder.kbest_style);
    if (!trees.ok()) {
      outcome.status = ParseStatus::kFailed;
      outcome.message = "k-best: " + trees.status().message();
      return outcome;
    }
    outcome.kbest = std::move(*trees);
  }
  return outcome;
}

// Per member, what one sentence has computed so far.
struct ProductParser::Sentence {
  explicit Sentence(const std::vector<std::string>& w, const LexicalScores* given, int members)
      : words(w),
        lexical0(given),
        lexical(members),
        charts(members),
        exact(members),
        computed(members, 0),
        pruned(members, 0),
        has_exact(members, 0) {}
  const std::vector<std::string>& words;
  const LexicalScores* lexical0;
  std::vector<LexicalScores> lexical;
  std::vector<InsideOutsideCharts> charts;  // pruned when pruned[k]
  std::vector<InsideOutsideCharts> exact;   // unpruned, when a pruned product found no tree
  std::vector<uint8_t> computed, pruned, has_exact;
  // kShared: grammar 0's survivors per cell and product symbol (empty: no mask).
  bool shared_done = false;
  std::vector<uint8_t> shared;
};

ProductParser::ProductParser(const GrammarProduct& product, std::vector<const Lexicon*> lexicons,
                             const ProductOptions& options)
    : product_(product), lexicons_(std::move(lexicons)), options_(options) {}

ProductParser::~ProductParser() = default;

StatusOr<std::unique_ptr<ProductParser>> ProductParser::Create(const GrammarProduct& product,
                                                               std::vector<const Lexicon*> lexicons,
                                                               const ProductOptions& options) {
  if (static_cast<int>(lexicons.size()) != product.size()) {
    return Status::Error("a product parser needs one lexicon per grammar");
  }
  std::unique_ptr<ProductParser> parser(new ProductParser(product, std::move(lexicons), options));
  if (options.pruning && !options.reference) {
    const int pruned = options.mask == ProductPruning::kShared ? 1 : product.size();
    for (int k = 0; k < pruned; ++k) {
      auto pruner = CoarseToFinePruner::Create(product.grammar(k), *options.pruning);
      if (!pruner.ok()) return pruner.status();
      parser->pruners_.push_back(std::move(*pruner));
    }
  }
  return parser;
}

void ProductParser::Compute(int k, bool prune, Sentence* s) const {
  const Grammar& g = product_.grammar(k);
  prune = prune && !pruners_.empty();
  // Inside-outside of grammar k with `lexical`, pruned when asked and possible (a grammar whose
  // pre-parses, or whose pruned chart, find nothing is parsed unpruned); returns whether pruned.
  auto run = [&](const LexicalScores& lexical, InsideOutsideCharts* charts) {
    if (options_.reference) {
      ReferenceInsideOutside(g, lexical, charts);
      return false;
    }
    ItemMask mask;
    bool masked = false;
    if (prune && options_.mask == ProductPruning::kPerGrammar) {
      masked = pruners_[k]->Prune(lexical, &mask);
    } else if (prune) {
      if (!s->shared_done) {
        s->shared_done = true;
        ItemMask fine;
        if (pruners_[0]->Prune(s->lexical[0], &fine))
          s->shared = SharedProductMask(product_.base(), fine);
      }
      if (!s->shared.empty()) {
        mask = MemberMaskFromShared(product_, k, s->shared, lexical.length);
        masked = true;
      }
    }
    FastInsideOutside(g, product_.rules(k), lexical, charts, masked ? &mask.allowed : nullptr);
    if (masked && !(charts->log_likelihood > kNegInf)) {
      FastInsideOutside(g, product_.rules(k), lexical, charts, nullptr);
      masked = false;
    }
    return masked;
  };
  if (!s->computed[k]) {
    s->computed[k] = 1;
    s->lexical[k] =
        ProductLexicalScores(product_, k, *lexicons_[k], s->words, s->lexical0, /*widen=*/false);
    s->pruned[k] = run(s->lexical[k], &s->charts[k]);
    if (!(s->charts[k].log_likelihood > kNegInf) &&
        ProductRetriesWiderLexicon(options_, *lexicons_[k])) {
      s->lexical[k] =
          ProductLexicalScores(product_, k, *lexicons_[k], s->words, s->lexical0, /*widen=*/true);
      s->pruned[k] = run(s->lexical[k], &s->charts[k]);
    }
  }
  if (!prune && s->pruned[k] && !s->has_exact[k]) {
    s->has_exact[k] = 1;
    run(s->lexical[k], &s->exact[k]);
  }
}

ParseOutcome ProductParser::Decode(int m, Sentence* s) const {
  if (s->words.empty()) {
    ParseOutcome outcome;
    outcome.status = ParseStatus::kNoParse;
    outcome.message = "empty sentence";
    return outcome;
  }
  for (int k = 0; k < m; ++k) {
    Compute(k, /*prune=*/true, s);
    if (!(s->charts[k].log_likelihood > kNegInf)) return ProductMemberHasNoTree(product_, k);
  }
  std::vector<MemberCharts> members(m);
  auto gather = [&](bool exact) {
    for (int k = 0; k < m; ++k) {
      members[k] = {&s->lexical[k], exact && s->pruned[k] ? &s->exact[k] : &s->charts[k]};
    }
  };
  MaxRuleChart maxc;
  gather(false);
  ProductMaxRuleChart(product_, members, options_.reference, &maxc);
  if (!(maxc.root_score() > kNegInf) &&
      std::any_of(s->pruned.begin(), s->pruned.begin() + m, [](uint8_t p) { return p != 0; })) {
    // The pruned charts share no tree: parse without pruning, as a pruned grammar alone would.
    for (int k = 0; k < m; ++k) Compute(k, /*prune=*/false, s);
    gather(true);
    ProductMaxRuleChart(product_, members, options_.reference, &maxc);
  }
  return ProductOutcome(product_, members, maxc, s->words, options_.decoder);
}

ParseOutcome ProductParser::Parse(const std::vector<std::string>& words,
                                  const LexicalScores* lexical0) const {
  Sentence sentence(words, lexical0, product_.size());
  return Decode(product_.size(), &sentence);
}

std::vector<ParseOutcome> ProductParser::ParsePrefixes(const std::vector<std::string>& words,
                                                       std::span<const int> sizes) const {
  Sentence sentence(words, nullptr, product_.size());
  std::vector<ParseOutcome> outcomes;
  for (int size : sizes)
    outcomes.push_back(Decode(std::clamp(size, 1, product_.size()), &sentence));
  return outcomes;
}

namespace {

class ProductBackend : public Backend {
 public:
  ProductBackend(std::unique_ptr<ProductParser> parser, int threads)
      : parser_(std::move(parser)), pool_(threads) {}
  std::string name() const override {
    const ProductOptions& options = parser_->options();
    std::string name = options.reference ? "reference/max-rule-product"
                       : options.pruning ? "cpu/pruned-max-rule-product"
                                         : "cpu/max-rule-product";
    return name + " of " + std::to_string(parser_->product().size()) + " grammars";
  }

 protected:
  std::vector<ParseOutcome> Parse(std::span<const SentenceInput> sentences,
                                  const OutcomeListener& listener, bool /*ahead*/) override {
    std::vector<ParseOutcome> outcomes(sentences.size());
    pool_.ParallelFor(static_cast<int>(sentences.size()), [&](int i, int /*worker*/) {
      outcomes[i] = parser_->Parse(sentences[i].words, &sentences[i].lexical);
      if (listener) listener(size_t(i), outcomes[i]);
    });
    return outcomes;
  }

 private:
  std::unique_ptr<ProductParser> parser_;
  ThreadPool pool_;
};

}  // namespace

StatusOr<std::unique_ptr<Backend>> MakeProductBackend(const GrammarProduct& product,
                                                      std::vector<const Lexicon*> lexicons,
                                                      const ProductOptions& options) {
  auto parser = ProductParser::Create(product, std::move(lexicons), options);
  if (!parser.ok()) return parser.status();
  return std::unique_ptr<Backend>(
      new ProductBackend(std::move(*parser), options.reference ? 1 : options.threads));
}

}  // namespace cky
