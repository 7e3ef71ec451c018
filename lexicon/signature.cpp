#include "lexicon/signature.h"

#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

namespace cky {
namespace {

bool EndsWith(const icu::UnicodeString& text, const char* suffix) {
  return text.endsWith(icu::UnicodeString(suffix, -1, US_INV));
}

}  // namespace

std::string LowerCase(std::string_view word) {
  icu::UnicodeString text = icu::UnicodeString::fromUTF8(
      icu::StringPiece(word.data(), static_cast<int32_t>(word.size())));
  text.toLower(icu::Locale::getRoot());
  std::string out;
  text.toUTF8String(out);
  return out;
}

std::string UnknownWordSignature(std::string_view word, int position,
                                 const std::function<bool(const std::string&)>& is_known_word) {
  std::string signature = "UNK";
  icu::UnicodeString text = icu::UnicodeString::fromUTF8(
      icu::StringPiece(word.data(), static_cast<int32_t>(word.size())));
  const int32_t length = text.length();  // UTF-16 units, like Java
  if (length == 0) return signature;

  int num_caps = 0;
  bool has_digit = false, has_dash = false, has_lower = false;
  for (int32_t i = 0; i < length; ++i) {
    UChar c = text.charAt(i);  // Java inspects UTF-16 units one by one; so do we
    if (u_isdigit(c)) {
      has_digit = true;
    } else if (c == u'-') {
      has_dash = true;
    } else if (u_isalpha(c)) {
      if (u_islower(c)) {
        has_lower = true;
      } else if (u_istitle(c)) {
        has_lower = true;
        ++num_caps;
      } else {
        ++num_caps;
      }
    }
  }
  const UChar first = text.charAt(0);
  icu::UnicodeString lowered = text;
  lowered.toLower(icu::Locale::getRoot());
  if (u_isupper(first) || u_istitle(first)) {
    if (position == 0 && num_caps == 1) {
      signature += "-INITC";
      std::string lowered_utf8;
      lowered.toUTF8String(lowered_utf8);
      if (is_known_word(lowered_utf8)) signature += "-KNOWNLC";
    } else {
      signature += "-CAPS";
    }
  } else if (!u_isalpha(first) && num_caps > 0) {
    signature += "-CAPS";
  } else if (has_lower) {
    signature += "-LC";
  }
  if (has_digit) signature += "-NUM";
  if (has_dash) signature += "-DASH";

  if (EndsWith(lowered, "s") && length >= 3) {
    // Not -ess, nor Greek/Latin -us, -is.
    UChar before = lowered.charAt(length - 2);
    if (before != u's' && before != u'i' && before != u'u') signature += "-s";
  } else if (length >= 5 && !has_dash && !(has_digit && num_caps > 0)) {
    static const char* const kSuffixes[] = {"ed", "ing", "ion", "er", "est",
                                            "ly", "ity", "y",   "al"};
    for (const char* suffix : kSuffixes) {
      if (EndsWith(lowered, suffix)) {
        signature += std::string("-") + suffix;
        break;
      }
    }
  }
  return signature;
}

}  // namespace cky
