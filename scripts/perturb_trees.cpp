// perturb_trees: makes EVALB test material from gold trees. Writes the gold trees one per line (the
// layout EVALB reads) and a "parser output" with seeded random damage, so that `cky eval` and EVALB
// can be compared on the same pair (scripts/compare_evalb.sh).
//
//   perturb_trees SEED GOLD_OUT TEST_OUT TREEBANK...
//
// Per sentence: rarely an empty line or "(())" (no parse: EVALB skips it); otherwise 0-3 edits
// among relabelled brackets (sometimes with a function tag, or ADVP<->PRT which COLLINS.prm counts
// as equal), deleted, added and moved brackets, changed POS tags (rarely to or from punctuation,
// and quote tags to POS), an inserted trace, and rarely a dropped or changed word (EVALB errors).
// Only std::mt19937_64's raw output is used, so the output is the same on every platform.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "treebank/reader.h"
#include "treebank/transforms.h"
#include "treebank/writer.h"

namespace cky {
namespace {

class Perturber {
 public:
  explicit Perturber(uint64_t seed) : rng_(seed) {}

  // Returns the test line for a gold tree ("" for an empty line).
  std::string Perturb(const Tree& gold) {
    const int r = Uniform(1000);
    if (r < 12) return "";
    if (r < 16) return "(())";
    Tree tree = gold;
    const int edits = Uniform(4);
    for (int i = 0; i < edits; ++i) Edit(&tree);
    if (Uniform(3) == 0) TagQuoteAsPossessive(&tree);
    return ToBracketString(tree);
  }

 private:
  int Uniform(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  template <typename T>
  const T& Pick(const std::vector<T>& items) {
    return items[Uniform(static_cast<int>(items.size()))];
  }

  // Constituents above the preterminals, below the root (with their parent and position).
  struct Site {
    Tree* parent;
    size_t index;
  };
  void CollectPhrasal(Tree* node, std::vector<Site>* sites) {
    for (size_t i = 0; i < node->children.size(); ++i) {
      Tree& child = node->children[i];
      if (child.is_leaf() || child.is_preterminal()) continue;
      sites->push_back({node, i});
      CollectPhrasal(&child, sites);
    }
  }
  void CollectPreterminals(Tree* node, std::vector<Site>* sites) {
    for (size_t i = 0; i < node->children.size(); ++i) {
      Tree& child = node->children[i];
      if (child.is_leaf()) continue;
      if (child.is_preterminal()) {
        sites->push_back({node, i});
      } else {
        CollectPreterminals(&child, sites);
      }
    }
  }
  void CollectInternal(Tree* node, std::vector<Tree*>* nodes) {
    if (node->is_leaf() || node->is_preterminal()) return;
    nodes->push_back(node);
    for (Tree& child : node->children) CollectInternal(&child, nodes);
  }

  void Edit(Tree* tree) {
    const int r = Uniform(1000);
    if (r < 240) {
      Relabel(tree);
    } else if (r < 420) {
      DeleteBracket(tree);
    } else if (r < 600) {
      AddBracket(tree);
    } else if (r < 750) {
      MoveBracket(tree);
    } else if (r < 900) {
      ChangeTag(tree);
    } else if (r < 940) {
      InsertTrace(tree);
    } else if (r < 985) {
      DropWord(tree);
    } else if (r < 990) {
      ChangeWord(tree);
    } else {
      ChangeTagAcrossPunctuation(tree);
    }
  }

  void Relabel(Tree* tree) {
    std::vector<Site> sites;
    CollectPhrasal(tree, &sites);
    if (sites.empty()) return;
    static const std::vector<std::string> kLabels = {
        "NP",   "VP",   "PP",   "S",   "SBAR", "ADJP", "ADVP", "PRT", "NP-SBJ", "PP-LOC",
        "FRAG", "WHNP", "SINV", "UCP", "QP",   "NP=2", "VP-1", "TOP", "PRN"};
    Site site = Pick(sites);
    site.parent->children[site.index].label = Pick(kLabels);
  }

  void DeleteBracket(Tree* tree) {
    std::vector<Site> sites;
    CollectPhrasal(tree, &sites);
    if (sites.empty()) return;
    Site site = Pick(sites);
    Tree removed = std::move(site.parent->children[site.index]);
    auto& siblings = site.parent->children;
    siblings.erase(siblings.begin() + static_cast<long>(site.index));
    siblings.insert(siblings.begin() + static_cast<long>(site.index),
                    std::make_move_iterator(removed.children.begin()),
                    std::make_move_iterator(removed.children.end()));
  }

  void AddBracket(Tree* tree) {
    std::vector<Tree*> nodes;
    CollectInternal(tree, &nodes);
    if (nodes.empty()) return;
    Tree* node = Pick(nodes);
    const int n = static_cast<int>(node->children.size());
    const int begin = Uniform(n);
    const int end = begin + 1 + Uniform(n - begin);
    static const std::vector<std::string> kLabels = {"NP", "VP", "PP", "S", "ADJP", "ADVP", "X"};
    Tree added(Pick(kLabels));
    for (int i = begin; i < end; ++i) added.children.push_back(std::move(node->children[i]));
    node->children.erase(node->children.begin() + begin, node->children.begin() + end);
    node->children.insert(node->children.begin() + begin, std::move(added));
  }

  // Moves the boundary between two adjacent sibling constituents by one child.
  void MoveBracket(Tree* tree) {
    std::vector<Tree*> nodes;
    CollectInternal(tree, &nodes);
    std::vector<std::pair<Tree*, size_t>> pairs;
    for (Tree* node : nodes) {
      for (size_t i = 0; i + 1 < node->children.size(); ++i) {
        const Tree& a = node->children[i];
        const Tree& b = node->children[i + 1];
        if (!a.is_preterminal() && !b.is_preterminal() && a.children.size() >= 2) {
          pairs.emplace_back(node, i);
        }
      }
    }
    if (pairs.empty()) return;
    auto [node, i] = Pick(pairs);
    Tree& a = node->children[i];
    Tree& b = node->children[i + 1];
    b.children.insert(b.children.begin(), std::move(a.children.back()));
    a.children.pop_back();
  }

  void ChangeTag(Tree* tree) {
    std::vector<Site> sites;
    CollectPreterminals(tree, &sites);
    if (sites.empty()) return;
    Site site = Pick(sites);
    Tree& pre = site.parent->children[site.index];
    static const std::vector<std::string> kTags = {"NN", "NNS", "NNP", "VB",  "VBD", "VBZ", "JJ",
                                                   "RB", "IN",  "DT",  "PRP", "CC",  "CD",  "RP"};
    if (pre.label == "," || pre.label == "." || pre.label == ":" || pre.label == "``" ||
        pre.label == "''") {
      return;  // keeps punctuation out of word-count errors (see ChangeTagAcrossPunctuation)
    }
    pre.label = Pick(kTags);
  }

  // A quote tagged as a possessive or the reverse: a length mismatch under COLLINS.prm, which
  // EVALB's QUOTE_LABEL fix-up undoes.
  void TagQuoteAsPossessive(Tree* tree) {
    std::vector<Site> sites;
    CollectPreterminals(tree, &sites);
    std::vector<Tree*> quotes;
    for (const Site& site : sites) {
      Tree& pre = site.parent->children[site.index];
      const std::string& word = pre.children[0].label;
      if (word == "\"" || word == "'") quotes.push_back(&pre);
    }
    if (quotes.empty()) return;
    Tree* quote = Pick(quotes);
    quote->label = quote->label == "POS" ? "''" : "POS";
  }

  void ChangeTagAcrossPunctuation(Tree* tree) {
    std::vector<Site> sites;
    CollectPreterminals(tree, &sites);
    if (sites.empty()) return;
    Site site = Pick(sites);
    Tree& pre = site.parent->children[site.index];
    pre.label = (pre.label == "," || pre.label == ".") ? "NN" : ",";
  }

  void InsertTrace(Tree* tree) {
    std::vector<Tree*> nodes;
    CollectInternal(tree, &nodes);
    if (nodes.empty()) return;
    Tree* node = Pick(nodes);
    Tree trace("-NONE-", {Tree("*T*-1")});
    if (Uniform(2) == 0) trace = Tree("NP", {std::move(trace)});  // a bracket left empty
    const int at = Uniform(static_cast<int>(node->children.size()) + 1);
    node->children.insert(node->children.begin() + at, std::move(trace));
  }

  void DropWord(Tree* tree) {
    std::vector<Site> sites;
    CollectPreterminals(tree, &sites);
    if (sites.size() < 2) return;
    Site site = Pick(sites);
    site.parent->children.erase(site.parent->children.begin() + static_cast<long>(site.index));
    // Constituents left empty would print as "(X)"; remove them as a parser never prints them.
    RemoveEmpty(tree);
  }

  void ChangeWord(Tree* tree) {
    std::vector<Site> sites;
    CollectPreterminals(tree, &sites);
    if (sites.empty()) return;
    Site site = Pick(sites);
    site.parent->children[site.index].children[0].label = "xyzzy";
  }

  // True when `node` should go. Words sit only under preterminals here, so a non-preterminal
  // without children is a constituent whose words were all dropped.
  static bool RemoveEmpty(Tree* node) {
    if (node->is_preterminal()) return false;
    std::vector<Tree> kept;
    for (Tree& child : node->children) {
      if (!RemoveEmpty(&child)) kept.push_back(std::move(child));
    }
    node->children = std::move(kept);
    return node->children.empty();
  }

  std::mt19937_64 rng_;
};

}  // namespace
}  // namespace cky

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: perturb_trees SEED GOLD_OUT TEST_OUT TREEBANK...\n");
    return 2;
  }
  cky::Perturber perturber(std::stoull(argv[1]));
  std::ofstream gold_out(argv[2]);
  std::ofstream test_out(argv[3]);
  for (int i = 4; i < argc; ++i) {
    auto trees = cky::ReadTreebankFile(argv[i]);
    if (!trees.ok()) {
      std::fprintf(stderr, "perturb_trees: %s\n", trees.status().message().c_str());
      return 1;
    }
    for (const cky::Tree& tree : *trees) {
      gold_out << cky::ToBracketString(tree) << '\n';
      test_out << perturber.Perturb(tree) << '\n';
    }
  }
  return gold_out && test_out ? 0 : 1;
}
