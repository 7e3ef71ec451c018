#include "train/pcfg_trainer.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "treebank/reader.h"

namespace cky {
namespace {

std::vector<Tree> Trees(const std::string& text) {
  auto trees = ReadTreesFromString(text);
  EXPECT_TRUE(trees.ok()) << trees.status().message();
  return trees.ok() ? *trees : std::vector<Tree>{};
}

// "A_0 -> B_0 C_0 p" lines as {"A B C" -> p} (or {"A B" -> p} for unaries).
std::map<std::string, double> Rules(const std::string& grammar) {
  std::map<std::string, double> rules;
  std::istringstream in(grammar);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::vector<std::string> tokens;
    std::string token;
    while (fields >> token) tokens.push_back(token);
    std::string key;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      if (tokens[i] == "->") continue;
      EXPECT_EQ(tokens[i].substr(tokens[i].size() - 2), "_0") << line;
      key += (key.empty() ? "" : " ") + tokens[i].substr(0, tokens[i].size() - 2);
    }
    rules[key] = std::stod(tokens.back());
  }
  return rules;
}

// "TAG word [p]" lines as {"TAG word" -> p}.
std::map<std::string, double> LexiconRows(const std::string& lexicon) {
  std::map<std::string, double> rows;
  std::istringstream in(lexicon);
  std::string tag, word, prob;
  while (in >> tag >> word >> prob) {
    EXPECT_EQ(prob.front(), '[');
    EXPECT_EQ(prob.back(), ']');
    rows[tag + " " + word] = std::stod(prob.substr(1, prob.size() - 2));
  }
  return rows;
}

constexpr char kThreeTrees[] =
    "(ROOT (S (NP (DT the) (NN dog)) (VP (VBZ barks))))\n"
    "(ROOT (S (NP (DT the) (JJ big) (NN dog)) (VP (VBZ barks) (ADVP (RB now)))))\n"
    "( (S (NP-SBJ (DT a) (NN cat)) (VP (VBZ sleeps) (NP (-NONE- *T*)))))\n";

TEST(PcfgTrainerTest, RelativeFrequenciesWithoutMarkovAnnotation) {
  PcfgTrainerOptions options;
  options.horizontal_markovization = 0;
  options.vertical_markovization = 1;
  auto text = TrainPcfg(Trees(kThreeTrees), options);
  ASSERT_TRUE(text.ok()) << text.status().message();
  // By hand: NP has 3 rules, 2 of them NP -> DT NN; VP -> VBZ twice (the -NONE- object of the
  // third tree is removed) and VP -> VBZ ADVP once.
  std::map<std::string, double> expected = {{"@NP DT JJ", 1.0},
                                            {"NP @NP NN", 1.0 / 3},
                                            {"NP DT NN", 2.0 / 3},
                                            {"S NP VP", 1.0},
                                            {"VP VBZ ADVP", 1.0 / 3},
                                            // closed unaries and identities
                                            {"ROOT S", 1.0},
                                            {"VP VBZ", 2.0 / 3},
                                            {"ADVP RB", 1.0},
                                            {"ROOT ROOT", 1.0},
                                            {"S S", 1.0},
                                            {"NP NP", 1.0},
                                            {"@NP @NP", 1.0},
                                            {"VP VP", 1.0},
                                            {"ADVP ADVP", 1.0},
                                            {"DT DT", 1.0},
                                            {"NN NN", 1.0},
                                            {"JJ JJ", 1.0},
                                            {"VBZ VBZ", 1.0},
                                            {"RB RB", 1.0}};
  std::map<std::string, double> rules = Rules(text->grammar);
  ASSERT_EQ(rules.size(), expected.size()) << text->grammar;
  for (const auto& [rule, p] : expected) {
    ASSERT_TRUE(rules.count(rule)) << rule;
    EXPECT_NEAR(rules[rule], p, 1e-15) << rule;
  }
  // Binary rules come first, sorted by name, then unaries.
  EXPECT_EQ(text->grammar.substr(0, text->grammar.find('\n')), "@NP_0 -> DT_0 JJ_0 1");
}

TEST(PcfgTrainerTest, LexiconReservesRareWordMassForSignatures) {
  PcfgTrainerOptions options;
  options.smoothed_word_max_count = 0;  // known words keep their relative frequencies
  auto text = TrainPcfg(Trees(kThreeTrees), options);
  ASSERT_TRUE(text.ok()) << text.status().message();
  // Counts: DT {the 2, a 1}, NN {dog 2, cat 1}, VBZ {barks 2, sleeps 1}, JJ {big 1}, RB {now 1}.
  // Rare (seen once) tokens: a/DT, big/JJ, cat/NN, now/RB -> UNK-LC; sleeps/VBZ -> UNK-LC-s.
  // lambda: DT, NN, VBZ 1/3; JJ, RB 1. Signature shares among the 5 rare tokens: LC 4/5, LC-s 1/5.
  // P(sig | T) = lambda_T * (rare(T, sig) + share(sig)) / (rare(T) + 1).
  std::map<std::string, double> expected = {
      {"DT the", 2.0 / 3 * 2 / 3},
      {"DT a", 2.0 / 3 * 1 / 3},
      {"NN dog", 2.0 / 3 * 2 / 3},
      {"NN cat", 2.0 / 3 * 1 / 3},
      {"VBZ barks", 2.0 / 3 * 2 / 3},
      {"VBZ sleeps", 2.0 / 3 * 1 / 3},
      {"DT UNK-LC", 1.0 / 3 * (1 + 0.8) / 2},
      {"DT UNK-LC-s", 1.0 / 3 * 0.2 / 2},
      {"NN UNK-LC", 1.0 / 3 * (1 + 0.8) / 2},
      {"NN UNK-LC-s", 1.0 / 3 * 0.2 / 2},
      {"VBZ UNK-LC", 1.0 / 3 * 0.8 / 2},
      {"VBZ UNK-LC-s", 1.0 / 3 * (1 + 0.2) / 2},
      {"JJ UNK-LC", 1.8 / 2},
      {"JJ UNK-LC-s", 0.2 / 2},
      {"RB UNK-LC", 1.8 / 2},
      {"RB UNK-LC-s", 0.2 / 2},
      // big/JJ and now/RB get no row: their tags' mass is all reserved for unknown words.
  };
  std::map<std::string, double> rows = LexiconRows(text->lexicon);
  ASSERT_EQ(rows.size(), expected.size()) << text->lexicon;
  std::map<std::string, double> sum_by_tag;
  for (const auto& [row, p] : expected) {
    ASSERT_TRUE(rows.count(row)) << row;
    EXPECT_NEAR(rows[row], p, 1e-15) << row;
    sum_by_tag[row.substr(0, row.find(' '))] += rows[row];
  }
  for (const auto& [tag, sum] : sum_by_tag) EXPECT_NEAR(sum, 1.0, 1e-12) << tag;
  EXPECT_EQ(text->words, "UNK-LC\nUNK-LC-s\na\nbarks\nbig\ncat\ndog\nnow\nsleeps\nthe\n");
}

TEST(PcfgTrainerTest, RareKnownWordsTakeTheTagsOfRareWords) {
  PcfgTrainerOptions options;
  options.smoothed_word_max_count = 1;
  options.word_smoothing = 1.0;
  auto text = TrainPcfg(Trees(kThreeTrees), options);
  ASSERT_TRUE(text.ok()) << text.status().message();
  // One rare token each for DT, NN, VBZ, JJ, RB: P(T | unknown) = 1/5 for each.
  // "cat" (seen once, as NN): P(NN | cat) = (1 + 0.2) / 2, P(DT | cat) = 0.2 / 2;
  // P(cat | T) = (1 - lambda_T) * P(T | cat) * 1 / count(T); JJ and RB have lambda 1: no row.
  std::map<std::string, double> rows = LexiconRows(text->lexicon);
  EXPECT_NEAR(rows["NN cat"], 2.0 / 3 * 0.6 / 3, 1e-15);
  EXPECT_NEAR(rows["DT cat"], 2.0 / 3 * 0.1 / 3, 1e-15);
  EXPECT_NEAR(rows["VBZ cat"], 2.0 / 3 * 0.1 / 3, 1e-15);
  EXPECT_NEAR(rows["DT a"], 2.0 / 3 * 0.6 / 3, 1e-15);
  EXPECT_EQ(rows.count("JJ cat"), 0u);
  // Words seen more often keep their relative frequencies.
  EXPECT_NEAR(rows["DT the"], 2.0 / 3 * 2 / 3, 1e-15);
  EXPECT_EQ(rows.count("NN the"), 0u);
  EXPECT_NEAR(rows["DT UNK-LC"], 1.0 / 3 * (1 + 0.8) / 2, 1e-15);
}

TEST(PcfgTrainerTest, LeftLeaningBinarizationWithMarkovization) {
  const char* tree = "(ROOT (NP (DT a) (JJ b) (JJ c) (NN d)))";
  PcfgTrainerOptions options;  // h = 1, v = 3 (NP's only ancestor is ROOT)
  auto h1 = TrainPcfg(Trees(tree), options);
  ASSERT_TRUE(h1.ok());
  std::map<std::string, double> rules = Rules(h1->grammar);
  EXPECT_EQ(rules.count("ROOT NP^ROOT"), 1u);
  EXPECT_EQ(rules.count("NP^ROOT @NP^ROOT->_NN NN"), 1u);
  EXPECT_EQ(rules.count("@NP^ROOT->_NN @NP^ROOT->_JJ JJ"), 1u);
  EXPECT_EQ(rules.count("@NP^ROOT->_JJ DT JJ"), 1u);

  options.horizontal_markovization = 2;
  auto h2 = TrainPcfg(Trees(tree), options);
  ASSERT_TRUE(h2.ok());
  rules = Rules(h2->grammar);
  EXPECT_EQ(rules.count("NP^ROOT @NP^ROOT->_NN NN"), 1u);
  EXPECT_EQ(rules.count("@NP^ROOT->_NN @NP^ROOT->_JJ_NN JJ"), 1u);
  EXPECT_EQ(rules.count("@NP^ROOT->_JJ_NN DT JJ"), 1u);

  // Splits: one substate (a one-leaf split tree) per symbol, none for ROOT.
  EXPECT_EQ(h2->splits.find("\nROOT\t"), std::string::npos);
  EXPECT_NE(h2->splits.find("\nNP^ROOT\t0\n"), std::string::npos);
  EXPECT_NE(h2->splits.find("@NP^ROOT->_JJ_NN\t0\n"), std::string::npos);
}

TEST(PcfgTrainerTest, TagAnnotationSplitsTagsByParent) {
  PcfgTrainerOptions options;
  options.vertical_markovization = 1;
  options.tag_parent_annotation = true;
  auto text =
      TrainPcfg(Trees("(ROOT (S (NP (DT the) (NN dog)) (VP (VBZ barks) (PRN (-LRB- -LRB-) (NN x) "
                      "(-RRB- -RRB-)))))"),
                options);
  ASSERT_TRUE(text.ok());
  std::map<std::string, double> rules = Rules(text->grammar);
  EXPECT_EQ(rules.count("NP DT^NP NN^NP"), 1u);
  EXPECT_EQ(rules.count("VP VBZ^VP PRN"), 1u);
  EXPECT_EQ(rules.count("@PRN->_-RRB- -LRB- NN^PRN"), 1u);  // bracket tags stay whole
  std::map<std::string, double> rows = LexiconRows(text->lexicon);
  EXPECT_EQ(rows.count("DT^NP the"), 0u);  // every word is rare here: the mass goes to UNK rows
  EXPECT_EQ(rows.count("DT^NP UNK-LC"), 1u);
  EXPECT_EQ(rows.count("-LRB- UNK-CAPS-DASH"), 1u) << text->lexicon;
}

TEST(PcfgTrainerTest, UnaryClosureTakesTheBestChain) {
  // X -> Y 0.8, X -> NN 0.1, X -> NN NN 0.1, Y -> NN 1: the chain X -> Y -> NN (0.8) beats the
  // direct X -> NN (0.1).
  std::string trees;
  for (int i = 0; i < 8; ++i) trees += "(ROOT (X (Y (NN a))))\n";
  trees += "(ROOT (X (NN a)))\n(ROOT (X (NN a) (NN a)))\n";
  PcfgTrainerOptions options;
  options.vertical_markovization = 1;
  auto text = TrainPcfg(Trees(trees), options);
  ASSERT_TRUE(text.ok());
  std::map<std::string, double> rules = Rules(text->grammar);
  EXPECT_NEAR(rules["X Y"], 0.8, 1e-15);
  EXPECT_NEAR(rules["X NN"], 0.8, 1e-15);
  EXPECT_NEAR(rules["X NN NN"], 0.1, 1e-15);
  EXPECT_NEAR(rules["ROOT X"], 1.0, 1e-15);
  EXPECT_NEAR(rules["ROOT Y"], 0.8, 1e-15);
  EXPECT_NEAR(rules["ROOT NN"], 0.8, 1e-15);
  EXPECT_NEAR(rules["Y NN"], 1.0, 1e-15);
  EXPECT_EQ(rules.count("NN X"), 0u);
}

TEST(PcfgTrainerTest, OutputIsDeterministicAndRejectsEmptyInput) {
  auto a = TrainPcfg(Trees(kThreeTrees));
  auto b = TrainPcfg(Trees(kThreeTrees));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->grammar, b->grammar);
  EXPECT_EQ(a->lexicon, b->lexicon);
  EXPECT_FALSE(TrainPcfg({}).ok());
  EXPECT_FALSE(TrainPcfg(Trees("( (S (NP (-NONE- *))))")).ok());
  PcfgTrainerOptions bad;
  bad.vertical_markovization = 0;
  EXPECT_FALSE(TrainPcfg(Trees(kThreeTrees), bad).ok());
}
}  // namespace
}  // namespace cky
