// Berkeley's unknown-word signatures (SophisticatedLexicon.getSignature, unknownLevel 5, English).
//
//   "Flooding" at position 0, "flooding" known      -> "UNK-INITC-KNOWNLC-ing"
//   "U.S.-based"                                    -> "UNK-CAPS-DASH"
//   "1980s"                                         -> "UNK-NUM-s"
//   "Zürich" not first                              -> "UNK-CAPS"
//
// Character classes follow Java's Character methods (isDigit, isLetter, isUpperCase, isTitleCase,
// isLowerCase), which ICU reproduces for every Unicode letter, so non-ASCII words are classified as
// Berkeley classifies them. Lengths count UTF-16 code units, as Java's String.length does.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace cky {

// The signature of `word` at 0-based `position` in its sentence. `is_known_word` says whether a
// word (here: the word lower-cased) was seen in training; it decides "-KNOWNLC".
std::string UnknownWordSignature(std::string_view word, int position,
                                 const std::function<bool(const std::string&)>& is_known_word);

// Lower-cases UTF-8 text with ICU's root-locale rules (Java's toLowerCase for these purposes).
std::string LowerCase(std::string_view word);

}  // namespace cky
