#include "lexicon/signature.h"

#include <gtest/gtest.h>

#include <set>

namespace cky {
namespace {

struct Case {
  const char* word;
  int position;
  const char* expected;
};

TEST(SignatureTest, MatchesBerkeleyUnknownLevel5) {
  const std::set<std::string> known = {"flooding", "éric"};
  auto is_known = [&](const std::string& w) { return known.count(w) > 0; };
  const Case cases[] = {
      {"Flooding", 0, "UNK-INITC-KNOWNLC-ing"},  // first word, one capital, lower form known
      {"Flooding", 3, "UNK-CAPS-ing"},
      {"Floodings", 0, "UNK-INITC-s"},  // lower form unknown
      {"flooded", 2, "UNK-LC-ed"},
      {"1980s", 1, "UNK-LC-NUM-s"},        // 's' is lower case; '0' before it allows -s
      {"U.S.-based", 1, "UNK-CAPS-DASH"},  // dash blocks the suffix classes
      {"U.S.-based", 0, "UNK-CAPS-DASH"},  // two capitals: not INITC
      {"3,000", 2, "UNK-NUM"},
      {"--", 1, "UNK-DASH"},
      {"A4-x", 1, "UNK-CAPS-NUM-DASH"},
      {"x86", 1, "UNK-LC-NUM"},        // too short for a suffix
      {"4Runner", 1, "UNK-CAPS-NUM"},  // non-letter start with a capital; digit+caps
      {"Bus", 3, "UNK-CAPS"},          // -us is not a plural
      {"glasses", 1, "UNK-LC-s"},
      {"crisis", 1, "UNK-LC"},  // -is is not a plural
      {"quality", 1, "UNK-LC-ity"},
      {"fatherly", 1, "UNK-LC-ly"},
      {"quickest", 1, "UNK-LC-est"},
      {"national", 1, "UNK-LC-al"},
      {"party", 1, "UNK-LC-y"},
      {"ABC", 0, "UNK-CAPS"},
      {"Zürich", 2, "UNK-CAPS"},         // non-ASCII capital
      {"Éric", 0, "UNK-INITC-KNOWNLC"},  // non-ASCII lower-casing finds "éric"
      {"élégantly", 1, "UNK-LC-ly"},     // non-ASCII lower case
      {"\u01C5emal", 1, "UNK-CAPS-al"},  // title-case letter (Dž) counts as a capital
      {"", 0, "UNK"},
      {"!!", 0, "UNK"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(UnknownWordSignature(c.word, c.position, is_known), c.expected)
        << "word '" << c.word << "' at " << c.position;
  }
}

TEST(SignatureTest, LowerCaseHandlesUnicode) {
  EXPECT_EQ(LowerCase("ÉRIC Zürich"), "éric zürich");
  EXPECT_EQ(LowerCase("abc"), "abc");
}

}  // namespace
}  // namespace cky
