#include "grammar_io/berkeley_gr.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <tuple>

#include "common/input_file.h"
#include "grammar_io/berkeley_model.h"

namespace cky {
namespace {

std::string SharedGrammars() {
  const char* env = std::getenv("CKY_SHARED_DIR");
  return std::string(env ? env : "../shared") + "/grammars/";
}

const char* kGrammars[] = {"berkeley-small/baseline", "berkeley-small/small_sm2",
                           "berkeley-gum/gum_sm3", "berkeley-gum/gum_sm5"};

using RuleKey = std::tuple<std::string, std::string, std::string>;

std::map<RuleKey, double> BinaryRules(const Grammar& g) {
  std::map<RuleKey, double> rules;
  for (int64_t i = 0; i < g.num_binary_rules(); ++i) {
    rules[{g.StateName(g.binary_parent[i]), g.StateName(g.binary_left[i]),
           g.StateName(g.binary_right[i])}] = g.binary_log_prob[i];
  }
  return rules;
}

std::map<RuleKey, double> UnaryRules(const Grammar& g) {
  std::map<RuleKey, double> rules;
  for (int64_t i = 0; i < g.num_unary_rules(); ++i) {
    rules[{g.StateName(g.unary_parent[i]), g.StateName(g.unary_child[i]), ""}] =
        g.unary_log_prob[i];
  }
  return rules;
}

// Every rule of the .gr equals its text export's, symbols and substates too.
void ExpectSameGrammar(const Grammar& ours, const Grammar& text, const std::string& what) {
  ASSERT_EQ(ours.num_symbols(), text.num_symbols()) << what;
  for (int32_t s = 0; s < text.num_symbols(); ++s) {
    int32_t mine = ours.FindSymbol(text.symbol_names[s]);
    ASSERT_GE(mine, 0) << what << ": " << text.symbol_names[s];
    EXPECT_EQ(ours.symbol_num_substates[mine], text.symbol_num_substates[s])
        << text.symbol_names[s];
    EXPECT_EQ(ours.symbol_is_phrasal[mine], text.symbol_is_phrasal[s]) << text.symbol_names[s];
    if (!text.symbol_split_trees[s].empty()) {
      EXPECT_EQ(ours.symbol_split_trees[mine], text.symbol_split_trees[s]) << text.symbol_names[s];
    }
  }
  for (auto [rules_ours, rules_text] :
       {std::pair{BinaryRules(ours), BinaryRules(text)}, {UnaryRules(ours), UnaryRules(text)}}) {
    ASSERT_EQ(rules_ours.size(), rules_text.size()) << what;
    size_t differing = 0;
    for (const auto& [key, log_prob] : rules_text) {
      auto it = rules_ours.find(key);
      ASSERT_NE(it, rules_ours.end()) << what << ": missing " << std::get<0>(key) << " -> "
                                      << std::get<1>(key) << " " << std::get<2>(key);
      // The text export prints Java's shortest round-tripping decimal: the same double.
      if (it->second != log_prob) ++differing;
    }
    EXPECT_EQ(differing, 0u) << what;
  }
}

TEST(BerkeleyGr, EveryGrammarEqualsItsTextExport) {
  int loaded = 0;
  for (const char* name : kGrammars) {
    const std::string prefix = SharedGrammars() + name;
    if (!std::filesystem::exists(prefix + ".gr")) continue;
    SCOPED_TRACE(name);
    LoadOptions options;
    options.use_cache = false;
    auto ours = ReadBerkeleyGrFile(prefix + ".gr", options);
    ASSERT_TRUE(ours.ok()) << ours.status().message();
    auto text = ReadWriteGrammarTextFiles(prefix, options);
    ASSERT_TRUE(text.ok()) << text.status().message();
    ExpectSameGrammar(ours->grammar, text->grammar, name);
    ASSERT_TRUE(ours->lexicon_counts.has_value());
    // .words is wordCounter's key set.
    std::vector<std::string> a = ours->known_words, b = text->known_words;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b);
    EXPECT_EQ(ours->lexicon_counts->unknown_level, 5);
    // Through the generic loader too.
    EXPECT_EQ(DetectGrammarFormat(prefix + ".gr"), GrammarFormat::kJavaSerialized);
    auto loaded_model = LoadBerkeleyModel(prefix + ".gr", options);
    ASSERT_TRUE(loaded_model.ok()) << loaded_model.status().message();
    EXPECT_EQ(loaded_model->grammar.num_binary_rules(), ours->grammar.num_binary_rules());
    std::printf(
        "[%s.gr] %d symbols, %d states, %lld binary and %lld unary rules, %zu seen and "
        "%zu unseen lexicon entries: equal to the text export\n",
        name, ours->grammar.num_symbols(), ours->grammar.num_states(),
        static_cast<long long>(ours->grammar.num_binary_rules()),
        static_cast<long long>(ours->grammar.num_unary_rules()), ours->lexicon_counts->seen.size(),
        ours->lexicon_counts->unseen.size());
    ++loaded;
  }
  if (loaded == 0) GTEST_SKIP() << "no .gr files under " << SharedGrammars();
}

TEST(BerkeleyGr, FilterAndCacheRoundTrip) {
  const std::string prefix = SharedGrammars() + "berkeley-small/small_sm2";
  if (!std::filesystem::exists(prefix + ".gr")) GTEST_SKIP() << prefix << ".gr not found";
  LoadOptions options;
  options.min_binary_prob = 1e-10;
  auto filtered = ReadBerkeleyGrFile(prefix + ".gr", options);
  ASSERT_TRUE(filtered.ok()) << filtered.status().message();
  for (double lp : filtered->grammar.binary_log_prob) EXPECT_GE(lp, std::log(1e-10));
  auto text = ReadWriteGrammarTextFiles(prefix, options);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(filtered->grammar.num_binary_rules(), text->grammar.num_binary_rules());

  const std::string cache = testing::TempDir() + "/small_sm2_gr.ckybin";
  ASSERT_TRUE(WriteModelCache(*filtered, cache).ok());
  auto reread = ReadModelCache(cache);
  ASSERT_TRUE(reread.ok()) << reread.status().message();
  ExpectSameGrammar(reread->grammar, filtered->grammar, "cache");
  ASSERT_TRUE(reread->lexicon_counts.has_value());
  EXPECT_EQ(reread->lexicon_counts->seen.size(), filtered->lexicon_counts->seen.size());
  EXPECT_EQ(reread->lexicon_counts->word_counts, filtered->lexicon_counts->word_counts);
  EXPECT_EQ(reread->lexicon_counts->smoothing_weights, filtered->lexicon_counts->smoothing_weights);
  EXPECT_EQ(reread->binarization, filtered->binarization);
  std::filesystem::remove(cache);

  // The text form written from the .gr reads back as the same grammar.
  const std::string out = testing::TempDir() + "/small_sm2_text";
  ASSERT_TRUE(WriteGrammarTextFiles(*filtered, out).ok());
  auto back = ReadWriteGrammarTextFiles(out, {.min_binary_prob = 0, .use_cache = false});
  ASSERT_TRUE(back.ok()) << back.status().message();
  ExpectSameGrammar(back->grammar, filtered->grammar, "text round trip");
}

TEST(BerkeleyGr, DamagedFilesGiveErrors) {
  const std::string path = SharedGrammars() + "berkeley-small/baseline.gr";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  auto data = ReadWholeFile(path);
  ASSERT_TRUE(data.ok());
  auto good = BerkeleyModelFromSerialization(*data, "baseline");
  ASSERT_TRUE(good.ok()) << good.status().message();
  // Every truncation fails with a message naming the source.
  for (size_t length = 0; length < data->size(); length += 7) {
    auto cut = BerkeleyModelFromSerialization(data->substr(0, length), "baseline");
    ASSERT_FALSE(cut.ok()) << length;
    EXPECT_EQ(cut.status().message().rfind("baseline", 0), 0u) << cut.status().message();
  }
  // Random corruptions: an error or a model, never a crash.
  std::mt19937_64 random(99);
  int errors = 0;
  const int runs = 3000;
  for (int run = 0; run < runs; ++run) {
    std::string corrupt = *data;
    for (int i = 0; i < 3; ++i) corrupt[4 + random() % (corrupt.size() - 4)] ^= 1 << (random() % 8);
    auto model = BerkeleyModelFromSerialization(corrupt, "corrupt");
    if (!model.ok()) {
      ++errors;
      EXPECT_FALSE(model.status().message().empty());
    }
  }
  std::printf("[baseline.gr] %d of %d corrupted copies rejected, the rest still map to a model\n",
              errors, runs);
  // A gzip file that is not a Java stream, and random bytes.
  const std::string junk = testing::TempDir() + "/junk.gr";
  {
    std::ofstream out(junk, std::ios::binary);
    out << "not a grammar at all";
  }
  auto not_gr = LoadBerkeleyModel(junk);
  ASSERT_FALSE(not_gr.ok());
  EXPECT_NE(not_gr.status().message().find("neither"), std::string::npos)
      << not_gr.status().message();
  auto wrong_class =
      BerkeleyModelFromSerialization(std::string("\xAC\xED\x00\x05\x74\x00\x02hi", 9), "string.gr");
  ASSERT_FALSE(wrong_class.ok());
  EXPECT_NE(wrong_class.status().message().find("ParserData"), std::string::npos);
  std::filesystem::remove(junk);
}

}  // namespace
}  // namespace cky
