// Dense PCFGs in Chomsky normal form (Johnson 2011, "Parsing in parallel on multiple cores and
// GPUs"): m nonterminals, every binary rule A -> B C stored in an m x m x m tensor R[a][b][c] and
// every terminal rule A -> w in a table T[w][a]. Nonterminal 0 is the start symbol; nonterminal a
// is named "A<a>" in trees and exports. Words outside the vocabulary are read as the unknown token.
//
// Files: a text format of our own (described with a worked example in dense_pcfg.cpp, above its
// reader), a binary form of the same content (fast to load), and an export to the Berkeley parser's
// WriteGrammarToTextFile format so that sparse parsers can read the same grammar.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace cky {

// The unknown-word token of generated grammars and of BuildDenseVocabulary.
inline constexpr const char* kDenseUnknownWord = "*UNK*";

struct DensePcfg {
  int num_nonterminals = 0;        // m
  std::vector<std::string> words;  // the vocabulary (terminals), word id -> word
  int unknown_word = 0;            // id of the unknown-word token inside `words`
  std::vector<double> rules;       // R[a][b][c] = P(A_a -> A_b A_c) at (a * m + b) * m + c
  std::vector<double> terminals;   // T[w][a] = P(A_a -> word w) at w * m + a

  int vocabulary_size() const { return static_cast<int>(words.size()); }
  double Rule(int a, int b, int c) const {
    return rules[(static_cast<size_t>(a) * num_nonterminals + b) * num_nonterminals + c];
  }
  double Terminal(int word, int a) const {
    return terminals[static_cast<size_t>(word) * num_nonterminals + a];
  }

  // Rebuilds the word -> id index; call after changing `words` (the loaders and generator do).
  void IndexWords();
  // The id of `word`, or unknown_word when it is not in the vocabulary.
  int WordId(const std::string& word) const;
  std::vector<int> WordIds(const std::vector<std::string>& sentence) const;

  // "A3" for nonterminal 3.
  static std::string NonterminalName(int a) { return "A" + std::to_string(a); }

 private:
  std::unordered_map<std::string, int> word_ids_;
};

// Shapes agree, every probability is finite and in [0, 1], the unknown word is a vocabulary word,
// words are distinct and free of whitespace.
Status ValidateDensePcfg(const DensePcfg& grammar);

// Readers. Errors name the file (and line, for text). LoadDensePcfg picks the binary reader when
// the file starts with the binary magic and the text reader otherwise; all accept gzipped files.
StatusOr<DensePcfg> ReadDensePcfgText(const std::string& path);
StatusOr<DensePcfg> ReadDensePcfgBinary(const std::string& path);
StatusOr<DensePcfg> LoadDensePcfg(const std::string& path);

// Writers. The text writer keeps only positive probabilities (printed with 17 significant digits,
// so a text round trip is exact); the binary writer stores every value.
Status WriteDensePcfgText(const DensePcfg& grammar, const std::string& path);
Status WriteDensePcfgBinary(const DensePcfg& grammar, const std::string& path);

// Writes PREFIX.grammar, PREFIX.lexicon, PREFIX.splits and PREFIX.words as the Berkeley parser's
// WriteGrammarToTextFile would (see ../shared/grammars/FORMATS.md section 1): one substate per
// symbol ("A3_0"), binary rules with p > 0, the unary section "ROOT_0 -> A0_0 1.0" plus an identity
// "X_0 -> X_0 1.0" for every symbol, lexicon rows "A3 word [p]" with p > 0, split trees "A3\t0",
// and every vocabulary word. A sparse Viterbi parser reading it finds the same best trees (with
// ROOT on top). The unknown token is written as an ordinary word: the sparse parser's own
// unknown-word signatures do not apply to it.
Status WriteDensePcfgAsBerkeley(const DensePcfg& grammar, const std::string& prefix);

// A vocabulary from tokenized sentences: the unknown token first, then every word seen at least
// min_count times, in order of first occurrence. Rarer words are left to the unknown token.
std::vector<std::string> BuildDenseVocabulary(
    const std::vector<std::vector<std::string>>& sentences, int min_count);

struct DenseGeneratorOptions {
  int num_nonterminals = 32;
  uint64_t seed = 1;
  // Per parent, binary rules share this probability mass and terminal rules the rest.
  double binary_mass = 0.5;
};

// A random dense grammar like Johnson's 32-nonterminal one: every binary rule and every terminal
// rule gets a positive random weight, normalised per parent (binary rules of a parent sum to
// binary_mass, its terminal rules to 1 - binary_mass). The same options and vocabulary give the
// same grammar. `vocabulary` gets the unknown token prepended when it lacks one.
DensePcfg GenerateDensePcfg(const DenseGeneratorOptions& options,
                            std::vector<std::string> vocabulary);

}  // namespace cky
