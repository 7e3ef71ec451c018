#include "parser/random_grammar.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

namespace cky {

BerkeleyModel MakeRandomModel(const RandomGrammarOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> prob(0.02, 0.9);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  GrammarBuilder b;
  const int32_t root = b.AddSymbol("ROOT");
  std::vector<int32_t> phrasal, tags, all;
  for (int i = 0; i < o.phrasal_symbols; ++i)
    phrasal.push_back(b.AddSymbol("P" + std::to_string(i)));
  if (o.big_parent_rules > 0) phrasal.push_back(b.AddSymbol("BIG"));
  for (int i = 0; i < o.tags; ++i) tags.push_back(b.AddSymbol("T" + std::to_string(i)));
  all = phrasal;
  all.insert(all.end(), tags.begin(), tags.end());
  for (int32_t s : all) b.SetNumSubstates(s, o.substates);
  const int k = o.substates;

  auto add_base_binary = [&](int32_t a, int32_t l, int32_t r) {
    for (int pa = 0; pa < k; ++pa)
      for (int pl = 0; pl < k; ++pl)
        for (int pr = 0; pr < k; ++pr) b.AddBinary(a, pa, l, pl, r, pr, prob(rng));
  };
  for (int32_t a : phrasal) {
    bool any = false;
    for (int32_t l : all)
      for (int32_t r : all)
        if (coin(rng) < o.base_rule_density) {
          add_base_binary(a, l, r);
          any = true;
        }
    if (!any) add_base_binary(a, all[rng() % all.size()], all[rng() % all.size()]);
  }
  if (o.big_parent_rules > 0) {
    const int32_t big = phrasal.back();
    int64_t added = 0;
    for (int32_t l : all)
      for (int32_t r : all)
        if (added < o.big_parent_rules) {
          add_base_binary(big, l, r);
          added += int64_t(k) * k * k;
        }
  }

  // Unaries between states (ROOT_0 to every phrasal substate, phrasal to anything), then their
  // max-product closure over chains of any length, like Berkeley's closed Viterbi unaries.
  struct State {
    int32_t symbol, sub;
    bool phrasal;
  };
  std::vector<State> states = {{root, 0, true}};
  for (int32_t s : all)
    for (int sub = 0; sub < k; ++sub)
      states.push_back({s, sub, std::find(phrasal.begin(), phrasal.end(), s) != phrasal.end()});
  const size_t n = states.size();
  std::vector<double> closure(n * n, -INFINITY);
  for (size_t j = 1; j < n; ++j)
    if (states[j].phrasal) closure[j] = std::log(prob(rng));  // ROOT_0 -> phrasal
  for (size_t i = 1; i < n; ++i) {
    if (!states[i].phrasal) continue;
    for (size_t j = 1; j < n; ++j)
      if (states[i].symbol != states[j].symbol && coin(rng) < o.unary_density) {
        closure[i * n + j] = std::log(prob(rng));
      }
  }
  // The base unaries (P(tree, words) multiplies them), before any closure.
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (closure[i * n + j] > -INFINITY) {
        b.AddBaseUnary(states[i].symbol, states[i].sub, states[j].symbol, states[j].sub,
                       std::exp(closure[i * n + j]));
      }
  // The sum-product closure over chains of one or two unaries, as Berkeley's
  // Grammar.computePairsOfUnaries builds it, and the intermediate symbol of each symbol pair.
  std::vector<double> sum(n * n, 0.0);
  std::map<std::pair<int32_t, int32_t>, std::map<int32_t, double>> mass;  // (P, C) -> via -> mass
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      if (states[i].symbol == states[j].symbol) continue;
      const double direct = std::exp(closure[i * n + j]);
      sum[i * n + j] = direct;
      mass[{states[i].symbol, states[j].symbol}][-1] += direct;
      for (size_t m = 0; m < n; ++m) {
        if (states[m].symbol == states[j].symbol) continue;
        const double via = std::exp(closure[i * n + m] + closure[m * n + j]);
        sum[i * n + j] += via;
        mass[{states[i].symbol, states[j].symbol}][states[m].symbol] += via;
      }
    }
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (sum[i * n + j] > 0) {
        b.AddSumUnary(states[i].symbol, states[i].sub, states[j].symbol, states[j].sub,
                      sum[i * n + j]);
      }
  for (const auto& [pair, by_via] : mass) {
    int32_t best = -1;
    double best_mass = 0;
    for (const auto& [via, m] : by_via) {
      if (m > best_mass) best_mass = m, best = via;
    }
    if (best >= 0) b.SetUnaryIntermediate(pair.first, pair.second, best);
  }

  for (size_t m = 0; m < n; ++m)
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) {
        if (i == j) continue;
        const double via = closure[i * n + m] + closure[m * n + j];
        if (via > closure[i * n + j]) closure[i * n + j] = via;
      }
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (i != j && closure[i * n + j] > -INFINITY) {
        b.AddUnary(states[i].symbol, states[i].sub, states[j].symbol, states[j].sub,
                   std::exp(closure[i * n + j]));
      }

  std::vector<int32_t> final_ids;
  BerkeleyModel model;
  model.grammar = b.Finish(&final_ids);
  for (int w = 0; w < o.vocabulary; ++w) {
    std::vector<int32_t> chosen = tags;
    std::shuffle(chosen.begin(), chosen.end(), rng);
    chosen.resize(std::min<size_t>(chosen.size(), std::max(1, o.tags_per_word)));
    for (int32_t t : chosen) {
      LexiconRow row{final_ids[t], "w" + std::to_string(w), {}};
      for (int s = 0; s < k; ++s) row.probs.push_back(prob(rng));
      model.lexicon.push_back(std::move(row));
    }
    model.known_words.push_back("w" + std::to_string(w));
  }
  return model;
}

std::vector<std::vector<std::string>> MakeRandomSentences(const BerkeleyModel& model, int count,
                                                          int min_length, int max_length,
                                                          uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> length(min_length, max_length);
  std::uniform_int_distribution<size_t> word(0, model.known_words.size() - 1);
  std::vector<std::vector<std::string>> sentences(count);
  for (auto& s : sentences) {
    s.resize(length(rng));
    for (auto& w : s) w = model.known_words[word(rng)];
  }
  return sentences;
}

void AddLengthEdgeCases(int longest, std::vector<std::vector<std::string>>* sentences) {
  sentences->push_back({"w1"});
  sentences->push_back({"w2", "w3"});
  sentences->push_back(std::vector<std::string>(longest, "w0"));
}

}  // namespace cky
