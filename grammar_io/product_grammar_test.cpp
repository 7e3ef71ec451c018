#include "grammar_io/product_grammar.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace cky {
namespace {

namespace fs = std::filesystem;

// A tiny model read from a text export; `prob` varies the rules so that members differ.
BerkeleyModel TinyModel(const std::string& prob) {
  std::istringstream grammar("S_0 -> NP_0 VP_0 " + prob +
                             "\n"
                             "ROOT_0 -> S_0 1.0\n");
  std::istringstream lexicon("NP dogs [1.0]\nVP bark [1.0]\n");
  auto model = ReadWriteGrammarTextFromStreams(grammar, lexicon, nullptr, nullptr, "tiny");
  EXPECT_TRUE(model.ok()) << model.status().message();
  return std::move(*model);
}

std::vector<ProductGrammarMember> TwoMembers() {
  std::vector<ProductGrammarMember> members;
  members.push_back({"seed 1", TinyModel("1.0")});
  members.push_back({"seed 2", TinyModel("0.5")});
  return members;
}

class ProductGrammarTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cky_product_grammar_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(ProductGrammarTest, RoundTripsEveryMemberByteForByte) {
  const auto members = TwoMembers();
  const std::string path = Path("p.ckyprod");
  ASSERT_TRUE(WriteProductGrammar(members, path).ok());
  EXPECT_TRUE(IsProductGrammarFile(path));
  auto read = ReadProductGrammar(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ((*read)[k].label, members[k].label);
    EXPECT_EQ(ModelCacheBytes((*read)[k].model), ModelCacheBytes(members[k].model));
  }
  EXPECT_NE(ModelCacheBytes((*read)[0].model), ModelCacheBytes((*read)[1].model));
  // Deterministic: written again, the same bytes.
  EXPECT_EQ(ProductGrammarBytes(*read), ProductGrammarBytes(members));
}

TEST_F(ProductGrammarTest, RefusesDamagedFilesNamingTheMember) {
  const std::string good = ProductGrammarBytes(TwoMembers());
  auto error = [](const std::string& bytes) {
    auto read = ReadProductGrammarFromMemory(bytes, "p.ckyprod");
    return read.ok() ? std::string("accepted") : read.status().message();
  };
  // A flipped byte near the end lies in the second member's payload: its checksum fails.
  std::string flipped = good;
  flipped[flipped.size() - 20] ^= 0x40;
  EXPECT_EQ(error(flipped), "p.ckyprod: member 2 (seed 2): checksum mismatch (damaged file)");
  EXPECT_NE(error(good.substr(0, good.size() - 1)).find("member 2: truncated"), std::string::npos);
  EXPECT_NE(error(good + "x").find("data after the last member"), std::string::npos);
  EXPECT_NE(error("CKYMODEL").find("not a cky product grammar"), std::string::npos);
  std::string version = good;
  version[8] = 9;
  EXPECT_NE(error(version).find("format version 9"), std::string::npos);
  std::string none = good.substr(0, 12) + std::string(4, '\0');
  EXPECT_NE(error(none).find("1 to 64 grammars"), std::string::npos);
  EXPECT_EQ(error(good), "accepted");
}

TEST_F(ProductGrammarTest, RefusesAnEmptyProductAndTellsFilesApart) {
  EXPECT_FALSE(WriteProductGrammar({}, Path("empty.ckyprod")).ok());
  const std::string single = Path("single.ckybin");
  ASSERT_TRUE(WriteModelCache(TinyModel("1.0"), single).ok());
  EXPECT_FALSE(IsProductGrammarFile(single));
  EXPECT_FALSE(IsProductGrammarFile(Path("missing")));
  auto read = ReadProductGrammar(Path("missing"));
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace cky
