#include "text/tokenizer.h"

#include <unicode/brkiter.h>
#include <unicode/filteredbrk.h>
#include <unicode/locid.h>
#include <unicode/regex.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <array>
#include <sstream>
#include <unordered_set>

namespace cky {
namespace {

using CodePoints = std::u32string;

// Abbreviations that, in practice, never end a sentence: a sentence break after them is undone.
constexpr std::array kNonFinalAbbreviations = {
    "Mr.",  "Mrs.", "Ms.",  "Messrs.", "Mmes.",   "Dr.",   "Prof.", "St.",   "Mt.",
    "Ft.",  "Gen.", "Col.", "Lt.",     "Maj.",    "Sgt.",  "Capt.", "Cmdr.", "Adm.",
    "Gov.", "Sen.", "Rep.", "Rev.",    "Hon.",    "Pres.", "Supt.", "Msgr.", "Fr.",
    "vs.",  "v.",   "e.g.", "i.e.",    "cf.",     "viz.",  "Fig.",  "Figs.", "Eq.",
    "Vol.", "Ch.",  "Sec.", "Art.",    "approx.", "ca.",   "Op.",   "Jan.",  "Feb.",
    "Mar.", "Apr.", "Jun.", "Jul.",    "Aug.",    "Sep.",  "Sept.", "Oct.",  "Nov.",
    "Dec.", "al.",  "Ave.", "Blvd.",   "Rd.",     "Dept.", "Univ.", "Mme.",  "Mlle.",
};

// Abbreviations that keep their period but may end a sentence ("... and Acme Inc.").
constexpr std::array kOtherAbbreviations = {
    "Inc.",  "Corp.", "Co.",    "Ltd.",   "Bros.", "Jr.",   "Sr.",   "etc.",  "Esq.",  "eds.",
    "ed.",   "Ed.",   "Mon.",   "Tue.",   "Wed.",  "Thu.",  "Fri.",  "Sat.",  "Sun.",  "Ala.",
    "Ariz.", "Ark.",  "Calif.", "Colo.",  "Conn.", "Del.",  "Fla.",  "Ga.",   "Ill.",  "Ind.",
    "Kan.",  "Ky.",   "La.",    "Md.",    "Mass.", "Mich.", "Minn.", "Mo.",   "Mont.", "Neb.",
    "Nev.",  "Okla.", "Ore.",   "Pa.",    "Tenn.", "Tex.",  "Va.",   "Vt.",   "Wis.",  "Wyo.",
    "Ref.",  "Refs.", "Tues.",  "Thurs.", "div.",  "yr.",   "yrs.",  "ibid.", "Dist.", "Cir.",
    "Supp.", "Nr.",   "vol.",   "lbs.",   "oz.",   "pp.",   "p.",    "ch.",   "sec.",
};

// Words before a hyphen that GUM (like OntoNotes) does not split off with split_hyphens.
constexpr std::array kHyphenPrefixes = {
    "anti",  "co",    "counter", "cross", "de",    "e",    "ex",     "inter", "intra", "mid",
    "mini",  "multi", "non",     "post",  "pre",   "pro",  "re",     "semi",  "socio", "sub",
    "super", "trans", "un",      "uni",   "bi",    "neo",  "pseudo", "quasi", "ultra", "macro",
    "micro", "over",  "under",   "extra", "infra", "mega", "meta",   "mono",  "tri",   "vice",
    "uh",    "um",    "mm",      "hm",    "oh",    "huh",
};

// Words that start with an apostrophe and stay one token ('til, '90s is handled by shape).
constexpr std::array kApostropheWords = {"til", "em",   "cause", "cuz",   "bout",
                                         "tis", "twas", "n",     "round", "scuse"};

// Words that often open a sentence. After an abbreviation that may end a sentence ("U.S.",
// "Inc."), a capitalized word from this list is taken to start a new sentence, and any other
// capitalized word ("U.S. Senator") to continue the current one.
constexpr std::array kSentenceStarters = {
    "A",     "An",   "The",   "This",    "That",   "These", "Those",    "It",      "Its",
    "I",     "He",   "She",   "We",      "You",    "They",  "His",      "Her",     "Our",
    "Their", "My",   "There", "Here",    "But",    "And",   "Or",       "So",      "Yet",
    "If",    "When", "While", "As",      "In",     "On",    "At",       "For",     "From",
    "To",    "By",   "With",  "After",   "Before", "Since", "Although", "However", "Thus",
    "Then",  "Also", "What",  "Why",     "How",    "Who",   "Where",    "Which",   "Is",
    "Are",   "Was",  "Were",  "Do",      "Does",   "Did",   "Some",     "Many",    "Most",
    "All",   "Each", "No",    "Not",     "One",    "Other", "Another",  "Both",    "Such",
    "Today", "Now",  "Yes",   "Because", "Please", "Let",
};

// ---- Characters ----------------------------------------------------------------------------

bool IsMark(char32_t c) { return (U_GET_GC_MASK(c) & U_GC_M_MASK) != 0; }
bool IsLetter(char32_t c) { return u_isalpha(c) || IsMark(c); }
bool IsDigit(char32_t c) { return u_isdigit(c); }
bool IsWordChar(char32_t c) { return IsLetter(c) || IsDigit(c) || c == U'_'; }
bool IsSpace(char32_t c) { return u_isUWhiteSpace(c) || c == 0xFEFF || c == 0x200B; }
bool IsLower(char32_t c) { return u_isULowercase(c); }
bool IsUpper(char32_t c) { return u_isUUppercase(c) || u_istitle(c); }
bool IsApostrophe(char32_t c) { return c == U'\'' || c == U'\u2019'; }
bool IsHyphen(char32_t c) { return c == U'-' || c == U'\u2010' || c == U'\u2011'; }
bool IsDash(char32_t c) {
  return c == U'\u2012' || c == U'\u2013' || c == U'\u2014' || c == U'\u2015';
}
bool IsOpeningBracket(char32_t c) { return u_charType(c) == U_START_PUNCTUATION; }
bool IsOpeningQuote(char32_t c) {
  return c == U'\u201C' || c == U'\u2018' || c == U'\u201E' || c == U'\u00AB' || c == U'`';
}

CodePoints ToCodePoints(std::string_view utf8) {
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(utf8.data(), utf8.size()));
  CodePoints out;
  out.reserve(u.length());
  for (int32_t i = 0; i < u.length();) {
    UChar32 c = u.char32At(i);
    out.push_back(static_cast<char32_t>(c));
    i += U16_LENGTH(c);
  }
  return out;
}

std::string ToUtf8(const CodePoints& cps) {
  std::string out;
  icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(cps.data()),
                                static_cast<int32_t>(cps.size()))
      .toUTF8String(out);
  return out;
}

CodePoints Lowercase(CodePoints s) {
  for (char32_t& c : s) c = static_cast<char32_t>(u_tolower(c));
  return s;
}

template <size_t N>
std::unordered_set<CodePoints> CodePointSet(const std::array<const char*, N>& words) {
  std::unordered_set<CodePoints> set;
  for (const char* w : words) set.insert(ToCodePoints(w));
  return set;
}

// A word of letters separated by single periods, each part one or two letters: "U.S", "e.g",
// "Ph.D", "a.m". (The final period is not part of `word`.)
bool IsDottedAbbreviation(const CodePoints& word) {
  if (word.find(U'.') == CodePoints::npos) return false;
  size_t part = 0;
  for (char32_t c : word) {
    if (c == U'.') {
      if (part == 0) return false;
      part = 0;
    } else if (IsLetter(c)) {
      if (++part > 2) return false;
    } else {
      return false;
    }
  }
  return part > 0;
}

// Whether s[from...] holds only spaces and closing quotes or brackets.
bool OnlyClosingAfter(const CodePoints& s, size_t from) {
  for (size_t i = from; i < s.size(); ++i) {
    int8_t type = u_charType(s[i]);
    if (!IsSpace(s[i]) && type != U_FINAL_PUNCTUATION && type != U_END_PUNCTUATION &&
        s[i] != U'"' && s[i] != U'\'') {
      return false;
    }
  }
  return true;
}

bool AllDigits(const CodePoints& word) {
  return !word.empty() && std::all_of(word.begin(), word.end(), IsDigit);
}

}  // namespace

// ---- The tokenizer ---------------------------------------------------------------------------

struct Tokenizer::Impl {
  TokenizerOptions options;
  std::unique_ptr<icu::BreakIterator> sentence_breaks;
  std::unique_ptr<icu::RegexPattern> url_pattern;
  std::unique_ptr<icu::RegexPattern> email_pattern;
  std::unordered_set<CodePoints> non_final_abbreviations;
  std::unordered_set<CodePoints> abbreviations;  // every abbreviation, any case
  std::unordered_set<CodePoints> hyphen_prefixes;
  std::unordered_set<CodePoints> apostrophe_words;
  std::unordered_set<CodePoints> sentence_starters;

  // Known as written, in lowercase ("ETC."), or in title case when written in capitals ("MRS.").
  bool IsKnownAbbreviation(const CodePoints& with_period) const {
    if (abbreviations.count(with_period) > 0) return true;
    CodePoints lower = Lowercase(with_period);
    if (abbreviations.count(lower) > 0) return true;
    bool capitals = std::none_of(with_period.begin(), with_period.end(), IsLower);
    lower[0] = with_period[0];
    return capitals && abbreviations.count(lower) > 0;
  }

  // Sentences.
  std::vector<std::string> SplitSentences(std::string_view paragraph);
  std::vector<std::string> SplitBlock(std::string_view text);
  bool ShouldJoin(const CodePoints& previous, const CodePoints& next) const;

  // Tokens.
  std::vector<std::string> Tokenize(std::string_view sentence);
  size_t MatchUrlOrEmail(const CodePoints& s, size_t begin) const;
  size_t ScanWord(const CodePoints& s, size_t begin) const;
  bool KeepsPeriod(const CodePoints& word, const CodePoints& s, size_t period,
                   bool first_token) const;
  void EmitWord(const CodePoints& word, std::vector<CodePoints>* tokens) const;
};

StatusOr<Tokenizer> Tokenizer::Create(const TokenizerOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  UErrorCode status = U_ZERO_ERROR;
  // "ss=standard" asks for ICU's own list of English abbreviations after which no sentence ends.
  icu::Locale english("en@ss=standard");
  std::unique_ptr<icu::FilteredBreakIteratorBuilder> builder(
      icu::FilteredBreakIteratorBuilder::createInstance(english, status));
  if (U_FAILURE(status)) {
    return Status::Error(std::string("ICU: cannot load sentence break suppressions: ") +
                         u_errorName(status));
  }
  // Our own abbreviations are not added to ICU's filter: it matches them as suffixes of longer
  // words ("p." would suppress the break after "up."), so ShouldJoin re-joins after them instead.
  icu::BreakIterator* plain = icu::BreakIterator::createSentenceInstance(english, status);
  if (U_FAILURE(status)) {
    delete plain;
    return Status::Error(std::string("ICU: cannot create a sentence break iterator: ") +
                         u_errorName(status));
  }
  impl->sentence_breaks.reset(builder->wrapIteratorWithFilter(plain, status));
  if (U_FAILURE(status) || !impl->sentence_breaks) {
    return Status::Error(std::string("ICU: cannot filter sentence breaks: ") + u_errorName(status));
  }

  UParseError parse_error;
  impl->url_pattern.reset(icu::RegexPattern::compile(
      u"(?i)(?:(?:https?|ftp|file)://|www\\d{0,3}\\.|mailto:)\\S+"
      // A bare domain with a path: "cra.org/resources/taulbee-survey".
      u"|(?:[\\p{L}\\p{N}\\-]+\\.)+(?:com|org|net|edu|gov|mil|int|info|biz|io|ai|co|uk|us|"
      u"ca|au|de|fr|nl|eu|ch|it|es|jp|cn|ru|in|br)/\\S*",
      0, parse_error, status));
  impl->email_pattern.reset(icu::RegexPattern::compile(
      u"[\\p{L}\\p{N}._%+\\-]+@[\\p{L}\\p{N}\\-]+(?:\\.[\\p{L}\\p{N}\\-]+)+", 0, parse_error,
      status));
  if (U_FAILURE(status)) {
    return Status::Error(std::string("ICU: cannot compile the URL patterns: ") +
                         u_errorName(status));
  }

  impl->non_final_abbreviations = CodePointSet(kNonFinalAbbreviations);
  for (const std::string& extra : options.extra_abbreviations) {
    impl->non_final_abbreviations.insert(ToCodePoints(extra));
  }
  impl->abbreviations = impl->non_final_abbreviations;
  for (const char* a : kOtherAbbreviations) impl->abbreviations.insert(ToCodePoints(a));
  impl->hyphen_prefixes = CodePointSet(kHyphenPrefixes);
  impl->apostrophe_words = CodePointSet(kApostropheWords);
  impl->sentence_starters = CodePointSet(kSentenceStarters);
  return Tokenizer(std::move(impl));
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::vector<std::string> Tokenizer::SplitSentences(std::string_view paragraph) {
  return impl_->SplitSentences(paragraph);
}
std::vector<std::string> Tokenizer::Tokenize(std::string_view sentence) {
  std::vector<std::string> tokens = impl_->Tokenize(sentence);
  if (impl_->options.style == TokenStyle::kGum) {
    for (std::string& token : tokens) {
      if (token == "``" || token == "''") token = "\"";
      if (token == "`") token = "'";
      if (token == "-LSB-") token = "[";
      if (token == "-RSB-") token = "]";
    }
  }
  return tokens;
}

std::vector<std::vector<std::string>> Tokenizer::SplitAndTokenize(std::string_view text) {
  std::vector<std::vector<std::string>> sentences;
  for (const std::string& paragraph : SplitParagraphs(text)) {
    for (const std::string& sentence : impl_->SplitSentences(paragraph)) {
      std::vector<std::string> tokens = Tokenize(sentence);
      if (!tokens.empty()) sentences.push_back(std::move(tokens));
    }
  }
  return sentences;
}

StatusOr<std::vector<std::vector<std::string>>> SplitAndTokenize(std::string_view text,
                                                                 const TokenizerOptions& options) {
  StatusOr<Tokenizer> tokenizer = Tokenizer::Create(options);
  if (!tokenizer.ok()) return tokenizer.status();
  return tokenizer->SplitAndTokenize(text);
}

// ---- Sentences -------------------------------------------------------------------------------

namespace {

bool IsClosing(char32_t c) {
  int8_t type = u_charType(c);
  return type == U_FINAL_PUNCTUATION || type == U_END_PUNCTUATION || c == U'"' || c == U'\'';
}

// The last whitespace-separated word of `s` without the brackets and quotes around it:
// "(Dr." -> "Dr.", "W.]" -> "W.".
CodePoints LastWord(const CodePoints& s) {
  size_t end = s.size();
  while (end > 0 && IsClosing(s[end - 1])) --end;
  size_t begin = end;
  while (begin > 0 && !IsSpace(s[begin - 1])) --begin;
  while (begin < end && !IsWordChar(s[begin])) ++begin;
  return s.substr(begin, end - begin);
}

// The first word of `s`, without the punctuation before it.
CodePoints FirstWord(const CodePoints& s) {
  size_t begin = 0;
  while (begin < s.size() && !IsWordChar(s[begin])) ++begin;
  size_t end = begin;
  while (end < s.size() && IsWordChar(s[end])) ++end;
  return s.substr(begin, end - begin);
}

// The length of the footnote markers such as "[12]", "[1-3]" or "[3][4]" (and the spaces after
// them) that open `s`; they belong to the sentence before.
size_t FootnoteMarkersLength(const CodePoints& s) {
  size_t i = 0;
  size_t length = 0;
  while (i < s.size() && s[i] == U'[') {
    size_t close = i + 1;
    // Digits, and ranges or lists of them: "[12]", "[1-3]", "[4, 7]".
    while (close < s.size() && close - i <= 12 &&
           (IsDigit(s[close]) || IsHyphen(s[close]) || IsDash(s[close]) || s[close] == U',' ||
            s[close] == U' ')) {
      ++close;
    }
    if (close == i + 1 || close >= s.size() || s[close] != U']') break;
    i = close + 1;
    while (i < s.size() && IsSpace(s[i])) ++i;
    length = i;
  }
  return length;
}

}  // namespace

// True when ICU's break between `previous` and `next` (both trimmed, non-empty) is not a sentence
// end: after a title, an initial, a list number, a "?" or "!" followed by a lowercase word, an
// abbreviation followed by a capitalized word that rarely opens a sentence. (Footnote markers
// that ICU puts at the start of the next sentence are moved back by SplitSentences.)
bool Tokenizer::Impl::ShouldJoin(const CodePoints& previous, const CodePoints& next) const {
  CodePoints last = LastWord(previous);
  CodePoints first = FirstWord(next);
  if (first.empty()) return true;  // only punctuation, e.g. the ")." after "(... et al. [4])."
  if (last.size() >= 2 && last.back() == U'.') {
    CodePoints stem = last.substr(0, last.size() - 1);
    if (non_final_abbreviations.count(last) > 0) return true;
    if (stem.size() == 1 && IsUpper(stem[0])) return true;  // an initial: "J. K. Rowling"
    // A list marker alone: "2. Methods", "b. Results".
    if (last.size() == previous.size() && (AllDigits(stem) || stem.size() == 1)) return true;
    // "etc." is not among them: a capitalized word after it nearly always opens a sentence.
    if ((IsKnownAbbreviation(last) || IsDottedAbbreviation(stem)) && last != U"etc." &&
        !first.empty() && IsUpper(first[0]) && sentence_starters.count(first) == 0) {
      return true;
    }
  }
  size_t end = previous.size();
  while (end > 0 && IsClosing(previous[end - 1])) --end;
  bool question_or_exclamation =
      end > 0 && (previous[end - 1] == U'?' || previous[end - 1] == U'!');
  return question_or_exclamation && !first.empty() && IsLower(first[0]);
}

namespace {

// Whether a line starts a list item: "- ", "* ", "• ", "12. ", "3) ", "a) ", "b. ".
bool StartsListItem(std::string_view line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos) return false;
  line.remove_prefix(i);
  for (std::string_view bullet :
       {"- ", "* ", "\u2022 ", "\u25E6 ", "\u2023 ", "\u25AA ", "\u00B7 "}) {
    if (line.substr(0, bullet.size()) == bullet) return true;
  }
  size_t digits = 0;
  while (digits < line.size() && digits < 4 && line[digits] >= '0' && line[digits] <= '9') {
    ++digits;
  }
  size_t marker = digits;
  if (digits == 0 || digits > 3) {
    if (line.empty() || line[0] < 'a' || line[0] > 'z') return false;
    marker = 1;
  }
  return line.size() > marker + 1 && (line[marker] == '.' || line[marker] == ')') &&
         line[marker + 1] == ' ';
}

}  // namespace

std::vector<std::string> Tokenizer::Impl::SplitSentences(std::string_view paragraph) {
  // A line that starts a list item starts a sentence; the other line breaks are spaces.
  std::vector<std::string> sentences;
  size_t block_start = 0;
  size_t line_start = 0;
  while (line_start <= paragraph.size()) {
    size_t line_end = paragraph.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = paragraph.size();
    size_t next_line = line_end + 1;
    bool last_line = next_line > paragraph.size();
    if (last_line || StartsListItem(paragraph.substr(next_line))) {
      size_t block_end = last_line ? paragraph.size() : line_end;
      for (std::string& sentence :
           SplitBlock(paragraph.substr(block_start, block_end - block_start))) {
        sentences.push_back(std::move(sentence));
      }
      block_start = next_line;
    }
    line_start = next_line;
  }
  return sentences;
}

std::vector<std::string> Tokenizer::Impl::SplitBlock(std::string_view paragraph) {
  CodePoints text = ToCodePoints(paragraph);
  // ICU ends a sentence at every line separator; inside a paragraph those are just spaces.
  for (char32_t& c : text) {
    if (IsSpace(c)) c = U' ';
  }
  icu::UnicodeString utext = icu::UnicodeString::fromUTF32(
      reinterpret_cast<const UChar32*>(text.data()), static_cast<int32_t>(text.size()));
  sentence_breaks->setText(utext);
  struct Span {
    size_t begin, end;  // code point offsets into `text`
  };
  std::vector<Span> sentences;
  auto span_text = [&](Span span) { return text.substr(span.begin, span.end - span.begin); };
  int32_t start16 = sentence_breaks->first();
  size_t start = 0;
  for (int32_t end16 = sentence_breaks->next(); end16 != icu::BreakIterator::DONE;
       start16 = end16, end16 = sentence_breaks->next()) {
    size_t end = start + static_cast<size_t>(utext.countChar32(start16, end16 - start16));
    Span span{start, end};
    const char32_t before_break = start == 0 ? U' ' : text[start - 1];
    start = end;
    while (span.begin < span.end && text[span.begin] == U' ') ++span.begin;
    while (span.end > span.begin && text[span.end - 1] == U' ') --span.end;
    if (span.begin == span.end) continue;
    if (sentences.empty()) {
      sentences.push_back(span);
      continue;
    }
    Span& previous = sentences.back();
    // Footnote markers that ICU put at the start of this sentence belong to the previous one.
    if (size_t markers = FootnoteMarkersLength(span_text(span)); markers > 0) {
      previous.end = span.begin + markers;
      while (text[previous.end - 1] == U' ') --previous.end;
      span.begin += markers;
      if (span.begin == span.end) continue;
    }
    // A break right after ".", "?" or "!" with no space is inside a word or URL ("a?b=1").
    bool inside_word = before_break == U'.' || before_break == U'?' || before_break == U'!';
    if (inside_word || ShouldJoin(span_text(previous), span_text(span))) {
      previous.end = span.end;
    } else {
      sentences.push_back(span);
    }
  }
  sentence_breaks->setText(icu::UnicodeString());  // drop the alias to `utext`
  std::vector<std::string> out;
  out.reserve(sentences.size());
  for (Span span : sentences) out.push_back(ToUtf8(span_text(span)));
  return out;
}

// ---- Tokens ----------------------------------------------------------------------------------

// The length of a URL or e-mail address starting at s[begin], 0 if none does. Trailing
// punctuation that more likely ends the sentence or clause (".", ",", ")" without "(") is left out.
size_t Tokenizer::Impl::MatchUrlOrEmail(const CodePoints& s, size_t begin) const {
  size_t chunk_end = begin;
  while (chunk_end < s.size() && !IsSpace(s[chunk_end])) ++chunk_end;
  CodePoints chunk = s.substr(begin, chunk_end - begin);
  CodePoints lower = Lowercase(chunk.substr(0, 7));
  bool maybe_url = chunk.find(U"://") != CodePoints::npos || lower.rfind(U"www", 0) == 0 ||
                   lower.rfind(U"mailto:", 0) == 0 || chunk.find(U'/') != CodePoints::npos;
  bool maybe_email = chunk.find(U'@') != CodePoints::npos;
  if (!maybe_url && !maybe_email) return 0;
  icu::UnicodeString uchunk = icu::UnicodeString::fromUTF32(
      reinterpret_cast<const UChar32*>(chunk.data()), static_cast<int32_t>(chunk.size()));
  size_t length = 0;
  for (const icu::RegexPattern* pattern : {url_pattern.get(), email_pattern.get()}) {
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::RegexMatcher> matcher(pattern->matcher(uchunk, status));
    if (U_FAILURE(status) || !matcher->lookingAt(status) || U_FAILURE(status)) continue;
    int32_t end16 = matcher->end(status);
    length = static_cast<size_t>(uchunk.countChar32(0, end16));
    break;
  }
  // Leave closing punctuation out, except a ")" that closes a "(" inside the URL.
  while (length > 0) {
    char32_t last = chunk[length - 1];
    if (last == U')') {
      auto opens = std::count(chunk.begin(), chunk.begin() + length, U'(');
      auto closes = std::count(chunk.begin(), chunk.begin() + length, U')');
      if (opens >= closes) break;
    } else if (!(u_ispunct(last) && last != U'/' && last != U'_' && last != U'#' && last != U'-' &&
                 last != U'=')) {
      break;
    }
    --length;
  }
  return length;
}

// The end of the word that starts at s[begin] (a word character): letters, digits and marks, with
// connectors kept inside when a word character follows them (see the header for which).
size_t Tokenizer::Impl::ScanWord(const CodePoints& s, size_t begin) const {
  size_t i = begin;
  while (i < s.size()) {
    char32_t c = s[i];
    if (IsWordChar(c)) {
      ++i;
      continue;
    }
    // "U.S.-based": an abbreviation's period before a hyphen that joins another word.
    if (c == U'.' && !options.split_hyphens && i + 2 < s.size() && IsHyphen(s[i + 1]) &&
        IsWordChar(s[i + 2]) && IsLetter(s[i - 1])) {
      i += 2;
      continue;
    }
    if (i + 1 >= s.size() || !IsWordChar(s[i + 1])) break;
    char32_t previous = s[i - 1];
    char32_t next = s[i + 1];
    bool digits_around = IsDigit(previous) && IsDigit(next);
    bool letters_around = IsLetter(previous) && IsLetter(next);
    bool keep = false;
    if (c == U'.') {
      keep = true;  // "U.S", "3.14", "CBC.ca"
    } else if (c == U',' || c == U':' || c == U'/') {
      keep = digits_around;  // "1,000", "10:30", "08/19/2019"
    } else if (IsApostrophe(c)) {
      // "O'Neil", "don't", "1990's" (clitics come off later)
      keep = (IsLetter(previous) || IsDigit(previous)) && IsLetter(next);
    } else if (c == U'&') {
      keep = letters_around && IsUpper(previous) && IsUpper(next);  // "AT&T"
    } else if (IsHyphen(c)) {
      if (!options.split_hyphens || digits_around) {
        keep = true;
      } else {
        size_t word_start = i;
        while (word_start > begin && IsWordChar(s[word_start - 1])) --word_start;
        keep = hyphen_prefixes.count(Lowercase(s.substr(word_start, i - word_start))) > 0;
      }
    }
    if (!keep) break;
    ++i;
  }
  return i;
}

// Whether the period at s[period], right after `word`, belongs to the word.
bool Tokenizer::Impl::KeepsPeriod(const CodePoints& word, const CodePoints& s, size_t period,
                                  bool first_token) const {
  CodePoints with_period = word + U'.';
  if (IsKnownAbbreviation(with_period) || IsDottedAbbreviation(word)) return true;
  size_t next = period + 1;
  // An initial ("J. K. Rowling"), unless it ends the sentence ("... Plan B.").
  if (word.size() == 1 && IsUpper(word[0])) return !OnlyClosingAfter(s, next);
  bool space_after = next < s.size() && IsSpace(s[next]);
  while (next < s.size() && IsSpace(s[next])) ++next;
  if (next >= s.size()) return false;                              // the sentence's own period
  if (first_token && AllDigits(word) && space_after) return true;  // a list number: "1. Services"
  char32_t following = s[next];
  CodePoints lower = Lowercase(word);
  if ((lower == U"no" || lower == U"nos") && IsDigit(following)) return true;  // "No. 5"
  if (word.size() == 1 && IsDigit(following)) return true;  // "(b. 1950)", "c. 347"
  // An unknown abbreviation: a real sentence end would not continue in lowercase or after a comma.
  return (space_after && IsLower(following)) || following == U',' || following == U';';
}

// Appends `word` to `tokens`, with its clitics split off.
void Tokenizer::Impl::EmitWord(const CodePoints& word, std::vector<CodePoints>* tokens) const {
  CodePoints lower = Lowercase(word);
  auto emit = [&](size_t split) {
    tokens->push_back(word.substr(0, split));
    CodePoints clitic = word.substr(split);
    if (options.ascii_punctuation) {
      for (char32_t& c : clitic) {
        if (c == U'\u2019') c = U'\'';
      }
    }
    tokens->push_back(clitic);
  };
  // Words that the treebank writes as two tokens.
  if (lower == U"cannot" || lower == U"gonna" || lower == U"wanna" || lower == U"gotta" ||
      lower == U"gimme" || lower == U"lemme") {
    emit(3);
    return;
  }
  size_t n = lower.size();
  auto apostrophe_at = [&](size_t i) { return i < n && IsApostrophe(lower[i]); };
  if (n >= 4 && lower[n - 3] == U'n' && apostrophe_at(n - 2) && lower[n - 1] == U't' &&
      IsLetter(lower[n - 4])) {
    emit(n - 3);  // "don't" -> "do n't", "can't" -> "ca n't", "won't" -> "wo n't"
    return;
  }
  if (n >= 3 && apostrophe_at(n - 2) && IsLetter(lower[n - 3]) &&
      (lower[n - 1] == U's' || lower[n - 1] == U'm' || lower[n - 1] == U'd')) {
    emit(n - 2);
    return;
  }
  if (n >= 4 && apostrophe_at(n - 3) && IsLetter(lower[n - 4]) &&
      (lower.compare(n - 2, 2, U"re") == 0 || lower.compare(n - 2, 2, U"ve") == 0 ||
       lower.compare(n - 2, 2, U"ll") == 0)) {
    emit(n - 3);
    return;
  }
  tokens->push_back(word);
}

std::vector<std::string> Tokenizer::Impl::Tokenize(std::string_view sentence) {
  const CodePoints s = ToCodePoints(sentence);
  const bool ascii = options.ascii_punctuation;
  std::vector<CodePoints> tokens;
  bool double_quote_open = false;
  size_t i = 0;
  while (i < s.size()) {
    const char32_t c = s[i];
    if (IsSpace(c)) {
      ++i;
      continue;
    }
    const bool after_space = i == 0 || IsSpace(s[i - 1]);
    const bool opening_context = after_space || IsOpeningBracket(s[i - 1]) ||
                                 IsOpeningQuote(s[i - 1]) || IsDash(s[i - 1]) || s[i - 1] == U'"' ||
                                 IsHyphen(s[i - 1]);

    // URLs and e-mail addresses, which may start with punctuation-free letters only.
    if ((after_space || !IsWordChar(s[i - 1])) && IsWordChar(c)) {
      if (size_t length = MatchUrlOrEmail(s, i); length > 0) {
        tokens.push_back(s.substr(i, length));
        i += length;
        continue;
      }
    }

    if (IsWordChar(c)) {
      size_t end = ScanWord(s, i);
      CodePoints word = s.substr(i, end - i);
      // A word cut short in speech keeps its hyphen: "I l- I learned", "the proble-."
      if (end < s.size() && IsHyphen(s[end]) && IsLetter(s[end - 1]) &&
          (end + 1 == s.size() || IsSpace(s[end + 1]) || IsDash(s[end + 1]) || s[end + 1] == U',' ||
           s[end + 1] == U'.' || s[end + 1] == U'?' || s[end + 1] == U'!')) {
        word += s[end];
        ++end;
        EmitWord(word, &tokens);
        i = end;
        continue;
      }
      if (end < s.size() && s[end] == U'.' && !(end + 1 < s.size() && s[end + 1] == U'.') &&
          KeepsPeriod(word, s, end, tokens.empty())) {
        word += U'.';
        ++end;
      }
      EmitWord(word, &tokens);
      i = end;
      continue;
    }

    // Hashtags and handles: "#research", "@cky".
    if ((c == U'#' || c == U'@') && opening_context && i + 1 < s.size() && IsLetter(s[i + 1])) {
      size_t end = ScanWord(s, i + 1);
      tokens.push_back(s.substr(i, end - i));
      i = end;
      continue;
    }

    // Runs of one punctuation character.
    size_t run = 1;
    while (i + run < s.size() && s[i + run] == c) ++run;

    if (c == U'.' && run == 1 && opening_context && i + 1 < s.size() && IsDigit(s[i + 1])) {
      size_t end = ScanWord(s, i + 1);  // a decimal without its leading zero: ".265"
      tokens.push_back(s.substr(i, end - i));
      i = end;
    } else if (c == U'.') {
      tokens.push_back(run >= 3 ? CodePoints(U"...") : CodePoints(run, U'.'));
      i += run;
    } else if (c == U'\u2026') {  // …
      tokens.push_back(ascii ? CodePoints(U"...") : CodePoints(1, c));
      i += 1;
    } else if (IsHyphen(c) && run >= 2) {
      tokens.push_back(ascii ? CodePoints(U"--") : s.substr(i, run));
      i += run;
    } else if (IsDash(c)) {
      tokens.push_back(ascii ? CodePoints(U"--") : s.substr(i, run));
      i += run;
    } else if (c == U'"') {
      // A quote followed by a space, the end or closing punctuation closes an open quote, or
      // one after a dash ("--\" he said"); otherwise it opens after a space or bracket.
      char32_t next = i + 1 < s.size() ? s[i + 1] : U' ';
      bool next_closes = IsSpace(next) || next == U',' || next == U'.' || next == U';' ||
                         next == U':' || next == U'!' || next == U'?' ||
                         u_charType(next) == U_END_PUNCTUATION;
      bool after_dash = i > 0 && (IsDash(s[i - 1]) || IsHyphen(s[i - 1]));
      bool opens = opening_context && !(next_closes && (double_quote_open || after_dash));
      tokens.push_back(opens ? CodePoints(U"``") : CodePoints(U"''"));
      double_quote_open = opens;
      i += 1;
    } else if (c == U'`' && run >= 2) {
      tokens.push_back(U"``");
      double_quote_open = true;
      i += 2;
    } else if (IsApostrophe(c) && run >= 2) {
      tokens.push_back(U"''");
      double_quote_open = false;
      i += 2;
    } else if (c == U'\u201C' || c == U'\u201E' || c == U'\u00AB') {  // “ „ «
      tokens.push_back(U"``");
      double_quote_open = true;
      i += 1;
    } else if (c == U'\u201D' || c == U'\u00BB') {  // ” »
      tokens.push_back(U"''");
      double_quote_open = false;
      i += 1;
    } else if (c == U'`' || c == U'\u2018') {  // ` ‘
      tokens.push_back(U"`");
      i += 1;
    } else if (IsApostrophe(c)) {
      // "'til", "'em", "'90s" stay whole; otherwise an opening or closing single quote.
      if (opening_context && i + 1 < s.size() && IsWordChar(s[i + 1])) {
        size_t end = ScanWord(s, i + 1);
        CodePoints rest = s.substr(i + 1, end - i - 1);
        // "'71", "'90s", "'60's"
        bool decade = rest.size() >= 2 && IsDigit(rest[0]) && IsDigit(rest[1]) &&
                      (rest.size() == 2 || rest.substr(2) == U"s" || rest.substr(2) == U"'s" ||
                       rest.substr(2) == U"\u2019s");
        if (decade || apostrophe_words.count(Lowercase(rest)) > 0) {
          CodePoints word = CodePoints(1, ascii ? U'\'' : c) + rest;
          tokens.push_back(word);
          i = end;
          continue;
        }
      }
      tokens.push_back(opening_context ? CodePoints(U"`") : CodePoints(U"'"));
      i += 1;
    } else if (options.ptb_brackets &&
               (c == U'(' || c == U')' || c == U'[' || c == U']' || c == U'{' || c == U'}')) {
      static constexpr std::array<std::pair<char32_t, const char32_t*>, 6> kBrackets = {{
          {U'(', U"-LRB-"},
          {U')', U"-RRB-"},
          {U'[', U"-LSB-"},
          {U']', U"-RSB-"},
          {U'{', U"-LCB-"},
          {U'}', U"-RCB-"},
      }};
      for (const auto& [bracket, name] : kBrackets) {
        if (bracket == c) tokens.push_back(name);
      }
      i += 1;
    } else {
      // Any other punctuation or symbol is one token, with the combining marks that follow it;
      // a run of one math or other symbol ("××", "**", "==") stays together.
      int8_t type = u_charType(c);
      bool symbol = type == U_MATH_SYMBOL || type == U_OTHER_SYMBOL || c == U'*';
      size_t end = symbol ? i + run : i + 1;
      while (end < s.size() && IsMark(s[end])) ++end;
      tokens.push_back(s.substr(i, end - i));
      i = end;
    }
  }
  std::vector<std::string> out;
  out.reserve(tokens.size());
  for (const CodePoints& token : tokens) out.push_back(ToUtf8(token));
  return out;
}

// ---- Paragraphs ------------------------------------------------------------------------------

namespace {

bool IsBlankLine(std::string_view line) {
  for (char ch : line) {
    if (ch != ' ' && ch != '\t' && ch != '\r' && ch != '\f' && ch != '\v') return false;
  }
  return true;
}

}  // namespace

bool ParagraphReader::Next(std::string* paragraph) {
  paragraph->clear();
  std::string line;
  bool any = false;
  while (std::getline(in_, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (IsBlankLine(line)) {
      if (any) return true;
      continue;
    }
    if (any) paragraph->push_back('\n');
    paragraph->append(line);
    any = true;
  }
  return any;
}

std::vector<std::string> SplitParagraphs(std::string_view text) {
  std::istringstream in{std::string(text)};
  ParagraphReader reader(in);
  std::vector<std::string> paragraphs;
  std::string paragraph;
  while (reader.Next(&paragraph)) paragraphs.push_back(paragraph);
  return paragraphs;
}

}  // namespace cky
