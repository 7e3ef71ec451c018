// Where `cky parse` and `cky tokenize` get their sentences from, one at a time, as soon as each
// has arrived: tokenized lines, raw text one sentence per line, or raw text paragraphs split into
// sentences. Ready() tells whether the next sentence can be had without waiting for input, so that
// a reader can batch what has arrived and go to work when the input stalls.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/input_file.h"
#include "common/status.h"
#include "text/tokenizer.h"

namespace cky::apps {

enum class InputForm {
  kTokenized,        // one sentence per line, tokens separated by whitespace (Berkeley's input)
  kSentencePerLine,  // raw text, one sentence per line: tokenized, never split
  kParagraphs,       // raw text; blank lines separate paragraphs, split into sentences
};

// A token that is a round bracket, in the Penn Treebank's escaped form: "(" -> "-LRB-", ")" ->
// "-RRB-"; other tokens as given. A bare round bracket would make an unbalanced tree ("(CC ()").
// Square and curly brackets stay: they break no tree, and treebanks differ on them (GUM keeps
// "[" as a word tagged -LRB-, the WSJ writes -LCB- for "{").
std::string EscapeBracketToken(const std::string& token);

class SentenceSource {
 public:
  // `input` must outlive the source. Fails when the tokenizer cannot be built. Each line holding
  // invalid UTF-8 or a NUL byte is warned about on stderr (naming the file and line), the first
  // few one by one; each such byte is read, parsed and printed as U+FFFD. A UTF-8 byte-order mark
  // at the start of the input is dropped.
  static StatusOr<std::unique_ptr<SentenceSource>> Create(InputFile& input, InputForm form,
                                                          const TokenizerOptions& tokenizer);
  ~SentenceSource();

  // The next sentence's tokens (brackets escaped, see EscapeBracketToken); false at the end of
  // the input. A blank line is an empty sentence in the line forms.
  bool Next(std::vector<std::string>* tokens);
  // True when Next will not wait for input (a sentence is known, or the end of input is).
  bool Ready();
  // Lines read so far; lines with invalid UTF-8 or NUL bytes.
  int64_t lines_read() const { return lines_read_; }
  int64_t invalid_utf8_lines() const { return invalid_utf8_lines_; }

 private:
  SentenceSource(InputFile& input, InputForm form, Tokenizer tokenizer);
  // Reads one line; false at the end of input.
  bool ReadLine(std::string* line);
  // Reads lines until a paragraph is complete (a blank line or the end of input) or, when
  // `only_ready`, until reading would wait. Moves a complete paragraph's sentences to pending_.
  void FillPending(bool only_ready);

  InputFile& input_;
  InputForm form_;
  Tokenizer tokenizer_;
  std::vector<std::vector<std::string>> pending_;  // sentences known, in order
  size_t next_pending_ = 0;
  std::string paragraph_;  // lines of an unfinished paragraph
  bool ended_ = false;
  int64_t lines_read_ = 0;
  int64_t invalid_utf8_lines_ = 0;
};

}  // namespace cky::apps
