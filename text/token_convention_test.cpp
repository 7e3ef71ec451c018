#include "text/token_convention.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "grammar_io/grammar_argument.h"

namespace cky {
namespace {

std::string SharedGrammars() {
  const char* env = std::getenv("CKY_SHARED_DIR");
  return std::string(env ? env : "../shared") + "/grammars/";
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> tokens;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) tokens.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return tokens;
}

std::string Applied(const TokenConvention& convention, const std::string& tokens) {
  std::vector<std::string> t = Split(tokens);
  ApplyTokenConvention(convention, &t);
  std::string out;
  for (const std::string& token : t) out += (out.empty() ? "" : " ") + token;
  return out;
}

// A text-export model knowing `words` (each under one tag, probability 1), for detection.
BerkeleyModel ModelKnowing(const std::vector<std::string>& words) {
  BerkeleyModel model;
  for (const std::string& word : words) model.lexicon.push_back({0, word, {1.0}});
  return model;
}

TEST(TokenConventionTest, PtbAndGumStylesRewriteEachOthersTokens) {
  const TokenConvention ptb = ConventionOfStyle(TokenStyle::kPtb, false);
  const TokenConvention gum = ConventionOfStyle(TokenStyle::kGum, false);
  // NLTK's and `cky tokenize`'s tokens, and GUM's, become the same words.
  EXPECT_EQ(Applied(gum, "`` Hi , '' she said -LSB- twice -RSB- ."),
            "\" Hi , \" she said [ twice ] .");
  EXPECT_EQ(Applied(gum, "\" Hi , \" she said [ twice ] ."), "\" Hi , \" she said [ twice ] .");
  EXPECT_EQ(Applied(ptb, "\" Hi , \" she said [ twice ] ."),
            "`` Hi , '' she said -LSB- twice -RSB- .");
  // Straight quotes alternate: opening, closing, opening...
  EXPECT_EQ(Applied(ptb, "\" a \" b \" c \""), "`` a '' b `` c ''");
  EXPECT_EQ(Applied(ptb, "`` a '' b \" c \""), "`` a '' b `` c ''");
  // Curly quotes by shape; single quotes; round brackets always escaped; curly brackets.
  EXPECT_EQ(Applied(ptb, "\u201C a \u201D \u2018 b \u2019"), "`` a '' ` b '");
  EXPECT_EQ(Applied(gum, "\u201C a \u201D \u2018 b \u2019 ` c '"), "\" a \" ' b ' ' c '");
  EXPECT_EQ(Applied(gum, "( a ) { b }"), "-LRB- a -RRB- -LCB- b -RCB-");
  // Everything else stays, hyphenated words included.
  EXPECT_EQ(Applied(ptb, "well-known 's n't -- ..."), "well-known 's n't -- ...");
}

// Tokens of another tokenizer (`cky tokenize`, NLTK) get the hyphen splits raw text gets.
TEST(TokenConventionTest, HyphenatedTokensAreSplitAsRawTextIs) {
  TokenConvention gum = ConventionOfStyle(TokenStyle::kGum, true);
  gum.split_given_tokens = true;
  auto splitter = Tokenizer::Create(TokenizerOptionsFor(gum));
  ASSERT_TRUE(splitter.ok());
  std::vector<std::string> tokens = Split(
      "The well-known non-white man -LRB- 639-3 -RRB- -- e-mail -LRB-a-RRB- a-RRB- [t-] "
      "Ka-chun");
  ApplyTokenConvention(gum, &tokens, &*splitter);
  std::string joined;
  for (const std::string& t : tokens) joined += (joined.empty() ? "" : " ") + t;
  EXPECT_EQ(joined,
            "The well - known non-white man -LRB- 639-3 -RRB- -- e-mail -LRB-a-RRB- a-RRB- [t-] "
            "Ka - chun");
  // A hyphenated word the grammar knows whole stays whole (GUM keeps some names so).
  TokenConvention knowing = gum;
  knowing.whole_words = {"Ka-chun"};
  tokens = Split("Ka-chun well-known");
  ApplyTokenConvention(knowing, &tokens, &*splitter);
  EXPECT_EQ(tokens, Split("Ka-chun well - known"));
  EXPECT_EQ(splitter->Tokenize("The well-known non-white man"),
            Split("The well - known non-white man"));
  // Without split_hyphens, split_given_tokens or a splitter, they stay.
  tokens = Split("well-known");
  ApplyTokenConvention(ConventionOfStyle(TokenStyle::kGum, false), &tokens, &*splitter);
  EXPECT_EQ(tokens, Split("well-known"));
  ApplyTokenConvention(ConventionOfStyle(TokenStyle::kGum, true), &tokens, &*splitter);
  EXPECT_EQ(tokens, Split("well-known"));
  ApplyTokenConvention(gum, &tokens);
  EXPECT_EQ(tokens, Split("well-known"));
}

// Given tokens keep their number unless --hyphens split asks otherwise: a GUM-trained grammar
// splits raw text's hyphenated words, and a gold-tokenized "Mof-Ávvi" stays one leaf.
TEST(TokenConventionTest, OnlyHyphensSplitSplitsGivenTokens) {
  const BerkeleyModel gum_model = ModelKnowing({"\"", "[", "-", "well", "known", "the"});
  for (const char* hyphens : {"auto", "keep", "split"}) {
    auto c = ResolveTokenConvention("auto", hyphens, gum_model);
    ASSERT_TRUE(c.ok()) << hyphens;
    EXPECT_EQ(c->split_given_tokens, std::string(hyphens) == "split") << hyphens;
    auto splitter = Tokenizer::Create(TokenizerOptionsFor(*c));
    ASSERT_TRUE(splitter.ok());
    std::vector<std::string> tokens = Split("in Mof-Ávvi , well-known");
    ApplyTokenConvention(*c, &tokens, &*splitter);
    EXPECT_EQ(tokens, Split(std::string(hyphens) == "split" ? "in Mof - Ávvi , well - known"
                                                            : "in Mof-Ávvi , well-known"))
        << hyphens;
  }
}

TEST(TokenConventionTest, DetectedFromTheWordsTheGrammarKnows) {
  const TokenConvention wsj = GrammarTokenConvention(ModelKnowing(
      {"``", "''", "'", "-LCB-", "-RCB-", "-", "well-known", "long-term", "the", "cat"}));
  EXPECT_EQ(wsj.quotes, TokenStyle::kPtb);
  EXPECT_FALSE(wsj.backtick);  // ' known, ` not
  EXPECT_TRUE(wsj.escaped_square);
  EXPECT_TRUE(wsj.escaped_curly);
  EXPECT_FALSE(wsj.split_hyphens);  // 2 of 10 known words would be broken apart

  std::vector<std::string> words = {"\"", "'", "[", "]", "-", "non-white", "``"};
  for (int i = 0; i < 200; ++i) words.push_back("w" + std::to_string(i));
  BerkeleyModel gum_model = ModelKnowing(words);
  gum_model.lexicon.push_back({1, "\"", {1.0}});  // " used more than ``
  const TokenConvention gum = GrammarTokenConvention(gum_model);
  EXPECT_EQ(gum.quotes, TokenStyle::kGum);
  EXPECT_FALSE(gum.backtick);
  EXPECT_FALSE(gum.escaped_square);
  EXPECT_TRUE(gum.escaped_curly);  // neither spelling known: the WSJ's
  EXPECT_TRUE(gum.split_hyphens);  // "non-white" stays whole when split

  // Without "-" as a word, splitting would make unknown words: kept whole.
  EXPECT_FALSE(GrammarTokenConvention(ModelKnowing({"the", "cat"})).split_hyphens);
  // Counts (a .gr file's) decide over presence.
  BerkeleyModel counted;
  counted.lexicon_counts.emplace();
  counted.lexicon_counts->word_counts = {{"\"", 3}, {"``", 40}, {"''", 38}, {"UNK-DASH", 5}};
  EXPECT_EQ(GrammarTokenConvention(counted).quotes, TokenStyle::kPtb);
  counted.lexicon_counts->word_counts = {{"\"", 300}, {"``", 40}, {"''", 38}};
  EXPECT_EQ(GrammarTokenConvention(counted).quotes, TokenStyle::kGum);
}

TEST(TokenConventionTest, ExplicitStylesAndHyphensOverrideTheGrammar) {
  const BerkeleyModel gum = ModelKnowing({"\"", "[", "]", "-"});
  auto c = ResolveTokenConvention("auto", "auto", gum);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->quotes, TokenStyle::kGum);
  EXPECT_TRUE(c->split_hyphens);
  c = ResolveTokenConvention("ptb", "keep", gum);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, ConventionOfStyle(TokenStyle::kPtb, false));
  c = ResolveTokenConvention("auto", "split", ModelKnowing({"non-white", "the"}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->whole_words, std::unordered_set<std::string>{"non-white"});
  c = ResolveTokenConvention("gum", "auto", ModelKnowing({"the"}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, ConventionOfStyle(TokenStyle::kGum, false));
  EXPECT_EQ(TokenizerOptionsFor(*c).style, TokenStyle::kGum);
  // given: the tokens as they are (Berkeley's way), but for ( ).
  c = ResolveTokenConvention("given", "split", gum);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->rewrite);
  EXPECT_EQ(Applied(*c, "\" ( [ ` well-known"), "\" -LRB- [ ` well-known");
  EXPECT_FALSE(ResolveTokenConvention("wsj", "auto", gum).ok());
  EXPECT_FALSE(ResolveTokenConvention("auto", "yes", gum).ok());
}

// The defect of issue 37: a GUM-trained .gr was given the WSJ's words (`` tagged NNP, -LSB- LS).
// Every format of each grammar gives the same convention.
TEST(TokenConventionTest, RealGrammarsOfBothTreebanks) {
  const TokenConvention builtin = GrammarTokenConvention(*LoadGrammarArgument(""));
  EXPECT_EQ(builtin, ConventionOfStyle(TokenStyle::kGum, true));
  const std::string dir = SharedGrammars();
  if (!std::filesystem::exists(dir + "berkeley-gum/gum_sm3.gr")) {
    GTEST_SKIP() << "no shared grammars at " << dir;
  }
  for (const char* name : {"berkeley-gum/gum_sm3.gr", "berkeley-gum/gum_sm3"}) {
    auto model = LoadGrammarArgument(dir + name, {.use_cache = false});
    ASSERT_TRUE(model.ok()) << model.status().message();
    EXPECT_EQ(GrammarTokenConvention(*model), ConventionOfStyle(TokenStyle::kGum, true)) << name;
    auto resolved = ResolveTokenConvention("auto", "auto", *model);
    ASSERT_TRUE(resolved.ok());
    EXPECT_EQ(resolved->whole_words.count("Ka-chun"), 1u) << name;
  }
  for (const char* name : {"berkeley-small/small_sm2.gr", "berkeley-small/small_sm2"}) {
    auto model = LoadGrammarArgument(dir + name, {.use_cache = false});
    ASSERT_TRUE(model.ok()) << model.status().message();
    const TokenConvention c = GrammarTokenConvention(*model);
    EXPECT_EQ(c.quotes, TokenStyle::kPtb) << name;
    EXPECT_TRUE(c.escaped_square) << name;
    EXPECT_TRUE(c.escaped_curly) << name;
    EXPECT_FALSE(c.split_hyphens) << name;
  }
}

TEST(TokenConventionTest, LooksTokenized) {
  std::string evidence;
  EXPECT_TRUE(LooksTokenized("He does n't know", &evidence));
  EXPECT_EQ(evidence, "n't");
  EXPECT_TRUE(LooksTokenized("John 's dog barked", &evidence));
  EXPECT_TRUE(LooksTokenized("-LRB- see below -RRB-", &evidence));
  EXPECT_EQ(evidence, "-LRB-");
  EXPECT_TRUE(LooksTokenized("`` Hi , '' she said", &evidence));
  EXPECT_TRUE(LooksTokenized("The cat sat .", &evidence));
  EXPECT_TRUE(LooksTokenized("Really ?  ", &evidence));
  EXPECT_FALSE(LooksTokenized("He doesn't know. John's dog (see below) barked.", &evidence));
  EXPECT_FALSE(LooksTokenized("``Hi,'' she said [twice].", &evidence));
  EXPECT_FALSE(LooksTokenized("'s is a clitic", &evidence));
  EXPECT_FALSE(LooksTokenized(".", &evidence));
  EXPECT_FALSE(LooksTokenized("", &evidence));
}

}  // namespace
}  // namespace cky
