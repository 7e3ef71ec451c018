// Projections of a split grammar to the coarser levels of its split hierarchy, the grammars the
// coarse-to-fine parser (parser/coarse_to_fine.h) pre-parses with (Petrov & Klein 2007; the
// Berkeley parser's Grammar.projectGrammar and computeConditionalProbabilities).
//
// Level k keeps, for each symbol, the substates that existed after k split cycles: the nodes at
// depth k of the symbol's split tree (Grammar::symbol_split_trees, from the .gr file or the text
// export's .splits), each coarse substate standing for the fine substates below it. Level 0 has one
// substate per symbol (X-bar); the level NumProjectionLevels(fine) is the fine grammar itself.
// Symbols without a split tree (random grammars, our PCFGs) are projected as if each split had
// halved their substates in order: level k groups them into min(n, 2^k) consecutive blocks.
//
// A projected rule's probability is the fine rules' probabilities weighted by how likely each fine
// parent substate is given its coarse substate:
//   p(A_x -> B_y C_z) = sum_{a in x} P(a | x) sum_{b in y, c in z} p(A_a -> B_b C_c)
// with P(a | x) proportional to a's expected count in a derivation from ROOT (Berkeley's
// computeExpectedCounts: fixed-point iteration of "ROOT occurs once, every rule use adds its
// children", here over the binary rules and the closed sum unaries). Unaries (closed Viterbi and
// closed sum) are projected the same way, and lexical scores per word:
//   P(word | T_x) = sum_{t in x} P(t | x) P(word | T_t)     (ProjectLexicalScores)
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "grammar_io/grammar.h"
#include "parser/viterbi_reference.h"

namespace cky {

struct ProjectedGrammar {
  int32_t level = 0;
  // Same symbols (ids, names, phrasal flags) as the fine grammar, fewer substates per symbol.
  Grammar grammar;
  std::vector<int32_t> from_fine;   // fine state -> this level's state
  std::vector<double> fine_weight;  // fine state -> P(fine substate | this level's substate)
};

// Levels below the fine grammar: ceil(log2(most substates of any symbol)); 0 for an unsplit one.
int32_t NumProjectionLevels(const Grammar& fine);

// Fine state -> its state at `level` (the numbering ProjectGrammar gives: a symbol's substates
// consecutive, in symbol order), into *from_fine; *symbol_states (when given) gets each symbol's
// substates there. Returns the level's state count; fails for a malformed split tree.
StatusOr<int32_t> ProjectStates(const Grammar& fine, int32_t level, std::vector<int32_t>* from_fine,
                                std::vector<int32_t>* symbol_states = nullptr);

// The fine grammar projected to `level` (0 .. NumProjectionLevels(fine)); rules whose projected
// probability is below `min_rule_prob` are left out (the Berkeley parser drops those under 1e-4 at
// its pre-parse levels). `expected_counts`: ExpectedStateCounts(fine), for a caller that projects
// several levels and computes it once (50 passes over the rules); null: computed here. Fails for a
// malformed split tree.
StatusOr<ProjectedGrammar> ProjectGrammar(const Grammar& fine, int32_t level,
                                          double min_rule_prob = 0,
                                          const std::vector<double>* expected_counts = nullptr);

// Each fine state's expected number of occurrences in a derivation from ROOT_0 (ROOT_0 is 1).
std::vector<double> ExpectedStateCounts(const Grammar& fine);

// A sentence's lexical scores at a projected level (log P(word | coarse state)).
void ProjectLexicalScores(const ProjectedGrammar& projection, const LexicalScores& fine,
                          LexicalScores* coarse);

}  // namespace cky
