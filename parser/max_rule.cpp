#include "parser/max_rule.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "common/thread_pool.h"
#include "parser/child_pair_runs.h"
#include "parser/kbest.h"

namespace cky {

std::vector<std::vector<int32_t>> NonzeroLeftStates(const SumProductRules& rules,
                                                    const ScaledChart& inside) {
  const int32_t n = inside.length;
  std::vector<std::vector<int32_t>> nonzero(n > 0 ? Chart::NumCells(n) : 0);
  for (int32_t span = 1; span < n; ++span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      PresentLeftStates(inside.cell(start, start + span), 0.0, rules.left_pair_begin,
                        &nonzero[inside.CellIndex(start, start + span)]);
    }
  }
  return nonzero;
}

double LogTagPosterior(const Grammar& g, const LexicalScores& lexical,
                       const InsideOutsideCharts& charts, int32_t start, int32_t tag) {
  const double out_scale = charts.outside.scale(start, start + 1);
  if (g.symbol_is_phrasal[tag] || out_scale == kNegInf) return kNegInf;
  const double* outside = charts.outside.cell(start, start + 1);
  const double* word = lexical.word(start);
  double sum = 0;
  const int32_t first = g.symbol_first_state[tag];
  for (int32_t k = 0; k < g.symbol_num_substates[tag]; ++k) {
    if (outside[first + k] == 0 || !(word[first + k] > kNegInf)) continue;
    sum += outside[first + k] * std::exp(word[first + k] + out_scale - charts.log_likelihood);
  }
  return sum > 0 ? std::log(sum) : kNegInf;
}

double AddBinaryRuleSums(const SumProductRules& base, const InsideOutsideCharts& charts,
                         const std::vector<std::vector<int32_t>>& nonzero, int32_t start,
                         int32_t split, int32_t end, std::vector<double>* binary_sum,
                         std::vector<int32_t>* touched) {
  const ScaledChart& in = charts.inside;
  const double out_scale = charts.outside.scale(start, end);
  const double left_scale = in.scale(start, split);
  const double right_scale = in.scale(split, end);
  if (out_scale == kNegInf || left_scale == kNegInf || right_scale == kNegInf) return 0;
  const double* outside = charts.outside.cell(start, end);
  const double* left = in.cell(start, split);
  const double* right = in.cell(split, end);
  for (int32_t l : nonzero[in.CellIndex(start, split)]) {
    const double lv = left[l];
    for (int32_t p = base.left_pair_begin[l]; p < base.left_pair_begin[l + 1]; ++p) {
      const double rr = right[base.pair_right[p]];
      if (rr == 0) continue;
      for (int32_t r = base.pair_begin[p]; r < base.pair_begin[p + 1]; ++r) {
        const double o = outside[base.parent[r]];
        if (o == 0) continue;
        double& sum = (*binary_sum)[base.base[r]];
        if (sum == 0) touched->push_back(base.base[r]);
        sum += o * base.prob[r] * lv * rr;
      }
    }
  }
  return std::exp(out_scale + left_scale + right_scale - charts.log_likelihood);
}

double UnaryRuleSums(const Grammar& g, const SumProductRules& base,
                     const InsideOutsideCharts& charts, int32_t start, int32_t end,
                     std::vector<double>* unary_sum) {
  std::fill(unary_sum->begin(), unary_sum->end(), 0.0);
  const double out_scale = charts.outside.scale(start, end);
  const double in_scale = charts.inside.scale(start, end);
  if (out_scale == kNegInf || in_scale == kNegInf) return 0;
  const double* outside = charts.outside.cell(start, end);
  const double* inside = charts.inside.cell(start, end);
  for (size_t u = 0; u < g.sum_unary_parent.size(); ++u) {
    const double o = outside[g.sum_unary_parent[u]];
    const double c = inside[g.sum_unary_child[u]];
    if (o == 0 || c == 0) continue;
    (*unary_sum)[base.unary_base[u]] += o * base.unary_prob[u] * c;
  }
  return std::exp(out_scale + in_scale - charts.log_likelihood);
}

void OfferBinaryCandidate(const SumProductRules::BaseBinary& rule, int32_t start, int32_t split,
                          int32_t end, double log_rule, int64_t key, std::vector<int64_t>* best_key,
                          MaxRuleChart* maxc) {
  const double l = maxc->score[maxc->Index(start, split, rule.left)];
  const double r = maxc->score[maxc->Index(split, end, rule.right)];
  if (!(l > kNegInf) || !(r > kNegInf)) return;
  const double candidate = log_rule + l + r;
  const int64_t at = maxc->Index(start, end, rule.parent);
  if (candidate > maxc->score[at] ||
      (candidate == maxc->score[at] && key < (*best_key)[rule.parent])) {
    maxc->score[at] = candidate;
    maxc->split[at] = split;
    maxc->left[at] = rule.left;
    maxc->right[at] = rule.right;
    (*best_key)[rule.parent] = key;
  }
}

namespace {

void MaxRuleChartWith(const Grammar& g, const SumProductRules& base, const LexicalScores& lexical,
                      const InsideOutsideCharts& charts, MaxRuleChart* maxc) {
  const int32_t n = lexical.length;
  const int32_t symbols = g.num_symbols();
  const double log_z = charts.log_likelihood;
  maxc->Reset(n, symbols);
  maxc->score_before_unary.assign(maxc->score.size(), kNegInf);
  if (n == 0 || !(log_z > kNegInf)) return;

  std::vector<double> binary_sum(base.base_binaries.size());
  std::vector<int32_t> touched;  // base rules with a sum at this split, in first-touch order
  std::vector<double> unary_sum(base.base_unaries.size());
  const std::vector<std::vector<int32_t>> nonzero = NonzeroLeftStates(base, charts.inside);
  // Tie order: the first base rule (in BaseRules order), then the first split, wins.
  std::vector<int64_t> best_key(symbols);
  for (int32_t span = 1; span <= n; ++span) {
    for (int32_t start = 0; start + span <= n; ++start) {
      const int32_t end = start + span;
      if (span == 1) {
        for (int32_t tag = 1; tag < symbols; ++tag) {
          maxc->score[maxc->Index(start, end, tag)] =
              LogTagPosterior(g, lexical, charts, start, tag);
        }
      } else {
        std::fill(best_key.begin(), best_key.end(), INT64_MAX);
        for (int32_t split = start + 1; split < end; ++split) {
          touched.clear();
          const double factor =
              AddBinaryRuleSums(base, charts, nonzero, start, split, end, &binary_sum, &touched);
          // Base rule order decides ties, as in the dense loop this replaces.
          std::sort(touched.begin(), touched.end());
          for (int32_t b : touched) {
            const double b_sum = binary_sum[b];
            binary_sum[b] = 0;
            if (!(b_sum > 0)) continue;
            OfferBinaryCandidate(base.base_binaries[b], start, split, end, std::log(b_sum * factor),
                                 int64_t(b) * n + split, &best_key, maxc);
          }
        }
      }
      std::copy_n(maxc->score.begin() + maxc->Index(start, end, 0), symbols,
                  maxc->score_before_unary.begin() + maxc->Index(start, end, 0));
      // The unary layer reads the children's scores from before it.
      const double factor = UnaryRuleSums(g, base, charts, start, end, &unary_sum);
      if (factor == 0) continue;
      std::vector<double> before(maxc->score.begin() + maxc->Index(start, end, 0),
                                 maxc->score.begin() + maxc->Index(start, end, 0) + symbols);
      for (size_t u = 0; u < base.base_unaries.size(); ++u) {
        if (!(unary_sum[u] > 0)) continue;
        const auto [parent, child] = base.base_unaries[u];
        if (!(before[child] > kNegInf)) continue;
        const double candidate = std::log(unary_sum[u] * factor) + before[child];
        const int64_t at = maxc->Index(start, end, parent);
        if (candidate > maxc->score[at]) {
          maxc->score[at] = candidate;
          maxc->unary_child[at] = child;
        }
      }
    }
  }
}

struct Extractor {
  const Grammar& g;
  const MaxRuleChart& maxc;
  const std::vector<std::string>& words;
  Status status;

  // A node that may start with the cell's unary (Berkeley's extractBestMaxRuleParse1).
  Tree WithUnary(int32_t start, int32_t end, int32_t symbol) {
    const int32_t child = maxc.unary_child[maxc.Index(start, end, symbol)];
    if (child < 0) return Direct(start, end, symbol);
    Tree below = Direct(start, end, child);
    const int32_t middle = g.UnaryIntermediate(symbol, child);
    if (middle > 0) below = Tree(g.symbol_names[middle], {std::move(below)});
    return Tree(g.symbol_names[symbol], {std::move(below)});
  }
  // A node built by a binary rule or the lexicon (extractBestMaxRuleParse2).
  Tree Direct(int32_t start, int32_t end, int32_t symbol) {
    if (end - start == 1) return Tree(g.symbol_names[symbol], {Tree(words[start])});
    const int64_t at = maxc.Index(start, end, symbol);
    const int32_t split = maxc.split[at];
    if (split < 0) {
      if (status.ok()) {
        status = Status::Error("max-rule chart: no derivation of " + g.symbol_names[symbol] +
                               " over words " + std::to_string(start) + ".." + std::to_string(end));
      }
      return Tree(g.symbol_names[symbol]);
    }
    Tree left = WithUnary(start, split, maxc.left[at]);
    Tree right = WithUnary(split, end, maxc.right[at]);
    return Tree(g.symbol_names[symbol], {std::move(left), std::move(right)});
  }
};

}  // namespace

void ReferenceMaxRuleChart(const Grammar& grammar, const LexicalScores& lexical,
                           const InsideOutsideCharts& charts, MaxRuleChart* maxc) {
  MaxRuleChartWith(grammar, SumProductRules(grammar), lexical, charts, maxc);
}

void FastMaxRuleChart(const Grammar& grammar, const SumProductRules& rules,
                      const LexicalScores& lexical, const InsideOutsideCharts& charts,
                      MaxRuleChart* maxc) {
  MaxRuleChartWith(grammar, rules, lexical, charts, maxc);
}

StatusOr<Tree> ExtractMaxRuleTree(const Grammar& grammar, const MaxRuleChart& maxc,
                                  const std::vector<std::string>& words) {
  if (maxc.length == 0 || !(maxc.root_score() > kNegInf)) {
    return Status::Error("no max-rule derivation of ROOT");
  }
  Extractor extractor{grammar, maxc, words, Status()};
  Tree tree = extractor.WithUnary(0, maxc.length, Grammar::kRootState);
  if (!extractor.status.ok()) return extractor.status;
  tree.score = maxc.root_score();
  return tree;
}

ParseOutcome MaxRuleOutcome(const Grammar& grammar, const std::vector<std::string>& words,
                            double log_likelihood, const MaxRuleChart& maxc) {
  ParseOutcome outcome;
  if (!(log_likelihood > kNegInf)) {
    outcome.status = ParseStatus::kNoParse;
    outcome.message = "the grammar derives no tree for the sentence";
    return outcome;
  }
  auto tree = ExtractMaxRuleTree(grammar, maxc, words);
  if (!tree.ok()) {
    outcome.status = ParseStatus::kNoParse;
    outcome.message = tree.status().message();
    return outcome;
  }
  outcome.status = ParseStatus::kOk;
  outcome.tree = std::move(*tree);
  outcome.log_score = maxc.root_score();
  outcome.log_likelihood = log_likelihood;
  return outcome;
}

namespace {

// One sentence: inside-outside (the reference, or the fast path when `fast`, which honours
// `allowed`), then max-rule (and the k best trees when asked).
ParseOutcome ParseMaxRuleWith(const Grammar& grammar, const SumProductRules& base,
                              const SentenceInput& sentence, bool fast,
                              const std::vector<uint8_t>* allowed, const DecoderOptions& decoder) {
  // Inside and outside scores of every state, and the max-rule chart over base symbols.
  const double per_cell = 16.0 * grammar.num_states() + 24.0 * grammar.num_symbols() + 40;
  if (std::optional<ParseOutcome> refused = RefuseBeforeParsing(sentence, per_cell)) {
    return *std::move(refused);
  }
  InsideOutsideCharts charts;
  if (fast) {
    FastInsideOutside(grammar, base, sentence.lexical, &charts, allowed);
  } else {
    ReferenceInsideOutside(grammar, sentence.lexical, &charts);
  }
  MaxRuleChart maxc;
  if (charts.log_likelihood > kNegInf) {
    MaxRuleChartWith(grammar, base, sentence.lexical, charts, &maxc);
  }
  ParseOutcome outcome = MaxRuleOutcome(grammar, sentence.words, charts.log_likelihood, maxc);
  AddKBest(grammar, sentence.words, charts, maxc, decoder, &outcome);
  return outcome;
}

}  // namespace

ParseOutcome ParseMaxRule(const Grammar& grammar, const SumProductRules& rules,
                          const SentenceInput& sentence, const std::vector<uint8_t>* allowed,
                          const DecoderOptions& decoder) {
  return ParseMaxRuleWith(grammar, rules, sentence, /*fast=*/true, allowed, decoder);
}

ParseOutcome ParseMaxRuleReference(const Grammar& grammar, const SumProductRules& rules,
                                   const SentenceInput& sentence, const DecoderOptions& decoder) {
  return ParseMaxRuleWith(grammar, rules, sentence, /*fast=*/false, nullptr, decoder);
}

void AddKBest(const Grammar& grammar, const std::vector<std::string>& words,
              const InsideOutsideCharts& charts, const MaxRuleChart& maxc,
              const DecoderOptions& decoder, ParseOutcome* outcome) {
  if (decoder.kbest <= 1 || outcome->status != ParseStatus::kOk) return;
  auto trees = KBestMaxRuleTrees(grammar, charts, maxc, words, decoder.kbest, decoder.kbest_style);
  if (!trees.ok()) {
    outcome->status = ParseStatus::kFailed;
    outcome->message = "k-best: " + trees.status().message();
    return;
  }
  outcome->kbest = std::move(*trees);
}

}  // namespace cky
