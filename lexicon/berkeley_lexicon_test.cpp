#include "lexicon/berkeley_lexicon.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>

#include "common/input_file.h"
#include "grammar_io/berkeley_gr.h"
#include "grammar_io/berkeley_model.h"
#include "lexicon/lexicon.h"

namespace cky {
namespace {

std::string SharedGrammars() {
  const char* env = std::getenv("CKY_SHARED_DIR");
  return std::string(env ? env : "../shared") + "/grammars/";
}

// The scores computed from a .gr's counts equal, row for row, the .lexicon its text export holds
// (which SophisticatedLexicon.toString printed from the same counts).
TEST(BerkeleyLexicon, ScoresEqualTheTextExport) {
  int compared = 0;
  for (const char* name : {"berkeley-small/baseline", "berkeley-small/small_sm2",
                           "berkeley-gum/gum_sm3", "berkeley-gum/gum_sm5"}) {
    const std::string prefix = SharedGrammars() + name;
    if (!std::filesystem::exists(prefix + ".gr")) continue;
    SCOPED_TRACE(name);
    auto model = ReadBerkeleyGrFile(prefix + ".gr");
    ASSERT_TRUE(model.ok()) << model.status().message();
    auto text = ReadWriteGrammarTextFiles(prefix, {.min_binary_prob = 0, .use_cache = false});
    ASSERT_TRUE(text.ok()) << text.status().message();
    auto rows = BerkeleyExportRows(*model);
    ASSERT_TRUE(rows.ok()) << rows.status().message();
    std::map<std::pair<std::string, std::string>, const std::vector<double>*> expected;
    for (const LexiconRow& row : text->lexicon) {
      expected[{text->grammar.symbol_names[row.symbol], row.word}] = &row.probs;
    }
    ASSERT_EQ(rows->size(), expected.size());
    double worst = 0;
    size_t values = 0;
    for (const LexiconRow& row : *rows) {
      auto it = expected.find({model->grammar.symbol_names[row.symbol], row.word});
      ASSERT_NE(it, expected.end()) << row.word;
      ASSERT_EQ(it->second->size(), row.probs.size());
      for (size_t k = 0; k < row.probs.size(); ++k) {
        const double want = (*it->second)[k], got = row.probs[k];
        const double relative = want == got ? 0 : std::abs(got - want) / std::abs(want);
        worst = std::max(worst, relative);

        ++values;
      }
    }
    EXPECT_LE(worst, 1e-15) << "largest relative difference";
    std::printf("[%s] %zu lexicon rows, %zu values: largest relative difference %.3g\n", name,
                rows->size(), values, worst);
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << "no .gr files under " << SharedGrammars();
}

// Rare and unknown words get scores under tags the text export has no row for (FORMATS.md §3).
TEST(BerkeleyLexicon, ScoresPairsTheTextExportLacks) {
  const std::string prefix = SharedGrammars() + "berkeley-small/small_sm2";
  if (!std::filesystem::exists(prefix + ".gr")) GTEST_SKIP();
  auto model = ReadBerkeleyGrFile(prefix + ".gr");
  ASSERT_TRUE(model.ok());
  auto exact = Lexicon::Build(*model);
  ASSERT_TRUE(exact.ok()) << exact.status().message();
  EXPECT_TRUE(exact->exact());
  auto text = ReadWriteGrammarTextFiles(prefix, {.min_binary_prob = 0, .use_cache = false});
  ASSERT_TRUE(text.ok());
  auto from_text = Lexicon::Build(*text);
  ASSERT_TRUE(from_text.ok());
  EXPECT_FALSE(from_text->exact());
  std::vector<double> a(model->grammar.num_states()), b(text->grammar.num_states());
  for (const char* word : {"--", "-LRB-", "Zyzzyvas", "reorganizing"}) {
    const int ours = exact->Score(word, 3, a);
    const int theirs = from_text->Score(word, 3, b);
    EXPECT_GT(ours, theirs) << word;
  }
  // Where the text export has a score, it is the same.
  for (const char* word : {"the", "of", "company"}) {
    exact->Score(word, 1, a);
    from_text->Score(word, 1, b);
    for (int32_t s = 0; s < text->grammar.num_states(); ++s) {
      if (!std::isfinite(b[s])) continue;
      const int32_t mine = model->grammar.FindState(text->grammar.StateName(s));
      ASSERT_GE(mine, 0);
      EXPECT_NEAR(a[mine], b[s], 1e-9 * std::abs(b[s]) + 1e-12)
          << word << " " << text->grammar.StateName(s);
    }
  }
}

// Corrupted .gr files that still map to a model give a lexicon that scores without crashing, or an
// error (run under the sanitizers to check memory safety).
TEST(BerkeleyLexicon, CorruptedFilesNeverCrash) {
  const std::string path = SharedGrammars() + "berkeley-small/baseline.gr";
  if (!std::filesystem::exists(path)) GTEST_SKIP();
  auto data = ReadWholeFile(path);
  ASSERT_TRUE(data.ok());
  std::mt19937_64 random(2024);
  int models = 0, lexicons = 0;
  for (int run = 0; run < 3000; ++run) {
    std::string corrupt = *data;
    for (int i = 0; i < 2; ++i) corrupt[4 + random() % (corrupt.size() - 4)] ^= 1 << (random() % 8);
    auto model = BerkeleyModelFromSerialization(corrupt, "corrupt");
    if (!model.ok()) continue;
    ++models;
    auto lexicon = Lexicon::Build(*model);
    if (!lexicon.ok()) continue;
    ++lexicons;
    std::vector<double> scores(model->grammar.num_states());
    for (const char* word : {"b", "d", "UNK", "Xyz", ""}) lexicon->Score(word, 0, scores);
  }
  std::printf("[baseline.gr corrupted] %d of 3000 still mapped to a model, %d built a lexicon\n",
              models, lexicons);
  EXPECT_GT(models, 0);
}

// `cky convert` round trips: the cache keeps the counts (same exact scores for any word), and the
// text form written from a .gr holds the export's rows.
TEST(BerkeleyLexicon, ConvertRoundTrips) {
  const std::string prefix = SharedGrammars() + "berkeley-gum/gum_sm3";
  if (!std::filesystem::exists(prefix + ".gr")) GTEST_SKIP();
  auto model = ReadBerkeleyGrFile(prefix + ".gr", {.min_binary_prob = 1e-10, .use_cache = false});
  ASSERT_TRUE(model.ok());
  const std::string cache = testing::TempDir() + "/gum_sm3_lexicon.ckybin";
  ASSERT_TRUE(WriteModelCache(*model, cache).ok());
  auto reread = ReadModelCache(cache);
  ASSERT_TRUE(reread.ok()) << reread.status().message();
  std::filesystem::remove(cache);
  auto a = Lexicon::Build(*model);
  auto b = Lexicon::Build(*reread);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(b->exact());
  std::vector<double> sa(model->grammar.num_states()), sb(reread->grammar.num_states());
  int words = 0;
  for (const auto& [word, count] : model->lexicon_counts->word_counts) {
    if (++words > 2000) break;
    for (int position : {0, 3}) {
      a->Score(word, position, sa);
      b->Score(word, position, sb);
      ASSERT_EQ(sa, sb) << word;
    }
  }
  for (const char* unknown : {"Zyzzyva", "re-tooled", "1990s", "--", "glorping"}) {
    a->Score(unknown, 2, sa);
    b->Score(unknown, 2, sb);
    ASSERT_EQ(sa, sb) << unknown;
  }

  auto rows = BerkeleyExportRows(*model);
  ASSERT_TRUE(rows.ok());
  BerkeleyModel text_model = *model;
  text_model.lexicon = *rows;
  const std::string out = testing::TempDir() + "/gum_sm3_converted";
  ASSERT_TRUE(WriteGrammarTextFiles(text_model, out).ok());
  auto back = ReadWriteGrammarTextFiles(out, {.min_binary_prob = 0, .use_cache = false});
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->lexicon.size(), rows->size());
  for (size_t i = 0; i < rows->size(); ++i) {
    EXPECT_EQ(back->grammar.symbol_names[back->lexicon[i].symbol],
              model->grammar.symbol_names[(*rows)[i].symbol]);
    EXPECT_EQ(back->lexicon[i].word, (*rows)[i].word);
    EXPECT_EQ(back->lexicon[i].probs, (*rows)[i].probs);  // %.17g round-trips doubles exactly
  }
  for (const char* ext : {".grammar", ".lexicon", ".splits", ".words"}) {
    std::filesystem::remove(out + ext);
  }
}

}  // namespace
}  // namespace cky
