#include "lexicon/lexicon.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cky {
namespace {

// Tags: N (2 substates), V (1), IN (1).
BerkeleyModel TinyModel() {
  GrammarBuilder builder;
  int32_t s = builder.AddSymbol("S");
  int32_t n = builder.AddSymbol("N");
  int32_t v = builder.AddSymbol("V");
  int32_t in = builder.AddSymbol("IN");
  builder.SetNumSubstates(n, 2);
  builder.AddBinary(s, 0, n, 0, v, 0, 1.0);
  std::vector<int32_t> ids;
  BerkeleyModel model;
  model.grammar = builder.Finish(&ids);
  model.lexicon = {
      {ids[n], "dogs", {0.5, 0.25}}, {ids[v], "bark", {0.75}}, {ids[n], "UNK-LC-s", {0.1, 0.2}},
      {ids[v], "UNK-LC", {0.05}},    {ids[in], "UNK", {0.01}}, {ids[n], "UNK-CAPS", {0.0, 0.3}},
  };
  model.known_words = {"dogs", "bark", "UNK-LC-s", "UNK-LC", "UNK", "UNK-CAPS"};
  return model;
}

double At(const std::vector<double>& scores, const Grammar& g, const char* state) {
  return scores[g.FindState(state)];
}

TEST(LexiconTest, KnownWordUsesOnlyItsRowsUnlessWidened) {
  BerkeleyModel model = TinyModel();
  auto lexicon = Lexicon::Build(model);
  ASSERT_TRUE(lexicon.ok()) << lexicon.status().message();
  const Grammar& g = model.grammar;
  std::vector<double> scores(g.num_states());
  int finite = lexicon->Score("dogs", 1, scores);
  EXPECT_DOUBLE_EQ(At(scores, g, "N_0"), std::log(0.5));
  EXPECT_DOUBLE_EQ(At(scores, g, "N_1"), std::log(0.25));
  EXPECT_TRUE(std::isinf(At(scores, g, "V_0")));
  EXPECT_EQ(finite, 2);
  // Widened, (V, bark)'s row stays and (N, bark) comes from the signature UNK-LC: no N row there.
  lexicon->Score("bark", 1, scores, /*widen_known_words=*/true);
  EXPECT_DOUBLE_EQ(At(scores, g, "V_0"), std::log(0.75));
  EXPECT_TRUE(std::isinf(At(scores, g, "N_0")));
  // Widened, "dogs" keeps its N rows (a row wins over the signature) and gains nothing for V.
  EXPECT_EQ(lexicon->Score("dogs", 1, scores, true), 2);
  EXPECT_DOUBLE_EQ(At(scores, g, "N_1"), std::log(0.25));
}

TEST(LexiconTest, UnknownWordBacksOffTagByTag) {
  BerkeleyModel model = TinyModel();
  LexiconOptions options;
  options.backoff_unknown_words = true;
  auto lexicon = Lexicon::Build(model, options);
  ASSERT_TRUE(lexicon.ok());
  const Grammar& g = model.grammar;
  std::vector<double> scores(g.num_states());
  EXPECT_EQ(lexicon->Signature("cats", 1), "UNK-LC-s");
  lexicon->Score("cats", 1, scores);
  EXPECT_DOUBLE_EQ(At(scores, g, "N_0"), std::log(0.1));    // UNK-LC-s
  EXPECT_DOUBLE_EQ(At(scores, g, "V_0"), std::log(0.05));   // UNK-LC
  EXPECT_DOUBLE_EQ(At(scores, g, "IN_0"), std::log(0.01));  // UNK
  // A zero probability stays impossible.
  lexicon->Score("Paris", 2, scores);
  EXPECT_TRUE(std::isinf(At(scores, g, "N_0")));
  EXPECT_DOUBLE_EQ(At(scores, g, "N_1"), std::log(0.3));
}

TEST(LexiconTest, ByDefaultOnlyTheSignatureRowsCount) {
  BerkeleyModel model = TinyModel();
  auto lexicon = Lexicon::Build(model);
  ASSERT_TRUE(lexicon.ok());
  const Grammar& g = model.grammar;
  std::vector<double> scores(g.num_states());
  EXPECT_EQ(lexicon->Score("cats", 1, scores), 2);  // UNK-LC-s row only
  EXPECT_TRUE(std::isinf(At(scores, g, "V_0")));
  EXPECT_EQ(lexicon->Score("xyz", 1, scores), 1);  // UNK-LC: the V row
  EXPECT_DOUBLE_EQ(At(scores, g, "V_0"), std::log(0.05));
  EXPECT_EQ(lexicon->Score("12", 1, scores), 0);  // UNK-NUM has no row and nothing backs off
}

TEST(LexiconTest, RejectsRowsThatDoNotMatchTheGrammar) {
  BerkeleyModel model = TinyModel();
  model.lexicon.push_back({model.grammar.FindSymbol("N"), "bad", {0.5}});  // N has 2 substates
  EXPECT_FALSE(Lexicon::Build(model).ok());
}

}  // namespace
}  // namespace cky
