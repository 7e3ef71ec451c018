#include "text/tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <sstream>

namespace cky {
namespace {

Tokenizer MakeTokenizer(const TokenizerOptions& options = {}) {
  StatusOr<Tokenizer> tokenizer = Tokenizer::Create(options);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  return std::move(tokenizer).value();
}

std::string Join(const std::vector<std::string>& tokens) {
  std::string out;
  for (const std::string& token : tokens) out += (out.empty() ? "" : " ") + token;
  return out;
}

struct TokenCase {
  const char* input;
  const char* expected;  // the tokens joined with single spaces
};

// One sentence in, its exact tokens out.
const TokenCase kTokenCases[] = {
    // Contractions and clitics.
    {"I can't go.", "I ca n't go ."},
    {"We won't, they don't, she isn't.", "We wo n't , they do n't , she is n't ."},
    {"DON'T SHOUT", "DO N'T SHOUT"},
    {"He's here and they're there; I'm sure we'll see what you've got, I'd say.",
     "He 's here and they 're there ; I 'm sure we 'll see what you 've got , I 'd say ."},
    {"John's dog and the boys' toys", "John 's dog and the boys ' toys"},
    {"I cannot say; we're gonna try.", "I can not say ; we 're gon na try ."},
    {"It\u2019s Mary\u2019s and it isn\u2019t", "It 's Mary 's and it is n't"},
    {"Rock 'til dawn in the '90s with 'em.", "Rock 'til dawn in the '90s with 'em ."},
    {"O'Neil met D'Angelo.", "O'Neil met D'Angelo ."},
    {"The 1990's, o'clock, gimme, lemme, U.S.-based",
     "The 1990's , o'clock , gim me , lem me , U.S.-based"},
    // Quotes.
    {"He said \"Stop.\" Then \"go\"!", "He said `` Stop . '' Then `` go '' !"},
    {"\"Yes,\" she said, \"of course.\"", "`` Yes , '' she said , `` of course . ''"},
    {"\u201CCurly\u201D and \u2018single\u2019 quotes", "`` Curly '' and ` single ' quotes"},
    {"``Already'' tokenized", "`` Already '' tokenized"},
    {"He said 'hello' twice", "He said ` hello ' twice"},
    // Brackets.
    {"Some (round) [square] {curly} text.",
     "Some -LRB- round -RRB- -LSB- square -RSB- -LCB- curly -RCB- text ."},
    {"(See below.)", "-LRB- See below . -RRB-"},
    // Abbreviations not at and at sentence ends.
    {"Mr. Smith and Dr. Jones met Prof. Lee.", "Mr. Smith and Dr. Jones met Prof. Lee ."},
    {"The U.S. Army, e.g. its officers, etc. are here.",
     "The U.S. Army , e.g. its officers , etc. are here ."},
    {"He works at Acme Inc.", "He works at Acme Inc."},
    {"We bought apples, pears, etc.", "We bought apples , pears , etc."},
    {"She moved to the U.S.", "She moved to the U.S."},
    {"J. K. Rowling wrote it at 5 p.m. on Jan. 3.", "J. K. Rowling wrote it at 5 p.m. on Jan. 3 ."},
    {"Smith et al. (2005) found it.", "Smith et al. -LRB- 2005 -RRB- found it ."},
    {"1. Introduction", "1. Introduction"},
    {"It ends here.", "It ends here ."},
    {"See Plan B. (J. Smith, b. 1950, c. 347) cost MRS. Lee .265 or 0.5 on Thurs.",
     "See Plan B. -LRB- J. Smith , b. 1950 , c. 347 -RRB- cost MRS. Lee .265 or 0.5 on Thurs."},
    {"He chose Plan B.", "He chose Plan B ."},
    {"The '60's and '71 were 'cuz of \"them--\" he said",
     "The '60's and '71 were 'cuz of `` them -- '' he said"},
    {"Read cra.org/resources/taulbee-survey, or ACM.org.",
     "Read cra.org/resources/taulbee-survey , or ACM.org ."},
    {"No. I saw No. 5 and no. 6, no.", "No . I saw No. 5 and no. 6 , no ."},
    // Numbers.
    {"It cost $1,000.50, or 3.5% more on 08/19/2019 at 10:30.",
     "It cost $ 1,000.50 , or 3.5 % more on 08/19/2019 at 10:30 ."},
    {"In 1990, 2,000 people came.", "In 1990 , 2,000 people came ."},
    // URLs and e-mail addresses.
    {"See https://example.com/a?b=1&c=2.", "See https://example.com/a?b=1&c=2 ."},
    {"(Visit www.example.org/path, then write.)",
     "-LRB- Visit www.example.org/path , then write . -RRB-"},
    {"Mail jane.doe+cky@mail.example.co.uk today.", "Mail jane.doe+cky@mail.example.co.uk today ."},
    {"Wikipedia (https://en.wikipedia.org/wiki/Foo_(bar)) says",
     "Wikipedia -LRB- https://en.wikipedia.org/wiki/Foo_(bar) -RRB- says"},
    {"He reads CBC.ca daily.", "He reads CBC.ca daily ."},
    // Ellipses, dashes, repeated punctuation.
    {"Wait... what?! No -- never\u2014ever\u2026", "Wait ... what ? ! No -- never -- ever ..."},
    {"a well-known AT&T co-op", "a well-known AT&T co-op"},
    {"3 \u00D7\u00D7 10 ** 2 == 300", "3 \u00D7\u00D7 10 ** 2 == 300"},
    {"I l- I learned, the proble-. Uh-huh.", "I l- I learned , the proble- . Uh-huh ."},
    {"Follow #research and @cky_parser on x.com", "Follow #research and @cky_parser on x.com"},
    // Non-ASCII letters and punctuation.
    {"Na\u00EFve caf\u00E9s in Z\u00FCrich\u00A0\u2014 \u00BFQu\u00E9? \u00A1S\u00ED!",
     "Na\u00EFve caf\u00E9s in Z\u00FCrich -- \u00BF Qu\u00E9 ? \u00A1 S\u00ED !"},
    {"\u041F\u0440\u0438\u0432\u0435\u0442, \u043C\u0438\u0440.",
     "\u041F\u0440\u0438\u0432\u0435\u0442 , \u043C\u0438\u0440 ."},
    {"Mof-\u00C1vvi \u00ABquoted\u00BB", "Mof-\u00C1vvi `` quoted ''"},
    {"e\u0301te\u0301 (decomposed accents)", "e\u0301te\u0301 -LRB- decomposed accents -RRB-"},
    // Nothing to tokenize.
    {"", ""},
    {"   \t \n ", ""},
};

TEST(TokenizerTest, TokenizesTrickyInputs) {
  Tokenizer tokenizer = MakeTokenizer();
  for (const TokenCase& c : kTokenCases) {
    EXPECT_EQ(Join(tokenizer.Tokenize(c.input)), c.expected) << "input: " << c.input;
  }
}

TEST(TokenizerTest, ReturnsNoTokensForBlankInput) {
  Tokenizer tokenizer = MakeTokenizer();
  EXPECT_TRUE(tokenizer.Tokenize("").empty());
  EXPECT_TRUE(tokenizer.Tokenize(" \n\t").empty());
  EXPECT_TRUE(tokenizer.SplitSentences("").empty());
  EXPECT_TRUE(tokenizer.SplitSentences("   ").empty());
  EXPECT_TRUE(tokenizer.SplitAndTokenize("\n\n  \n").empty());
}

TEST(TokenizerTest, SplitsHyphensWhenAsked) {
  TokenizerOptions options;
  options.split_hyphens = true;
  Tokenizer tokenizer = MakeTokenizer(options);
  EXPECT_EQ(Join(tokenizer.Tokenize("A well-known non-white self-reported re-entry in 639-3.")),
            "A well - known non-white self - reported re-entry in 639-3 .");
  EXPECT_EQ(Join(tokenizer.Tokenize("Uh-huh, a so- so-called idea")),
            "Uh-huh , a so- so - called idea");
}

TEST(TokenizerTest, KeepsUnicodePunctuationWhenAsked) {
  TokenizerOptions options;
  options.ascii_punctuation = false;
  options.ptb_brackets = false;
  Tokenizer tokenizer = MakeTokenizer(options);
  EXPECT_EQ(Join(tokenizer.Tokenize("It\u2019s (so)\u2014fine\u2026")),
            "It \u2019s ( so ) \u2014 fine \u2026");
}

// GUM (the built-in grammar's treebank) keeps the quote characters as words: "``" and "''" are
// not in its vocabulary.
TEST(TokenizerTest, WritesQuotesAndSquareBracketsAsGumDoesWhenAsked) {
  TokenizerOptions options;
  options.style = TokenStyle::kGum;
  Tokenizer tokenizer = MakeTokenizer(options);
  EXPECT_EQ(Join(tokenizer.Tokenize("He said \"no\" and \u201Cyes\u201D to the 'plan' ``now''.")),
            "He said \" no \" and \" yes \" to the ' plan ' \" now \" .");
  EXPECT_EQ(Join(tokenizer.Tokenize("Research (see [1]) shows it.")),
            "Research -LRB- see [ 1 ] -RRB- shows it .");
  EXPECT_EQ(Join(MakeTokenizer().Tokenize("He said \"no\".")), "He said `` no '' .");
}

TEST(TokenizerTest, InvalidUtf8BecomesReplacementCharacters) {
  Tokenizer tokenizer = MakeTokenizer();
  EXPECT_EQ(Join(tokenizer.Tokenize("ab\xff cd")), "ab \uFFFD cd");
}

// Seeded random mixes of the characters the tokenizer treats specially (and random bytes): no
// crash, every sentence non-empty, no token empty or holding whitespace, and as many sentences
// from SplitAndTokenize as from tokenizing each split sentence.
TEST(TokenizerTest, SurvivesRandomInput) {
  const std::vector<std::string> pieces = {
      "a",      "Z",       "\u00E9", "7",      ".",      ",",    "'",
      "\u2019", "\"",      "\u201C", "\u201D", "(",      ")",    "[",
      "-",      "--",      "\u2014", "...",    "\u2026", "?",    "!",
      " ",      "\n",      "\n\n",   "\t",     "@",      "#",    "/",
      ":",      "http://", "www.",   "n't",    "Mr.",    "U.S.", "\xF0\x9F\x98\x80",
      "\u0301", "\xff",    "\xc3",   "$",      "%",      "&",    "_",
      "\u00A0", "\u3002",  "\u4F60"};
  Tokenizer tokenizer = MakeTokenizer();
  std::mt19937 random(12345);
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    int length = std::uniform_int_distribution<int>(0, 40)(random);
    for (int i = 0; i < length; ++i) {
      text += pieces[std::uniform_int_distribution<size_t>(0, pieces.size() - 1)(random)];
    }
    auto sentences = tokenizer.SplitAndTokenize(text);
    size_t expected_sentences = 0;
    for (const std::string& paragraph : SplitParagraphs(text)) {
      for (const std::string& sentence : tokenizer.SplitSentences(paragraph)) {
        EXPECT_FALSE(sentence.empty());
        if (!tokenizer.Tokenize(sentence).empty()) ++expected_sentences;
      }
    }
    EXPECT_EQ(sentences.size(), expected_sentences) << "input: " << text;
    for (const auto& tokens : sentences) {
      ASSERT_FALSE(tokens.empty()) << "input: " << text;
      for (const std::string& token : tokens) {
        EXPECT_FALSE(token.empty()) << "input: " << text;
        EXPECT_EQ(token.find_first_of(" \t\n\r"), std::string::npos) << "input: " << text;
        EXPECT_EQ(token.find("\u00A0"), std::string::npos) << "input: " << text;
      }
    }
  }
}

// GUM sentences (text/testdata/gum_sentences.tsv, written by bench/tokenizer_gum): the raw text of
// each must tokenize, GUM style, into exactly GUM's tokens, but for the failures listed here.
TEST(TokenizerTest, ReproducesGumTokens) {
  // Line number -> why we differ from GUM there.
  const std::map<int, std::string> kKnownFailures = {
      {129, "the text closes its quote with an opening mark (decision.“); GUM tags it ''"},
  };
  std::ifstream in("text/testdata/gum_sentences.tsv");
  ASSERT_TRUE(in) << "run the tests from the source root";
  TokenizerOptions options;
  options.split_hyphens = true;
  Tokenizer tokenizer = MakeTokenizer(options);
  std::string line;
  int line_number = 0;
  int sentences = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << "line " << line_number;
    ++sentences;
    std::string ours = Join(tokenizer.Tokenize(line.substr(0, tab)));
    std::string gum = line.substr(tab + 1);
    if (kKnownFailures.count(line_number) > 0) {
      EXPECT_NE(ours, gum) << "line " << line_number << " is fixed: drop it from kKnownFailures";
    } else {
      EXPECT_EQ(ours, gum) << "line " << line_number << ": " << line.substr(0, tab);
    }
  }
  EXPECT_GT(sentences, 100);
}

struct SplitCase {
  const char* input;
  std::vector<std::string> sentences;
};

const SplitCase kSplitCases[] = {
    {"Mr. Smith went to Washington. He saw Dr. Jones there.",
     {"Mr. Smith went to Washington.", "He saw Dr. Jones there."}},
    {"J. K. Rowling wrote it. It sold well.", {"J. K. Rowling wrote it.", "It sold well."}},
    {"We bought apples, pears, etc. They were cheap.",
     {"We bought apples, pears, etc.", "They were cheap."}},
    {"He works for Acme Inc. The firm is small.", {"He works for Acme Inc.", "The firm is small."}},
    {"See e.g. the book by Smith et al. in the library.",
     {"See e.g. the book by Smith et al. in the library."}},
    {"\u201CWhy?\u201D he asked. \u201CBecause!\u201D She left.",
     {"\u201CWhy?\u201D he asked.", "\u201CBecause!\u201D", "She left."}},
    {"A hard-wrapped\nsentence goes on. And\nanother.",
     {"A hard-wrapped sentence goes on.", "And another."}},
    {"Stop! Go? Yes.", {"Stop!", "Go?", "Yes."}},
    {"Shopping:\n1. Eggs\n2) Milk and\nbread\n- Tea\n\u2022 Jam\na. Fig\nin 12. Then",
     {"Shopping:", "1. Eggs", "2) Milk and bread", "- Tea", "\u2022 Jam", "a. Fig in 12.", "Then"}},
    {"See http://x.org/a?b=1&C=2!Yes. Or www.Example.com. Fine.",
     {"See http://x.org/a?b=1&C=2!Yes.", "Or www.Example.com.", "Fine."}},
    {"It was big. [1] Then it fell. [2][3]", {"It was big. [1]", "Then it fell. [2][3]"}},
    {"2. Methods and data", {"2. Methods and data"}},
    {"Not him. He is up. Its goal. No. Then see No. 5 and Fig. 2 etc. Peppermint works.",
     {"Not him.", "He is up.", "Its goal.", "No.", "Then see No. 5 and Fig. 2 etc.",
      "Peppermint works."}},
    {"Studies agree. [1-3] Others do not. [4, 5]",
     {"Studies agree. [1-3]", "Others do not. [4, 5]"}},
    {"He served the U.S. Senate in the U.S. He is old.",
     {"He served the U.S. Senate in the U.S.", "He is old."}},
    {"[George W.] Bush won.", {"[George W.] Bush won."}},
    {"Das ist gut. \u00C7a va bien. \u4F60\u597D\u3002\u518D\u89C1\u3002",
     {"Das ist gut.", "\u00C7a va bien.", "\u4F60\u597D\u3002", "\u518D\u89C1\u3002"}},
};

TEST(SentenceSplitterTest, SplitsTrickyParagraphs) {
  Tokenizer tokenizer = MakeTokenizer();
  for (const SplitCase& c : kSplitCases) {
    EXPECT_EQ(tokenizer.SplitSentences(c.input), c.sentences) << "input: " << c.input;
  }
}

TEST(SentenceSplitterTest, ExtraAbbreviationsSuppressBreaks) {
  TokenizerOptions options;
  options.extra_abbreviations = {"Approx."};
  Tokenizer tokenizer = MakeTokenizer(options);
  EXPECT_EQ(tokenizer.SplitSentences("Approx. Ten people came."),
            std::vector<std::string>{"Approx. Ten people came."});
  EXPECT_EQ(Join(tokenizer.Tokenize("Approx. Ten people came.")), "Approx. Ten people came .");
}

TEST(SentenceSplitterTest, NoSentenceSpansABlankLine) {
  Tokenizer tokenizer = MakeTokenizer();
  auto sentences = tokenizer.SplitAndTokenize(
      "A title without a period\n\nThe text starts here and\ngoes on. Then ends.\n \nNew one");
  ASSERT_EQ(sentences.size(), 4u);
  EXPECT_EQ(Join(sentences[0]), "A title without a period");
  EXPECT_EQ(Join(sentences[1]), "The text starts here and goes on .");
  EXPECT_EQ(Join(sentences[2]), "Then ends .");
  EXPECT_EQ(Join(sentences[3]), "New one");
}

TEST(SentenceSplitterTest, OneShotHelperMatchesTheClass) {
  auto sentences = SplitAndTokenize("Dr. Who can't wait. \"Go!\"");
  ASSERT_TRUE(sentences.ok()) << sentences.status().message();
  ASSERT_EQ(sentences->size(), 2u);
  EXPECT_EQ(Join((*sentences)[0]), "Dr. Who ca n't wait .");
  EXPECT_EQ(Join((*sentences)[1]), "`` Go ! ''");
}

TEST(ParagraphReaderTest, ReadsParagraphsSeparatedByBlankLines) {
  std::istringstream in("\n\none\ntwo\r\n\r\n  \nthree\n\n\n");
  ParagraphReader reader(in);
  std::string paragraph;
  ASSERT_TRUE(reader.Next(&paragraph));
  EXPECT_EQ(paragraph, "one\ntwo");
  ASSERT_TRUE(reader.Next(&paragraph));
  EXPECT_EQ(paragraph, "three");
  EXPECT_FALSE(reader.Next(&paragraph));
  EXPECT_FALSE(reader.bad());
  EXPECT_EQ(SplitParagraphs("a\n\nb\nc"), (std::vector<std::string>{"a", "b\nc"}));
  EXPECT_TRUE(SplitParagraphs("").empty());
}

}  // namespace
}  // namespace cky
