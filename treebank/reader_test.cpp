#include "treebank/reader.h"

#include <gtest/gtest.h>

#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "treebank/transforms.h"
#include "treebank/writer.h"

namespace cky {
namespace {

std::vector<TreeItem> ReadItems(const std::string& text, TreeLayout layout = TreeLayout::kAuto) {
  std::istringstream in(text);
  TreeReader reader(in, "test.mrg", {layout});
  std::vector<TreeItem> items;
  TreeItem item;
  while (reader.Next(&item)) items.push_back(item);
  return items;
}

TEST(TreeReaderTest, ReadsOneTreePerLine) {
  auto items = ReadItems("(TOP (S (NP (NNP Mary)) (VP (VBD left))))\n(ROOT (NP (NN dog)))\n");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_TRUE(items[0].status.ok());
  EXPECT_EQ(ToBracketString(items[0].tree), "(TOP (S (NP (NNP Mary)) (VP (VBD left))))");
  EXPECT_EQ(items[1].tree.label, "ROOT");
  EXPECT_EQ(items[1].line, 2);
}

TEST(TreeReaderTest, DropsAByteOrderMark) {
  for (TreeLayout layout : {TreeLayout::kAuto, TreeLayout::kOnePerLine, TreeLayout::kMultiLine}) {
    auto items = ReadItems("\xef\xbb\xbf(S (NN dog))\n(S (NN cat))\n", layout);
    ASSERT_EQ(items.size(), 2u);
    ASSERT_TRUE(items[0].status.ok()) << items[0].status.message();
    EXPECT_EQ(ToBracketString(items[0].tree), "(S (NN dog))");
  }
}

TEST(TreeReaderTest, BlankLineIsAnEmptyItemInOnePerLineLayout) {
  auto items = ReadItems("(S (X a))\n\n(S (X b))\n(())\n");
  ASSERT_EQ(items.size(), 4u);
  EXPECT_FALSE(items[0].empty);
  EXPECT_TRUE(items[1].empty);
  EXPECT_EQ(items[1].line, 2);
  EXPECT_FALSE(items[2].empty);
  EXPECT_TRUE(items[3].empty);  // a parser's "no parse"
  EXPECT_TRUE(items[3].status.ok());
}

TEST(TreeReaderTest, ReadsRawMrgLayoutWithTracesAndFunctionTags) {
  auto trees = ReadTreebankFile("tests/data/treebank/raw_sample.mrg");
  ASSERT_TRUE(trees.ok()) << trees.status().message();
  ASSERT_EQ(trees->size(), 3u);
  const Tree& first = (*trees)[0];
  EXPECT_EQ(first.label, "");
  ASSERT_EQ(first.children.size(), 1u);
  EXPECT_EQ(first.children[0].label, "S");
  EXPECT_EQ(first.children[0].children[0].label, "NP-SBJ-1");
  EXPECT_EQ(Leaves(first),
            (std::vector<std::string>{"Mary", "was", "seen", "*-1", "at", "the", "station", "."}));
  Tree stripped = first;
  ASSERT_TRUE(StripEmptyElements(&stripped));
  StripFunctionTags(&stripped);
  SetRootLabel(&stripped, "ROOT");
  EXPECT_EQ(ToBracketString(stripped),
            "(ROOT (S (NP (NNP Mary)) (VP (VBD was) (VP (VBN seen) (PP (IN at) (NP (DT the) (NN "
            "station))))) (. .)))");
  Tree third = (*trees)[2];
  ASSERT_TRUE(StripEmptyElements(&third));
  EXPECT_EQ(ToBracketString(third), "( (S (NP-SBJ (DT The) (NN report)) (VP (VBD said)) (. .)))");
}

TEST(TreeReaderTest, SeveralTreesOnALineOnlyWhenAsked) {
  auto items = ReadItems("(A (X a)) (B (Y b))\n", TreeLayout::kOnePerLine);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].status.message(), "test.mrg:1: more than one tree on the line");
  std::istringstream in("(A (X a)) (B (Y b))\n");
  TreeReader reader(in, "test.mrg", {TreeLayout::kOnePerLine, /*several_trees_per_line=*/true});
  TreeItem item;
  ASSERT_TRUE(reader.Next(&item));
  ASSERT_TRUE(item.status.ok());
  EXPECT_EQ(ToBracketString(item.tree), "(A (X a))");
  ASSERT_EQ(item.more_trees.size(), 1u);
  EXPECT_EQ(ToBracketString(item.more_trees[0]), "(B (Y b))");
}

TEST(TreeReaderTest, AutoLayoutPicksMultiLineForIndentedFiles) {
  std::istringstream in("(ROOT\n  (NP (NN a)))\n\n(ROOT\n  (NP (NN b)))\n");
  TreeReader reader(in, "x.ptb");
  TreeItem item;
  ASSERT_TRUE(reader.Next(&item));
  EXPECT_EQ(reader.layout(), TreeLayout::kMultiLine);
  EXPECT_EQ(ToBracketString(item.tree), "(ROOT (NP (NN a)))");
  ASSERT_TRUE(reader.Next(&item));
  EXPECT_EQ(item.line, 4);
  EXPECT_EQ(ToBracketString(item.tree), "(ROOT (NP (NN b)))");
  EXPECT_FALSE(reader.Next(&item));
}

TEST(TreeReaderTest, AutoLayoutKeepsOnePerLineDespiteAnUnbalancedLine) {
  std::istringstream in("(S (X a)\n\n(S (X b))\n");
  TreeReader reader(in, "x.tst");
  TreeItem item;
  ASSERT_TRUE(reader.Next(&item));
  EXPECT_EQ(reader.layout(), TreeLayout::kOnePerLine);
  EXPECT_FALSE(item.status.ok());
  ASSERT_TRUE(reader.Next(&item));
  EXPECT_TRUE(item.empty);
  ASSERT_TRUE(reader.Next(&item));
  EXPECT_EQ(ToBracketString(item.tree), "(S (X b))");
}

TEST(TreeReaderTest, ErrorsNameFileAndLineAndReadingContinues) {
  auto items = ReadItems("(S (X a))\n(S (X b)\n(S (X c)))\n(S ( d))\nstray\n(S (X e))\n",
                         TreeLayout::kOnePerLine);
  ASSERT_EQ(items.size(), 6u);
  EXPECT_TRUE(items[0].status.ok());
  EXPECT_EQ(items[1].status.message(),
            "test.mrg:2: unbalanced brackets: 1 not closed at the end of the line");
  EXPECT_EQ(items[2].status.message(),
            "test.mrg:3: unbalanced brackets: ')' without a matching '('");
  EXPECT_EQ(items[3].status.message(), "test.mrg:4: empty label on a constituent below the root");
  EXPECT_EQ(items[4].status.message(), "test.mrg:5: text outside brackets");
  EXPECT_TRUE(items[5].status.ok());
  EXPECT_EQ(ToBracketString(items[5].tree), "(S (X e))");
}

TEST(TreeReaderTest, MultiLineRecoversAtTheNextTreeStart) {
  auto items = ReadItems("(ROOT\n  (NP (NN a))\n(ROOT\n  (NP (NN b)))\n(ROOT\n  (NP (NN c))",
                         TreeLayout::kMultiLine);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].status.message(),
            "test.mrg:1: unbalanced brackets: 1 still open where the next tree starts (line 3)");
  EXPECT_TRUE(items[1].status.ok());
  EXPECT_EQ(ToBracketString(items[1].tree), "(ROOT (NP (NN b)))");
  EXPECT_EQ(items[2].status.message(),
            "test.mrg:5: unbalanced brackets: 1 still open at the end of the file");
}

TEST(TreeReaderTest, ReadAllStopsOrContinues) {
  const std::string text = "(S (X a))\n(S (X b)\n(S (X c))\n";
  auto strict = ReadTreesFromString(text);
  EXPECT_FALSE(strict.ok());
  std::vector<Status> errors;
  auto lenient = ReadTreesFromString(text, {.continue_on_error = true}, &errors);
  ASSERT_TRUE(lenient.ok());
  EXPECT_EQ(lenient->size(), 2u);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message().find(":2:"), std::string::npos);
}

TEST(TreeReaderTest, ReadsGzipAndUtf8) {
  std::string path = (std::filesystem::temp_directory_path() / "cky_reader_test.mrg.gz").string();
  {
    std::ofstream file(path, std::ios::binary);
    boost::iostreams::filtering_ostream out;
    out.push(boost::iostreams::gzip_compressor());
    out.push(file);
    out << "(ROOT (NP (NNP Zoë) (NNP Ångström)))\n";
  }
  auto trees = ReadTreebankFile(path);
  ASSERT_TRUE(trees.ok()) << trees.status().message();
  ASSERT_EQ(trees->size(), 1u);
  EXPECT_EQ(Leaves((*trees)[0]), (std::vector<std::string>{"Zoë", "Ångström"}));
}

TEST(TreeWriterTest, IndentedLayoutReadsBack) {
  auto trees = ReadTreebankFile("tests/data/treebank/raw_sample.mrg");
  ASSERT_TRUE(trees.ok());
  std::ostringstream out;
  for (const Tree& tree : *trees) WriteTree(out, tree, WriteLayout::kIndented);
  EXPECT_NE(out.str().find("\n    (NP-SBJ-1 (NNP Mary))\n"), std::string::npos) << out.str();
  auto again = ReadTreesFromString(out.str());
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, *trees);
}

// Every GUM tree survives read -> write (both layouts) -> read. Needs ../shared.
TEST(TreeWriterTest, GumRoundTrips) {
  const std::filesystem::path dir = "../shared/treebanks/gum/const";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "../shared is absent";
  int files = 0;
  size_t trees_seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".ptb") continue;
    auto trees = ReadTreebankFile(entry.path().string());
    ASSERT_TRUE(trees.ok()) << trees.status().message();
    ASSERT_FALSE(trees->empty()) << entry.path();
    for (WriteLayout layout : {WriteLayout::kOneLine, WriteLayout::kIndented}) {
      std::ostringstream out;
      for (const Tree& tree : *trees) WriteTree(out, tree, layout);
      auto again = ReadTreesFromString(out.str());
      ASSERT_TRUE(again.ok()) << again.status().message();
      ASSERT_EQ(*again, *trees) << entry.path();
    }
    ++files;
    trees_seen += trees->size();
  }
  EXPECT_GT(files, 100);
  EXPECT_GT(trees_seen, 10000u);
}

}  // namespace
}  // namespace cky
