#include "dense/dense_pcfg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/input_file.h"

namespace cky {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("cky_dense_pcfg_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

DensePcfg SmallGrammar(int m, uint64_t seed) {
  return GenerateDensePcfg({.num_nonterminals = m, .seed = seed},
                           {"the", "dog", "barks", "a", "cat"});
}

TEST(DensePcfgTest, GeneratorIsNormalisedPerParentAndSeeded) {
  DensePcfg g = SmallGrammar(4, 7);
  ASSERT_TRUE(ValidateDensePcfg(g).ok());
  EXPECT_EQ(g.words[g.unknown_word], kDenseUnknownWord);
  EXPECT_EQ(g.vocabulary_size(), 6);
  for (int a = 0; a < 4; ++a) {
    double binary = 0, lexical = 0;
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 4; ++c) {
        EXPECT_GT(g.Rule(a, b, c), 0);
        binary += g.Rule(a, b, c);
      }
    for (int w = 0; w < g.vocabulary_size(); ++w) lexical += g.Terminal(w, a);
    EXPECT_NEAR(binary, 0.5, 1e-12);
    EXPECT_NEAR(lexical, 0.5, 1e-12);
  }
  DensePcfg same = SmallGrammar(4, 7);
  DensePcfg other = SmallGrammar(4, 8);
  EXPECT_EQ(g.rules, same.rules);
  EXPECT_EQ(g.terminals, same.terminals);
  EXPECT_NE(g.rules, other.rules);
}

TEST(DensePcfgTest, PaperSizedGrammarHas32768BinaryRules) {
  DensePcfg g = GenerateDensePcfg({.num_nonterminals = 32, .seed = 1}, {"x"});
  EXPECT_EQ(g.rules.size(), 32768u);
  EXPECT_TRUE(ValidateDensePcfg(g).ok());
}

TEST(DensePcfgTest, WordIdsMapUnknownWords) {
  DensePcfg g = SmallGrammar(2, 1);
  std::vector<int> ids = g.WordIds({"the", "zebra", "cat"});
  EXPECT_EQ(g.words[ids[0]], "the");
  EXPECT_EQ(ids[1], g.unknown_word);
  EXPECT_EQ(g.words[ids[2]], "cat");
}

TEST(DensePcfgTest, VocabularyKeepsFrequentWords) {
  std::vector<std::string> vocabulary =
      BuildDenseVocabulary({{"a", "b", "a"}, {"c", "a", "b"}, {"d"}}, 2);
  EXPECT_EQ(vocabulary, (std::vector<std::string>{kDenseUnknownWord, "a", "b"}));
  EXPECT_EQ(BuildDenseVocabulary({{"a"}}, 1).size(), 2u);
}

TEST(DensePcfgTest, TextAndBinaryRoundTripsAreExact) {
  DensePcfg g = SmallGrammar(5, 3);
  const std::string text = TempPath("g.txt"), binary = TempPath("g.bin");
  ASSERT_TRUE(WriteDensePcfgText(g, text).ok());
  ASSERT_TRUE(WriteDensePcfgBinary(g, binary).ok());
  for (const std::string& path : {text, binary}) {
    StatusOr<DensePcfg> back = LoadDensePcfg(path);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->num_nonterminals, g.num_nonterminals);
    EXPECT_EQ(back->words, g.words);
    EXPECT_EQ(back->unknown_word, g.unknown_word);
    EXPECT_EQ(back->rules, g.rules);
    EXPECT_EQ(back->terminals, g.terminals);
    EXPECT_EQ(back->WordId("dog"), g.WordId("dog"));
  }
  std::remove(text.c_str());
  std::remove(binary.c_str());
}

TEST(DensePcfgTest, ReadsTheDocumentedExample) {
  const std::string path = TempPath("example.txt");
  WriteFile(path,
            "# two nonterminals; A0 is the start symbol\n"
            "dense-pcfg 2\n"
            "unknown *UNK*\n"
            "word the\n"
            "binary 0 0 1 0.25\n"
            "binary 0 1 1 0.25\n"
            "binary 1 1 0 0.5\n"
            "lexical 0 the 0.5\n"
            "lexical 1 dog 0.4\n"
            "lexical 1 *UNK* 0.1\n");
  StatusOr<DensePcfg> g = ReadDensePcfgText(path);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->num_nonterminals, 2);
  EXPECT_EQ(g->words, (std::vector<std::string>{"*UNK*", "the", "dog"}));
  EXPECT_EQ(g->unknown_word, 0);
  EXPECT_DOUBLE_EQ(g->Rule(0, 0, 1), 0.25);
  EXPECT_DOUBLE_EQ(g->Rule(1, 0, 0), 0.0);
  EXPECT_DOUBLE_EQ(g->Terminal(2, 1), 0.4);
  EXPECT_DOUBLE_EQ(g->Terminal(0, 1), 0.1);
  std::remove(path.c_str());
}

TEST(DensePcfgTest, TextErrorsNameFileAndLine) {
  const std::string path = TempPath("bad.txt");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"dense-pcfg 2\nunknown U\nbinary 0 2 1 0.5\n", ":3: nonterminal index"},
      {"dense-pcfg 2\nunknown U\nbinary 0 1 1 0.5\nbinary 0 1 1 0.5\n",
       ":4: binary rule given twice"},
      {"binary 0 0 0 0.1\n", ":1: expected 'dense-pcfg M'"},
      {"dense-pcfg 2\nunknown U\nlexical 0 w 1.5\n", ":3: probability not in [0, 1]"},
      {"dense-pcfg 2\nunknown U\nfoo\n", ":3: unknown statement 'foo'"},
      {"dense-pcfg 2\nunknown U\nlexical 0 w 0.5 extra\n", ":3: unexpected 'extra'"},
      {"dense-pcfg 2\nlexical 0 w 0.5\n", "no 'unknown WORD' line"},
  };
  for (const auto& [text, expected] : cases) {
    WriteFile(path, text);
    StatusOr<DensePcfg> g = ReadDensePcfgText(path);
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_NE(g.status().message().find(path), std::string::npos) << g.status().message();
    EXPECT_NE(g.status().message().find(expected), std::string::npos) << g.status().message();
  }
  std::remove(path.c_str());
}

TEST(DensePcfgTest, TruncatedBinaryIsAnError) {
  DensePcfg g = SmallGrammar(3, 1);
  const std::string path = TempPath("cut.bin");
  ASSERT_TRUE(WriteDensePcfgBinary(g, path).ok());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 8);
  StatusOr<DensePcfg> back = LoadDensePcfg(path);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find(path), std::string::npos);
  std::remove(path.c_str());
}

TEST(DensePcfgTest, BerkeleyExportHasTheWriteGrammarToTextFileShape) {
  DensePcfg g = SmallGrammar(3, 2);
  const std::string prefix = TempPath("berkeley");
  ASSERT_TRUE(WriteDensePcfgAsBerkeley(g, prefix).ok());
  StatusOr<std::string> grammar = ReadWholeFile(prefix + ".grammar");
  StatusOr<std::string> lexicon = ReadWholeFile(prefix + ".lexicon");
  StatusOr<std::string> splits = ReadWholeFile(prefix + ".splits");
  StatusOr<std::string> words = ReadWholeFile(prefix + ".words");
  ASSERT_TRUE(grammar.ok() && lexicon.ok() && splits.ok() && words.ok());
  // 27 binary rules, ROOT identity, ROOT -> A0, 3 identities.
  std::istringstream lines(*grammar);
  std::string line;
  int binary = 0, unary = 0;
  double sum_a1 = 0;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string x; fields >> x;) f.push_back(x);
    ASSERT_TRUE(f.size() == 4 || f.size() == 5) << line;
    EXPECT_EQ(f[1], "->");
    if (f.size() == 5) {
      ++binary;
      if (f[0] == "A1_0") sum_a1 += std::stod(f[4]);
    } else {
      ++unary;
    }
  }
  EXPECT_EQ(binary, 27);
  EXPECT_EQ(unary, 5);
  EXPECT_NEAR(sum_a1, 0.5, 1e-12);
  EXPECT_NE(grammar->find("ROOT_0 -> A0_0 1.0\n"), std::string::npos);
  EXPECT_NE(grammar->find("A2_0 -> A2_0 1.0\n"), std::string::npos);
  EXPECT_NE(lexicon->find("A1 dog ["), std::string::npos);
  EXPECT_EQ(*splits, "A0\t0\nA1\t0\nA2\t0\n");
  EXPECT_EQ(*words, "*UNK*\nthe\ndog\nbarks\na\ncat\n");
  for (const char* suffix : {".grammar", ".lexicon", ".splits", ".words"}) {
    std::remove((prefix + suffix).c_str());
  }
}

}  // namespace
}  // namespace cky
