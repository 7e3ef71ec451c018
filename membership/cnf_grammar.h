// Boolean context-free grammars in Chomsky normal form, for membership testing (`cky recognize`).
//
// A CnfGrammar answers "does the grammar derive this string?", nothing about probabilities. It
// comes from our own plain-text format (ParseCnfGrammar, the format is described in
// cnf_grammar.cpp), from the boolean projection of a Berkeley latent-variable grammar
// (ProjectBerkeleyModel), or from the seeded random generator used by the papers' experiments
// (RandomCnfGrammar).
//
// Besides binary rules A -> B C and terminal rules A -> 'a' it may hold chain rules A -> B (the
// Berkeley grammars have them); they are kept as their transitive closure and applied once per CKY
// cell, after the binary rules: cell |= {A | A ->+ C, C in cell}.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "grammar_io/berkeley_model.h"

namespace cky {

struct CnfBinaryRule {
  int32_t parent, left, right;
  auto operator<=>(const CnfBinaryRule&) const = default;
};

struct CnfUnaryRule {
  int32_t parent, child;  // parent ->+ child
  auto operator<=>(const CnfUnaryRule&) const = default;
};

struct CnfGrammar {
  // Terminal 0 stands for every word the grammar does not list; its parents are the nonterminals an
  // unknown word may take (none for our text format, the UNK tags for a Berkeley projection).
  static constexpr int32_t kUnknownTerminal = 0;

  std::vector<std::string> nonterminal_names;
  std::vector<std::string> terminal_names;  // terminal_names[0] == "<unk>"
  int32_t start = 0;
  std::vector<CnfBinaryRule> binary_rules;  // sorted by (parent, left, right), no duplicates
  std::vector<CnfUnaryRule> unary_closure;  // transitive, no identities, sorted, no duplicates
  // terminal id -> the nonterminals A with a rule A -> terminal, sorted.
  std::vector<std::vector<int32_t>> terminal_parents;

  int32_t num_nonterminals() const { return static_cast<int32_t>(nonterminal_names.size()); }
  int32_t num_terminals() const { return static_cast<int32_t>(terminal_names.size()); }

  // Id of `name`, or -1.
  int32_t FindNonterminal(std::string_view name) const;
  // Id of terminal `word`; kUnknownTerminal when the grammar does not list it.
  int32_t TerminalId(std::string_view word) const;
  // Splits a line at whitespace and maps each token with TerminalId.
  std::vector<int32_t> Tokenize(std::string_view line) const;

  // Sorts and deduplicates the rules, closes the chain rules transitively and rebuilds the name
  // indexes. Builders call it once after filling the fields by hand.
  void Finish();

 private:
  std::unordered_map<std::string, int32_t> nonterminal_index_;
  std::unordered_map<std::string, int32_t> terminal_index_;
};

// Parses our text format from `in`; errors name `file_name` and the line.
StatusOr<CnfGrammar> ParseCnfGrammar(std::istream& in, const std::string& file_name);
// Reads a (possibly gzipped) file in our text format; "-" is standard input.
StatusOr<CnfGrammar> ReadCnfGrammarFile(const std::string& path);
// Writes `grammar` in our text format; ParseCnfGrammar reads it back to an equal grammar (chain
// rules are written closed).
void WriteCnfGrammar(const CnfGrammar& grammar, std::ostream& out);

// The boolean projection of a Berkeley grammar: substates merged per base symbol (a symbol rule
// exists when any substate rule with a positive probability does), the closed unary rules as chain
// rules, ROOT as the start symbol, terminals from the lexicon (see LexiconTerminalParents).
CnfGrammar ProjectBerkeleyModel(const BerkeleyModel& model);

// The terminal mapping of ProjectBerkeleyModel: a word may be tagged with symbol T when the
// lexicon gives it a positive score under T, as the parser scores words. A text export's rows: a
// row (T, word) with a positive value; an unknown word takes every tag that has a row for any
// signature beginning with "UNK". A model with the lexicon's counts (a .gr file, or a cache of
// one), which has no rows: the tags its exact scorer (lexicon/berkeley_lexicon.h) scores above 0
// for the word, smoothing included, and for an unknown word for any signature. Fills
// grammar->terminal_names and grammar->terminal_parents (symbol ids as in `model`). Duplicate
// parents are removed by CnfGrammar::Finish.
void LexiconTerminalParents(const BerkeleyModel& model, CnfGrammar* grammar);

// Loads `spec`: our text format when the file `spec` exists and is in no Berkeley format, else a
// Berkeley grammar (.gr, prefix or cache; an empty spec is the built-in grammar, as for every
// command: grammar_io/grammar_argument.h) projected with ProjectBerkeleyModel.
StatusOr<CnfGrammar> LoadRecognitionGrammar(const std::string& spec);

struct RandomCnfGrammarOptions {
  int32_t nonterminals = 32;
  int64_t rules = 256;     // distinct binary rules, drawn uniformly from the N^3 possible ones
  int32_t terminals = 16;  // each terminal gets 1 to 3 random parents
  uint64_t seed = 1;
};
// A random CNF grammar as in Fujita/Nakano et al.; nonterminal 0 ("S") is the start symbol.
// `rules` is capped at N^3.
CnfGrammar RandomCnfGrammar(const RandomCnfGrammarOptions& options);

struct RandomStringOptions {
  int64_t count = 1000;
  int32_t min_length = 1;
  int32_t max_length = 32;
  // Share of strings drawn by sampling a derivation from the start symbol (members whenever the
  // grammar derives some string of the drawn length); the rest are uniform random terminal strings.
  double member_fraction = 0.5;
  uint64_t seed = 1;
};
// Random strings of terminal ids (never kUnknownTerminal) with uniformly drawn lengths.
std::vector<std::vector<int32_t>> RandomStrings(const CnfGrammar& grammar,
                                                const RandomStringOptions& options);

// The words of a string of terminal ids, separated by single spaces.
std::string JoinTerminals(const CnfGrammar& grammar, std::span<const int32_t> string);

}  // namespace cky
