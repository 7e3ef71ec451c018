// Training trees that the split-merge tests share (split_merge_trainer_test.cpp,
// cuda_estep_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/sentence_file.h"
#include "train/split_merge_trainer.h"
#include "treebank/reader.h"

namespace cky {

inline std::vector<Tree> Trees(const std::string& text) {
  auto trees = ReadTreesFromString(text);
  EXPECT_TRUE(trees.ok()) << trees.status().message();
  return trees.ok() ? *trees : std::vector<Tree>{};
}

// Small trees with unary chains, a three-child node (@ intermediates) and repeated words.
inline constexpr char kTinyTrees[] = R"(
(ROOT (S (NP (DT the) (NN dog)) (VP (VBZ barks))))
(ROOT (S (NP (NN dog)) (VP (VBZ sees) (NP (DT the) (JJ big) (NN cat)))))
(ROOT (S (NP (DT a) (NN cat)) (VP (VBZ barks)) (. .)))
)";

// A larger treebank drawn from a seeded random PCFG-like process over a few templates.
inline std::vector<Tree> SyntheticTrees(int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<std::string> nouns = {"dog", "cat", "man", "park", "idea", "tree", "house"};
  const std::vector<std::string> verbs = {"sees", "likes", "barks", "sleeps", "finds"};
  const std::vector<std::string> adjectives = {"big", "red", "old", "green"};
  const std::vector<std::string> dets = {"the", "a", "every"};
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  std::function<std::string(int)> np = [&](int depth) -> std::string {
    std::string out = "(NP (DT " + pick(dets) + ")";
    if (rng() % 3 == 0) out += " (JJ " + pick(adjectives) + ")";
    out += " (NN " + pick(nouns) + "))";
    if (depth < 2 && rng() % 4 == 0) {
      out = "(NP " + out + " (PP (IN in) " + np(depth + 1) + "))";
    }
    return out;
  };
  std::string text;
  for (int i = 0; i < count; ++i) {
    std::string vp = rng() % 2 ? "(VP (VBZ " + pick(verbs) + "))"
                               : "(VP (VBZ " + pick(verbs) + ") " + np(0) + ")";
    text += "(ROOT (S " + np(0) + " " + vp + (rng() % 2 ? " (. .)" : "") + "))\n";
  }
  return Trees(text);
}

inline std::unique_ptr<SplitMergeTrainer> MakeTrainer(const std::vector<Tree>& trees,
                                                      SplitMergeOptions options) {
  auto trainer = SplitMergeTrainer::Create(trees, options);
  EXPECT_TRUE(trainer.ok()) << trainer.status().message();
  return trainer.ok() ? std::move(*trainer) : nullptr;
}

// Two cycles of split, 12 EM iterations, merge, 8 EM iterations: the training log-likelihood
// never decreases within the split and the merge phase. Lexical scores mix 1e-4 of
// P(tag | unseen) into P(tag | word) (Berkeley's noSmoothing formula), so EM is monotone only up
// to that perturbation: a relative 1e-6.
inline void ExpectLogLikelihoodNeverDecreasesWithinACycle(SplitMergeTrainer* trainer) {
  for (int cycle = 0; cycle < 2; ++cycle) {
    trainer->Split();
    double previous = -INFINITY;
    for (int it = 0; it < 12; ++it) {
      const double ll = trainer->EmIteration();
      EXPECT_GE(ll, previous - 1e-6 * std::abs(previous)) << "cycle " << cycle << " it " << it;
      previous = ll;
    }
    trainer->Merge();
    previous = -INFINITY;
    for (int it = 0; it < 8; ++it) {
      const double ll = trainer->EmIteration();
      EXPECT_GE(ll, previous - 1e-6 * std::abs(previous)) << "merge, cycle " << cycle;
      previous = ll;
    }
  }
}

// The first `max_trees` trees of the GUM training documents that scripts/train-default-grammar
// uses (genres academic, bio, court, interview, news, voyage; documents in sorted order), from
// SharedDataDir()/treebanks/gum; empty when it is absent.
inline std::vector<Tree> GumTrainTrees(size_t max_trees) {
  const std::filesystem::path gum = std::filesystem::path(SharedDataDir()) / "treebanks" / "gum";
  std::ifstream splits(gum / "splits.md");
  if (!splits) return {};
  std::vector<std::string> documents;
  std::string line, split;
  while (std::getline(splits, line)) {
    if (line.rfind("## ", 0) == 0) split = line.substr(3, line.find(' ', 3) - 3);
    if (split != "train" || line.rfind("  * ", 0) != 0) continue;
    const std::string doc = line.substr(4, line.find(' ', 4) - 4);
    for (const char* genre : {"academic", "bio", "court", "interview", "news", "voyage"}) {
      if (doc.rfind(std::string("GUM_") + genre + "_", 0) == 0) documents.push_back(doc);
    }
  }
  std::sort(documents.begin(), documents.end());
  std::vector<Tree> trees;
  for (const std::string& doc : documents) {
    auto file = ReadTreebankFile((gum / "const" / (doc + ".ptb")).string());
    if (!file.ok()) continue;
    for (Tree& tree : *file) {
      if (trees.size() == max_trees) return trees;
      trees.push_back(std::move(tree));
    }
  }
  return trees;
}

}  // namespace cky
