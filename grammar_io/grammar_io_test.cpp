#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "grammar_io/berkeley_model.h"

namespace cky {
namespace {

namespace fs = std::filesystem;

class GrammarIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cky_grammar_io_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::string Prefix() const { return (dir_ / "g").string(); }
  fs::path dir_;
};

constexpr char kGrammar[] =
    "S_0 -> NP_0 VP_1 0.5\n"
    "S_0 -> NP_1 VP_0 0.25\n"
    "VP_1 -> V_0 NP_0 1.0\n"
    "ROOT_0 -> ROOT_0 1.0\n"
    "ROOT_0 -> S_0 1.0\n"
    "NP_0 -> NP_0 1.0\n"
    "NP_1 -> N_1 0.75\n";

TEST_F(GrammarIoTest, ReadsWriteGrammarTextExport) {
  Write("g.grammar", kGrammar);
  Write("g.lexicon",
        "N dogs [0.5, 0.25]\n"
        "V bark [1.0]\n"
        "NP UNK-LC [0.0, 1.0E-87]\n");
  Write("g.splits", "NP\t(0 0 1)\nN\t(0 (0 0) (1 1))\nV\t0\n");
  Write("g.words", "dogs\nbark\nUNK-LC\n");
  LoadOptions options;
  options.use_cache = false;
  auto model = ReadWriteGrammarTextFiles(Prefix(), options);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Grammar& g = model->grammar;
  EXPECT_EQ(g.symbol_names[0], "ROOT");
  ASSERT_GE(g.FindSymbol("NP"), 0);
  EXPECT_EQ(g.symbol_num_substates[g.FindSymbol("NP")], 2);
  EXPECT_EQ(g.symbol_num_substates[g.FindSymbol("N")], 2);
  EXPECT_EQ(g.symbol_num_substates[g.FindSymbol("VP")], 2);  // largest index seen is 1
  EXPECT_EQ(g.symbol_num_substates[g.FindSymbol("ROOT")], 1);
  EXPECT_EQ(g.num_binary_rules(), 3);
  EXPECT_EQ(g.num_unary_rules(), 2);  // identities are implicit
  // Rules are sorted by parent and indexed by parent.
  int32_t s0 = g.FindState("S_0");
  ASSERT_GE(s0, 0);
  EXPECT_EQ(g.binary_parent_begin[s0 + 1] - g.binary_parent_begin[s0], 2);
  int32_t first = g.binary_parent_begin[s0];
  EXPECT_EQ(g.binary_left[first], g.FindState("NP_0"));
  EXPECT_EQ(g.binary_right[first], g.FindState("VP_1"));
  EXPECT_DOUBLE_EQ(g.binary_log_prob[first], std::log(0.5));
  int32_t root = g.unary_parent_begin[Grammar::kRootState];
  EXPECT_EQ(g.unary_child[root], s0);
  EXPECT_TRUE(g.symbol_is_phrasal[g.FindSymbol("S")]);
  EXPECT_TRUE(g.symbol_is_phrasal[g.FindSymbol("NP")]);  // NP_1 -> N_1
  EXPECT_FALSE(g.symbol_is_phrasal[g.FindSymbol("N")]);
  EXPECT_EQ(g.symbol_split_trees[g.FindSymbol("N")], "(0 (0 0) (1 1))");
  ASSERT_EQ(model->lexicon.size(), 3u);
  EXPECT_EQ(model->lexicon[0].symbol, g.FindSymbol("N"));
  EXPECT_EQ(model->lexicon[0].word, "dogs");
  EXPECT_EQ(model->lexicon[0].probs, (std::vector<double>{0.5, 0.25}));
  EXPECT_EQ(model->known_words.size(), 3u);
}

TEST_F(GrammarIoTest, StreamsReadAsFilesDo) {
  const std::string lexicon = "N dogs [0.5, 0.25]\nV bark [1.0]\nNP UNK-LC [0.0, 1.0E-87]\n";
  const std::string splits = "NP\t(0 0 1)\nN\t(0 (0 0) (1 1))\nV\t0\n";
  const std::string words = "dogs\nbark\nUNK-LC\n";
  Write("g.grammar", kGrammar);
  Write("g.lexicon", lexicon);
  Write("g.splits", splits);
  Write("g.words", words);
  auto from_files = ReadWriteGrammarTextFiles(Prefix(), {.use_cache = false});
  ASSERT_TRUE(from_files.ok()) << from_files.status().message();
  std::istringstream grammar_in(kGrammar), lexicon_in(lexicon), splits_in(splits), words_in(words);
  auto from_streams =
      ReadWriteGrammarTextFromStreams(grammar_in, lexicon_in, &splits_in, &words_in, "mem");
  ASSERT_TRUE(from_streams.ok()) << from_streams.status().message();
  const Grammar& a = from_files->grammar;
  const Grammar& b = from_streams->grammar;
  EXPECT_EQ(a.symbol_names, b.symbol_names);
  EXPECT_EQ(a.symbol_num_substates, b.symbol_num_substates);
  EXPECT_EQ(a.binary_parent, b.binary_parent);
  EXPECT_EQ(a.binary_log_prob, b.binary_log_prob);
  EXPECT_EQ(a.unary_child, b.unary_child);
  EXPECT_EQ(a.unary_log_prob, b.unary_log_prob);
  EXPECT_EQ(from_files->known_words, from_streams->known_words);
  ASSERT_EQ(from_files->lexicon.size(), from_streams->lexicon.size());
  EXPECT_EQ(from_files->lexicon[2].probs, from_streams->lexicon[2].probs);

  // Errors name the stream and line; splits and words are optional.
  std::istringstream bad_grammar("S_0 -> NP_0 VP_1 2.5\n"), lexicon_again(lexicon);
  auto bad = ReadWriteGrammarTextFromStreams(bad_grammar, lexicon_again, nullptr, nullptr, "mem");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("mem.grammar:1"), std::string::npos)
      << bad.status().message();

  // A substate index past kMaxSubstatesPerSymbol is an error, not gigabytes of states (a fuzz
  // finding: "NP_99999999" made the builder lay out 10^8 states).
  std::istringstream huge("S_0 -> NP_99999999 VP_1 0.5\n"), lexicon_third(lexicon);
  auto too_many = ReadWriteGrammarTextFromStreams(huge, lexicon_third, nullptr, nullptr, "mem");
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("mem.grammar:1: bad state name"), std::string::npos)
      << too_many.status().message();
}

TEST_F(GrammarIoTest, ReadsDumpGrammarExport) {
  Write("g.binary", "S_0 NP_0 VP_1 0.5\nVP_1 V_0 NP_0 1.0\n");
  Write("g.unary", "ROOT_0 ROOT_0 1.0\nROOT_0 S_0 1.0\n");
  Write("g.lexicon", "V bark [1.0]\nNP dogs [0.5, 0.5, 0.5]\n");
  Write("g.numstates", "ROOT\t1\nS\t1\nNP\t3\nVP\t2\nV\t1\n");
  // A projected grammar keeps the original's hierarchy, with more leaves than substates.
  Write("g.hierarchy", "NP\t(0 (0 0 1) (1 2 3) (2 4))\n");
  LoadOptions options;
  options.use_cache = false;
  auto model = ReadDumpGrammarFiles(Prefix(), options);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Grammar& g = model->grammar;
  EXPECT_EQ(g.num_binary_rules(), 2);
  EXPECT_EQ(g.num_unary_rules(), 1);
  EXPECT_EQ(g.symbol_num_substates[g.FindSymbol("NP")], 3);
  EXPECT_EQ(g.symbol_split_trees[g.FindSymbol("NP")], "(0 (0 0 1) (1 2 3) (2 4))");
  EXPECT_EQ(g.num_states(), 1 + 1 + 3 + 2 + 1);
  EXPECT_EQ(DetectGrammarFormat(Prefix()), GrammarFormat::kDumpGrammar);
}

TEST_F(GrammarIoTest, MalformedLinesNameFileAndLine) {
  Write("g.grammar", "S_0 -> NP_0 VP_0 0.5\nS_0 -> NP_0 VP_0 banana\n");
  Write("g.lexicon", "N dogs [1.0]\n");
  auto model = ReadWriteGrammarTextFiles(Prefix());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("g.grammar:2:"), std::string::npos)
      << model.status().message();

  Write("g.grammar", "S_0 -> NP VP_0 0.5\n");
  model = ReadWriteGrammarTextFiles(Prefix());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("g.grammar:1: bad state name 'NP'"), std::string::npos)
      << model.status().message();

  Write("g.grammar", "S_0 -> NP_0 VP_0 0.5\nNP_0 -> N_0 1.0\n");
  Write("g.lexicon", "N dogs [1.0]\nN cats 0.5\n");
  model = ReadWriteGrammarTextFiles(Prefix());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("g.lexicon:2:"), std::string::npos)
      << model.status().message();
}

TEST_F(GrammarIoTest, MissingFilesAreReported) {
  auto model = LoadBerkeleyModel(Prefix());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("no grammar"), std::string::npos);
}

// Each of these loaded before (issue 39): an empty grammar parsed every sentence as (()), a
// lexicon row of an unknown tag was dropped, a substate beyond the .splits was taken as a new one.
TEST_F(GrammarIoTest, AnEmptyGrammarIsAnError) {
  Write("g.grammar", "");
  Write("g.lexicon", "N dogs [1.0]\n");
  auto model = ReadWriteGrammarTextFiles(Prefix());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("g.grammar: no rules"), std::string::npos)
      << model.status().message();
}

TEST_F(GrammarIoTest, ALexiconRowOfAnUnknownTagIsAnError) {
  Write("g.grammar", kGrammar);
  Write("g.lexicon", "N dogs [0.5, 0.25]\nVBF barks [1.0]\n");
  auto model = ReadWriteGrammarTextFiles(Prefix());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("g.lexicon:2: tag 'VBF' occurs in no rule of"),
            std::string::npos)
      << model.status().message();
}

TEST_F(GrammarIoTest, SubstatesBeyondTheSplitsAreErrors) {
  Write("g.grammar", std::string(kGrammar) + "S_0 -> NP_0 VP_99 0.25\n");
  Write("g.lexicon", "N dogs [0.5, 0.25]\n");
  Write("g.splits", "S\t0\nNP\t(0 0 1)\nVP\t(0 0 1)\nN\t(0 0 1)\nV\t0\n");
  auto model = ReadWriteGrammarTextFiles(Prefix());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find(
                "g.grammar:8: substate 99 of VP, which has 2 substates in " + Prefix() + ".splits"),
            std::string::npos)
      << model.status().message();
  // A lexicon row with more probabilities than its tag's substates, and one with fewer.
  Write("g.grammar", kGrammar);
  Write("g.lexicon", "N dogs [0.5, 0.25]\nN cats [0.5, 0.25, 0.25]\n");
  model = ReadWriteGrammarTextFiles(Prefix());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("g.lexicon:2: 3 probabilities: substate 2 of N"),
            std::string::npos)
      << model.status().message();
  fs::remove(dir_ / "g.splits");
  Write("g.lexicon", "N dogs [0.5, 0.25]\nN cats [0.5]\n");
  model = ReadWriteGrammarTextFiles(Prefix());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("g.lexicon:2: 1 probabilities for N, which has 2"),
            std::string::npos)
      << model.status().message();
}

TEST_F(GrammarIoTest, MinBinaryProbDropsRules) {
  Write("g.grammar", "S_0 -> A_0 B_0 1e-11\nS_0 -> A_0 A_0 0.5\n");
  Write("g.lexicon", "A a [1.0]\nB b [1.0]\n");
  LoadOptions options;
  options.min_binary_prob = 1e-10;
  options.use_cache = false;
  auto model = ReadWriteGrammarTextFiles(Prefix(), options);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->grammar.num_binary_rules(), 1);
  EXPECT_GE(model->grammar.FindState("B_0"), 0);  // the state still exists
}

TEST_F(GrammarIoTest, CacheRoundTripsAndRejectsDamage) {
  Write("g.grammar", kGrammar);
  Write("g.lexicon", "N dogs [0.5, 0.25]\nV bark [1.0]\n");
  auto model = ReadWriteGrammarTextFiles(Prefix());
  ASSERT_TRUE(model.ok());
  std::string cache = (dir_ / "g.ckybin").string();
  ASSERT_TRUE(WriteModelCache(*model, cache).ok());
  EXPECT_EQ(DetectGrammarFormat(cache), GrammarFormat::kCache);
  auto reread = LoadBerkeleyModel(cache);
  ASSERT_TRUE(reread.ok()) << reread.status().message();
  const Grammar& a = model->grammar;
  const Grammar& b = reread->grammar;
  EXPECT_EQ(a.symbol_names, b.symbol_names);
  EXPECT_EQ(a.binary_parent, b.binary_parent);
  EXPECT_EQ(a.binary_log_prob, b.binary_log_prob);
  EXPECT_EQ(a.unary_child, b.unary_child);
  EXPECT_EQ(b.FindState("NP_1"), a.FindState("NP_1"));
  ASSERT_EQ(reread->lexicon.size(), model->lexicon.size());
  EXPECT_EQ(reread->lexicon[0].probs, model->lexicon[0].probs);

  std::string bytes;
  {
    std::ifstream in(cache, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // The same bytes read from memory (as the built-in grammar is) give the same model; damage
  // is reported under the given name.
  auto from_memory = ReadModelCacheFromMemory(bytes, "<memory>");
  ASSERT_TRUE(from_memory.ok()) << from_memory.status().message();
  EXPECT_EQ(from_memory->grammar.binary_log_prob, a.binary_log_prob);
  EXPECT_EQ(from_memory->grammar.unary_child, a.unary_child);
  ASSERT_EQ(from_memory->lexicon.size(), model->lexicon.size());
  EXPECT_EQ(from_memory->lexicon[1].probs, model->lexicon[1].probs);
  auto cut_in_memory = ReadModelCacheFromMemory(std::string_view(bytes).substr(0, 40), "<memory>");
  ASSERT_FALSE(cut_in_memory.ok());
  EXPECT_EQ(cut_in_memory.status().message().rfind("<memory>: ", 0), 0u)
      << cut_in_memory.status().message();
  // Truncations at every length fail cleanly.
  for (size_t cut = 0; cut < bytes.size(); cut += 7) {
    std::ofstream(cache, std::ios::binary | std::ios::trunc).write(bytes.data(), cut);
    EXPECT_FALSE(ReadModelCache(cache).ok()) << "cut at " << cut;
  }
  // A wrong version is named.
  std::string wrong = bytes;
  wrong[8] = 99;
  std::ofstream(cache, std::ios::binary | std::ios::trunc) << wrong;
  auto bad = ReadModelCache(cache);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("version"), std::string::npos);
}

// Every input may be compressed: the built-in grammar is kept as a gzipped cache, and `-g
// FILE.ckybin.gz` was refused (issue 37). Tests run from the source root.
TEST_F(GrammarIoTest, CompressedCacheLoads) {
  const std::string gz = "data/default_grammar/gum.ckybin.gz";
  EXPECT_EQ(DetectGrammarFormat(gz), GrammarFormat::kCache);
  auto model = LoadBerkeleyModel(gz);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->grammar.symbol_names[0], "ROOT");
  EXPECT_TRUE(model->lexicon_counts.has_value());
  // Cut short, it fails with the file's name.
  std::string bytes;
  {
    std::ifstream in(gz, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string cut = (dir_ / "cut.ckybin.gz").string();
  std::ofstream(cut, std::ios::binary).write(bytes.data(), bytes.size() / 2);
  auto bad = LoadBerkeleyModel(cut);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cut.ckybin.gz"), std::string::npos)
      << bad.status().message();
}

TEST_F(GrammarIoTest, LoadUsesCacheOnSecondLoad) {
  Write("g.grammar", kGrammar);
  Write("g.lexicon", "N dogs [0.5, 0.25]\n");
  setenv("XDG_CACHE_HOME", (dir_ / "cache").c_str(), 1);
  auto first = LoadBerkeleyModel(Prefix());
  ASSERT_TRUE(first.ok());
  ASSERT_FALSE(fs::is_empty(dir_ / "cache" / "cky"));
  auto second = LoadBerkeleyModel(Prefix());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->grammar.binary_log_prob, second->grammar.binary_log_prob);
  unsetenv("XDG_CACHE_HOME");
}

// A grammar replaced by another with an older modification time (as `cp -p` leaves it) must not
// load the old grammar's cache: the cache is keyed by content, and its writing is reported.
TEST_F(GrammarIoTest, CacheFollowsContentNotModificationTime) {
  Write("g.grammar", kGrammar);
  Write("g.lexicon", "N dogs [0.5, 0.25]\n");
  setenv("XDG_CACHE_HOME", (dir_ / "cache").c_str(), 1);
  const auto old_time = fs::last_write_time(dir_ / "g.grammar") - std::chrono::hours(1);
  fs::last_write_time(dir_ / "g.grammar", old_time);
  std::vector<std::string> written;
  LoadOptions options;
  options.on_cache_written = [&](const std::string& path) { written.push_back(path); };
  auto first = LoadBerkeleyModel(Prefix(), options);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_EQ(written.size(), 1u);
  EXPECT_TRUE(fs::exists(written[0]));
  EXPECT_EQ(written[0].find((dir_ / "cache" / "cky").string()), 0u) << written[0];
  // Same size, other probability, and an older time than the cache's.
  std::string changed = kGrammar;
  changed.replace(changed.find("0.25"), 4, "0.75");
  Write("g.grammar", changed);
  fs::last_write_time(dir_ / "g.grammar", old_time);
  auto second = LoadBerkeleyModel(Prefix(), options);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_NE(first->grammar.binary_log_prob, second->grammar.binary_log_prob);
  EXPECT_EQ(written.size(), 2u);
  // The same content again is read from the cache: nothing is written.
  auto third = LoadBerkeleyModel(Prefix(), options);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(second->grammar.binary_log_prob, third->grammar.binary_log_prob);
  EXPECT_EQ(written.size(), 2u);
  unsetenv("XDG_CACHE_HOME");
}

// The cache file's bytes.
std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void Overwrite(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A bit flipped anywhere in a cache loaded before, often as a different grammar (18 of 50 trees
// changed in the reviewer's run): the checksum now catches every one.
TEST_F(GrammarIoTest, ABitFlippedAnywhereInACacheIsAnError) {
  Write("g.grammar", kGrammar);
  Write("g.lexicon", "N dogs [0.5, 0.25]\nV bark [1.0]\n");
  auto model = ReadWriteGrammarTextFiles(Prefix());
  ASSERT_TRUE(model.ok());
  const std::string cache = (dir_ / "g.ckybin").string();
  ASSERT_TRUE(WriteModelCache(*model, cache).ok());
  const std::string bytes = Slurp(cache);
  // Past the magic number and the version, every flip is a checksum mismatch.
  for (size_t at = 12; at < bytes.size(); ++at) {
    for (int bit : {0, 5}) {
      std::string damaged = bytes;
      damaged[at] ^= static_cast<char>(1 << bit);
      auto read = ReadModelCacheFromMemory(damaged, "g.ckybin");
      ASSERT_FALSE(read.ok()) << "byte " << at << " bit " << bit;
      EXPECT_NE(read.status().message().find("g.ckybin: damaged grammar cache (checksum"),
                std::string::npos)
          << read.status().message();
    }
  }
}

// The format before the checksum (version 5: the same bytes without it) is refused, naming the
// way out, except where asked for (cky convert rewrites it).
TEST_F(GrammarIoTest, TheFormatWithoutAChecksumIsReadOnlyWhenAskedFor) {
  Write("g.grammar", kGrammar);
  Write("g.lexicon", "N dogs [0.5, 0.25]\n");
  auto model = ReadWriteGrammarTextFiles(Prefix());
  ASSERT_TRUE(model.ok());
  const std::string cache = (dir_ / "g.ckybin").string();
  ASSERT_TRUE(WriteModelCache(*model, cache).ok());
  std::string old = Slurp(cache);
  old.resize(old.size() - 16);
  old[8] = 5;
  Overwrite(cache, old);
  auto refused = LoadBerkeleyModel(cache);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("cky convert"), std::string::npos)
      << refused.status().message();
  LoadOptions options;
  options.unchecked_version_5 = true;
  auto read = LoadBerkeleyModel(cache, options);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->grammar.binary_log_prob, model->grammar.binary_log_prob);
}

class CacheDirectoryTest : public GrammarIoTest {
 protected:
  void SetUp() override {
    GrammarIoTest::SetUp();
    setenv("XDG_CACHE_HOME", (dir_ / "cache").c_str(), 1);
    Write("g.grammar", kGrammar);
    Write("g.lexicon", "N dogs [0.5, 0.25]\n");
    options_.on_cache_written = [&](const std::string& path) { written_.push_back(path); };
    options_.on_cache_warning = [&](const std::string& message) { warnings_.push_back(message); };
  }
  void TearDown() override { unsetenv("XDG_CACHE_HOME"); }
  std::string CacheDir() const { return (dir_ / "cache" / "cky").string(); }
  LoadOptions options_;
  std::vector<std::string> written_, warnings_;
};

TEST_F(CacheDirectoryTest, ADamagedCacheIsRebuiltWithAWarning) {
  auto first = LoadBerkeleyModel(Prefix(), options_);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(written_.size(), 1u);
  std::string bytes = Slurp(written_[0]);
  bytes[bytes.size() / 2] ^= 0x04;
  Overwrite(written_[0], bytes);
  auto second = LoadBerkeleyModel(Prefix(), options_);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->grammar.binary_log_prob, first->grammar.binary_log_prob);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("checksum"), std::string::npos) << warnings_[0];
  EXPECT_EQ(written_.size(), 2u);  // written again
  auto third = LoadBerkeleyModel(Prefix(), options_);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(warnings_.size(), 1u);
  EXPECT_EQ(written_.size(), 2u);  // read from the repaired cache
}

TEST_F(CacheDirectoryTest, TheDirectoryIsPrivateAndOthersFilesAreNotRead) {
  ASSERT_TRUE(LoadBerkeleyModel(Prefix(), options_).ok());
  EXPECT_EQ(fs::status(CacheDir()).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fs::status(written_.at(0)).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  // A cache file others may write to is not read (and is replaced).
  fs::permissions(written_[0], fs::perms::group_write, fs::perm_options::add);
  ASSERT_TRUE(LoadBerkeleyModel(Prefix(), options_).ok());
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("only its owner may write"), std::string::npos) << warnings_[0];
  EXPECT_EQ(written_.size(), 2u);
  // A directory others may write to is not used at all.
  fs::permissions(CacheDir(), fs::perms::others_write, fs::perm_options::add);
  ASSERT_TRUE(LoadBerkeleyModel(Prefix(), options_).ok());
  ASSERT_EQ(warnings_.size(), 2u);
  EXPECT_NE(warnings_[1].find("others may write to it"), std::string::npos) << warnings_[1];
  EXPECT_EQ(written_.size(), 2u);
  // A link in the place of a cache file is not followed.
  fs::permissions(CacheDir(), fs::perms::others_write, fs::perm_options::remove);
  const std::string elsewhere = Write("elsewhere.ckybin", Slurp(written_[0]));
  fs::remove(written_[0]);
  fs::create_symlink(elsewhere, written_[0]);
  ASSERT_TRUE(LoadBerkeleyModel(Prefix(), options_).ok());
  ASSERT_EQ(warnings_.size(), 3u);
  EXPECT_EQ(written_.size(), 3u);
  EXPECT_FALSE(fs::is_symlink(written_[0]));
  if (::geteuid() == 0) {
    // Owned by another user (only root can give a file away).
    ASSERT_EQ(::chown(written_[0].c_str(), 65534, 65534), 0);
    ASSERT_TRUE(LoadBerkeleyModel(Prefix(), options_).ok());
    ASSERT_EQ(warnings_.size(), 4u);
    EXPECT_NE(warnings_[3].find("owned by another user"), std::string::npos) << warnings_[3];
  }
}

// A write that fails (here: over the file-size limit) leaves no temporary file behind; before,
// `name.tmpNNNNN` files stayed in the cache directory and beside `cky convert`'s output.
TEST_F(GrammarIoTest, AFailedCacheWriteLeavesNothingBehind) {
  Write("g.grammar", kGrammar);
  Write("g.lexicon", "N dogs [0.5, 0.25]\n");
  auto model = ReadWriteGrammarTextFiles(Prefix());
  ASSERT_TRUE(model.ok());
  fs::create_directories(dir_ / "out");
  const std::string target = (dir_ / "out" / "g.ckybin").string();
  auto child = [&] {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{100, 100};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const Status written = WriteModelCache(*model, target);
    std::exit(!written.ok() && written.message().find("File too large") != std::string::npos &&
                      fs::is_empty(dir_ / "out")
                  ? 0
                  : 1);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
  const Status unwritable = WriteModelCache(*model, (dir_ / "no" / "such" / "g.ckybin").string());
  ASSERT_FALSE(unwritable.ok());
  EXPECT_NE(unwritable.message().find("No such file or directory"), std::string::npos)
      << unwritable.message();
}

// Found by fuzz/fuzz_model_cache (tests/FUZZING.md): a cache holding an empty array made the
// reader call memcpy with a null destination (undefined behaviour, caught by UBSan in
// scripts/test --sanitize). The damaged file must be rejected with a message naming it.
TEST(GrammarCacheTest, RejectsFuzzFindingWithAnEmptyArray) {
  const std::string path = "tests/data/fuzz/regressions/model_cache_empty_vector.bin";
  auto model = ReadModelCache(path);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find(path), std::string::npos) << model.status().message();
}

}  // namespace
}  // namespace cky
