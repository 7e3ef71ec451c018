// Brute force for the max-rule tests (max_rule_test.cpp, product_test.cpp): every derivation of a
// sentence enumerated one by one, and the rule posteriors they give.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "grammar_io/grammar.h"
#include "parser/viterbi_reference.h"

namespace cky {

// Every derivation, enumerated one by one, under the semantics of parser/inside_outside.h: a cell
// offers each state directly (binary, or lexical on one word) or through one closed sum unary over
// another state's direct form. A derivation is its probability and the base-symbol events it uses
// (the units max-rule scores): "L i T" a tag, "B i k j A B C" a binary, "U i j A C" a unary.
struct Derivation {
  double prob;
  std::vector<std::string> events;
};

class Enumerator {
 public:
  Enumerator(const Grammar& g, const LexicalScores& lex) : g_(g), lex_(lex) {}

  std::vector<Derivation> Direct(int32_t state, int32_t start, int32_t end) const {
    std::vector<Derivation> out;
    const std::string& a = g_.SymbolOfState(state);
    if (end - start == 1) {
      const double s = lex_.word(start)[state];
      if (s > kNegInf) out.push_back({std::exp(s), {"L " + std::to_string(start) + " " + a}});
      return out;
    }
    for (int32_t r = g_.binary_parent_begin[state]; r < g_.binary_parent_begin[state + 1]; ++r) {
      for (int32_t split = start + 1; split < end; ++split) {
        const std::string event = "B " + std::to_string(start) + " " + std::to_string(split) + " " +
                                  std::to_string(end) + " " + a + " " +
                                  g_.SymbolOfState(g_.binary_left[r]) + " " +
                                  g_.SymbolOfState(g_.binary_right[r]);
        for (const Derivation& l : Any(g_.binary_left[r], start, split))
          for (const Derivation& rr : Any(g_.binary_right[r], split, end)) {
            Derivation d{std::exp(g_.binary_log_prob[r]) * l.prob * rr.prob, {event}};
            d.events.insert(d.events.end(), l.events.begin(), l.events.end());
            d.events.insert(d.events.end(), rr.events.begin(), rr.events.end());
            out.push_back(std::move(d));
          }
      }
    }
    return out;
  }
  std::vector<Derivation> Any(int32_t state, int32_t start, int32_t end) const {
    std::vector<Derivation> out = Direct(state, start, end);
    for (int32_t u = g_.sum_unary_parent_begin[state]; u < g_.sum_unary_parent_begin[state + 1];
         ++u) {
      const std::string event = "U " + std::to_string(start) + " " + std::to_string(end) + " " +
                                g_.SymbolOfState(state) + " " +
                                g_.SymbolOfState(g_.sum_unary_child[u]);
      for (Derivation d : Direct(g_.sum_unary_child[u], start, end)) {
        d.prob *= std::exp(g_.sum_unary_log_prob[u]);
        d.events.push_back(event);
        out.push_back(std::move(d));
      }
    }
    return out;
  }

 private:
  const Grammar& g_;
  const LexicalScores& lex_;
};

// The posteriors of the events of ROOT's derivations over the whole sentence (each event's summed
// over every derivation that uses it, divided by their total), and the distinct base-symbol trees
// as sorted event lists. Both empty when the sentence has no derivation.
struct BruteForcePosteriors {
  std::map<std::string, double> posterior;
  std::set<std::vector<std::string>> trees;
};

inline BruteForcePosteriors EnumerateRulePosteriors(const Grammar& g, const LexicalScores& lex) {
  auto derivations = Enumerator(g, lex).Any(Grammar::kRootState, 0, lex.length);
  BruteForcePosteriors out;
  double total = 0;
  for (auto& d : derivations) {
    total += d.prob;
    std::sort(d.events.begin(), d.events.end());
  }
  if (total == 0) return out;
  for (const auto& d : derivations) {
    out.trees.insert(d.events);
    std::set<std::string> distinct(d.events.begin(), d.events.end());
    for (const auto& e : distinct) out.posterior[e] += d.prob / total;
  }
  return out;
}

}  // namespace cky
