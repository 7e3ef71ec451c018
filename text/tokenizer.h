// Raw text to Penn Treebank tokens: paragraphs, sentences, tokens.
//
// Worked example (default options):
//
//   Text in (UTF-8; a blank line separates paragraphs, a single newline is a space):
//     Mr. Smith didn't pay $1,000.50 (see http://example.com/a?b=1). “Why?” he asked.
//     Dr. Jones works for Acme Inc. in the U.S., e.g. on weekends...
//
//   SplitAndTokenize(text) gives three sentences of tokens:
//     Mr. Smith did n't pay $ 1,000.50 -LRB- see http://example.com/a?b=1 -RRB- .
//     `` Why ? '' he asked .
//     Dr. Jones works for Acme Inc. in the U.S. , e.g. on weekends ...
//
// Conventions (those of the Penn Treebank as the GUM and WSJ trees use them):
// - Clitics split off: n't 's 're 'll 've 'm 'd ("can't" -> "ca n't", "won't" -> "wo n't",
//   "cannot" -> "can not", "gonna" -> "gon na"); a trailing possessive apostrophe ("the boys'")
//   is its own token "'". Curly apostrophes become "'".
// - Double quotes become `` (opening) and '' (closing), by context for '"', by shape for “ ” „;
//   single quotes become ` and ' (with TokenStyle::kGum: " and ', as in GUM). Brackets become
//   -LRB- -RRB- -LSB- -RSB- -LCB- -RCB-.
// - "..." and "…" are one token "..."; two or more hyphens and the dashes — – are "--";
//   runs of one symbol stay one token ("××", "**"); any other punctuation or symbol, "?" and "!"
//   included ("?!" -> "? !"), is a token of its own.
// - Kept whole: numbers with internal commas, periods, colons and slashes ("1,000.50", "10:30",
//   "08/19/2019", ".265"), URLs ("https://...", "www....", "cra.org/path"), e-mail addresses,
//   dotted names ("CBC.ca"),
//   words with internal apostrophes ("O'Neil", "1990's"), hashtags and handles ("#tbt", "@cky"),
//   words cut off in speech ("I l- I learned"), and hyphenated words (see split_hyphens).
// - A period stays on an abbreviation: known ones ("Mr.", "etc.", "Inc."), dotted ones ("U.S.",
//   "e.g.", "Ph.D."), initials ("J.", but "Plan B ." at the end), a list number opening a
//   sentence ("1."), a letter before a number ("c. 1850"), and any word whose period is followed
//   by a lowercase word or a comma. An abbreviation ending a sentence keeps
//   its period and no separate "." is added (as GUM does). Any other period is a token ".".
// - Letters, digits and punctuation are told apart with ICU character properties, so non-ASCII
//   text works ("naïve", "Ávvi", "¿Qué?"). Invalid UTF-8 bytes become U+FFFD.
#pragma once

#include <istream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace cky {

// Which treebank's words quotation marks and square brackets become.
enum class TokenStyle {
  kPtb,  // `` and '' for double quotes, ` and ' for single ones, -LSB- -RSB- for [ ] (the WSJ's)
  kGum,  // " for every double quote and ' for every single one, [ and ] as written (the GUM
         // treebank's words; it tags them `` '' and -LRB- -RRB-). Round brackets stay -LRB- -RRB-.
};

struct TokenizerOptions {
  // Brackets as -LRB- -RRB- -LSB- -RSB- -LCB- -RCB- (false: keep ( ) [ ] { }).
  bool ptb_brackets = true;
  // Dashes — – ― and hyphen runs as "--", "…" as "...", curly apostrophes in clitics as "'"
  // (false: keep those characters as they are; quotes are always `` '' ` ').
  bool ascii_punctuation = true;
  // Split hyphenated words at their hyphens, OntoNotes/GUM style ("well-known" -> "well - known"),
  // except after common prefixes ("non-white", "re-entry") and between digits ("639-3").
  // False keeps hyphenated words whole, as the WSJ treebank does.
  bool split_hyphens = false;
  // Quotation marks and square brackets as the Penn Treebank writes them or as GUM does.
  TokenStyle style = TokenStyle::kPtb;
  // More abbreviations that keep their period and never end a sentence, e.g. {"Approx."}.
  std::vector<std::string> extra_abbreviations;
};

// Splits text into sentences and sentences into tokens. Holds ICU break iterators and regular
// expressions, so reuse one instance; it is movable but not thread-safe (use one per thread).
class Tokenizer {
 public:
  // Fails only when ICU cannot build its sentence break iterator or patterns (missing ICU data).
  static StatusOr<Tokenizer> Create(const TokenizerOptions& options = {});
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // The sentences of one paragraph, each trimmed of surrounding whitespace, in order, none empty.
  // Newlines and other line separators inside the paragraph count as spaces (so hard-wrapped text
  // works), except that a line starting a list item ("1. ", "a) ", "- ", "• ") starts a sentence;
  // text with no non-space character gives no sentence. Whitespace inside a sentence comes out
  // as single spaces where it was a line break, otherwise as written. Uses ICU's sentence break
  // iterator with its standard English abbreviation suppressions ("en@ss=standard"), then
  // re-joins what ICU split after a title ("Dr."), an initial ("J."), one of
  // `extra_abbreviations`, a list number, "?"/"!" before a lowercase word, or an abbreviation
  // ("U.S.") before a capitalized word that seldom opens a sentence ("Senator", not "The");
  // footnote markers ("[12]") stay with the sentence before them.
  std::vector<std::string> SplitSentences(std::string_view paragraph);

  // The PTB tokens of one sentence (see the conventions above); empty for blank input.
  std::vector<std::string> Tokenize(std::string_view sentence);

  // Tokenize(s) for each s in SplitSentences(paragraph) of each paragraph of `text`; paragraphs
  // are separated by blank (whitespace-only) lines, and no sentence spans a blank line.
  std::vector<std::vector<std::string>> SplitAndTokenize(std::string_view text);

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One-shot helper: builds a Tokenizer with `options` and runs SplitAndTokenize.
StatusOr<std::vector<std::vector<std::string>>> SplitAndTokenize(
    std::string_view text, const TokenizerOptions& options = {});

// Reads a text stream one paragraph at a time: a paragraph is a maximal run of non-blank lines
// (a blank line holds only whitespace). Lines keep their order and are joined with '\n'; "\r\n"
// line ends are accepted. Streams of any length use memory for one paragraph only.
class ParagraphReader {
 public:
  explicit ParagraphReader(std::istream& in) : in_(in) {}
  // Sets *paragraph to the next paragraph and returns true; returns false at the end of input.
  bool Next(std::string* paragraph);
  // True when the stream failed for a reason other than reaching its end.
  bool bad() const { return in_.bad(); }

 private:
  std::istream& in_;
};

// Splits text into paragraphs like ParagraphReader does.
std::vector<std::string> SplitParagraphs(std::string_view text);

}  // namespace cky
