// The dense PCFG's Viterbi (max) chart and the sparse Viterbi parser agree: a dense grammar written
// as a Berkeley text grammar (WriteDensePcfgAsBerkeley) gives the sparse parser the same best
// log-probability on every sentence, and the same tree wherever the best tree is unique (dense
// grammars have exact ties: the same rules in other bracketings score the same).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "dense/dense_inside.h"
#include "dense/dense_pcfg.h"
#include "grammar_io/berkeley_model.h"
#include "lexicon/lexicon.h"
#include "parser/parser.h"
#include "parser/tree_format.h"
#include "parser/cpu_backend.h"

namespace cky {
namespace {

// The dense tree "(A0 (A2 a) (A1 b))" in the sparse parser's output form "( (A0 (A2 a) (A1 b)) )".
std::string DenseForm(const Tree& tree) { return "( " + ToBracketString(tree) + " )"; }

// The dense tree as the sparse parser's annotated tree: "A3" -> "A3-0", under "ROOT-0".
Tree Annotated(const Tree& node) {
  if (node.is_leaf()) return node;
  Tree out(node.label + "-0");
  for (const Tree& child : node.children) out.children.push_back(Annotated(child));
  return out;
}

TEST(DenseSparseTest, SameBestScoresAndTrees) {
  const std::vector<std::string> vocabulary = {"a", "b", "c", "d", "e"};
  const std::string dir =
      (std::filesystem::temp_directory_path() / "cky_dense_sparse_test").string();
  std::filesystem::create_directories(dir);
  int compared = 0, identical = 0;
  for (int m : {2, 3, 5}) {
    DensePcfg dense = GenerateDensePcfg({.num_nonterminals = m, .seed = uint64_t(m)}, vocabulary);
    const std::string prefix = dir + "/dense" + std::to_string(m);
    ASSERT_TRUE(WriteDensePcfgAsBerkeley(dense, prefix).ok());
    LoadOptions load;
    load.use_cache = false;
    auto model = LoadBerkeleyModel(prefix, load);
    ASSERT_TRUE(model.ok()) << model.status().message();
    auto lexicon = Lexicon::Build(*model);
    ASSERT_TRUE(lexicon.ok());
    Parser sparse(model->grammar, *lexicon, MakeReferenceBackend(model->grammar));

    std::mt19937_64 rng(m);
    std::vector<std::vector<std::string>> sentences;
    for (int length : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14}) {
      std::vector<std::string> sentence(length);
      for (auto& w : sentence) w = vocabulary[rng() % vocabulary.size()];
      sentences.push_back(sentence);
    }
    std::vector<ParseOutcome> outcomes = sparse.Parse(sentences);
    for (size_t i = 0; i < sentences.size(); ++i) {
      SCOPED_TRACE("m=" + std::to_string(m) + ", " + std::to_string(sentences[i].size()) +
                   " words");
      const std::vector<int> ids = dense.WordIds(sentences[i]);
      DenseChart<double> chart = DenseInsideReference(dense, ids, DenseSemiring::kMax);
      auto dense_tree = DenseViterbiTree(dense, chart, ids, sentences[i]);
      ASSERT_TRUE(dense_tree.ok()) << dense_tree.status().message();
      ASSERT_EQ(outcomes[i].status, ParseStatus::kOk) << outcomes[i].message;
      const double expected = chart.SentenceLogProb();
      EXPECT_NEAR(outcomes[i].log_score, expected, 1e-9 * std::abs(expected));
      ++compared;
      if (FormatBerkeley(outcomes[i].tree) == DenseForm(*dense_tree)) {
        ++identical;
        continue;
      }
      // A different tree must be an exact tie: the dense tree scores the same under the sparse
      // grammar.
      auto tie =
          ScoreAnnotatedTree(model->grammar, *lexicon, Tree("ROOT-0", {Annotated(*dense_tree)}));
      ASSERT_TRUE(tie.ok()) << tie.status().message();
      EXPECT_NEAR(*tie, outcomes[i].log_score, 1e-9 * std::abs(expected));
    }
  }
  std::printf(
      "[dense vs sparse] %d sentences: equal best scores on all, identical trees on %d "
      "(the others are exact ties)\n",
      compared, identical);
  EXPECT_GT(identical, compared / 2);
}

}  // namespace
}  // namespace cky
