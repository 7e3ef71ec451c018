// Shared by the dense inside tests (CPU variants in parser/, GPU in cuda/): the tolerance every
// float32 variant must meet against the float64 reference, seeded grammars and sentences.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "dense/dense_pcfg.h"
#include "treebank/tree.h"

namespace cky::dense_test {

// A float32 variant's sentence log-probability is within this relative distance of the float64
// reference's.
constexpr double kRelativeTolerance = 1e-5;

inline double RelativeError(double value, double reference) {
  if (value == reference) return 0;
  return std::abs(value - reference) / std::max(1.0, std::abs(reference));
}

inline DensePcfg TestGrammar(int m, uint64_t seed, int vocabulary_size) {
  std::vector<std::string> vocabulary;
  for (int w = 0; w < vocabulary_size; ++w) vocabulary.push_back("w" + std::to_string(w));
  return GenerateDensePcfg({.num_nonterminals = m, .seed = seed}, vocabulary);
}

inline std::vector<int> RandomSentence(const DensePcfg& g, int length, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<int> ids(length);
  for (int& id : ids) id = static_cast<int>(random() % g.vocabulary_size());
  return ids;
}

// The log-probability of a dense Viterbi tree ("A3" labels) under the grammar.
inline double TreeLogProb(const DensePcfg& g, const Tree& tree) {
  const int a = std::stoi(tree.label.substr(1));
  if (tree.is_preterminal()) return std::log(g.Terminal(g.WordId(tree.children[0].label), a));
  const int b = std::stoi(tree.children[0].label.substr(1));
  const int c = std::stoi(tree.children[1].label.substr(1));
  return std::log(g.Rule(a, b, c)) + TreeLogProb(g, tree.children[0]) +
         TreeLogProb(g, tree.children[1]);
}

}  // namespace cky::dense_test
