// Where `cky parse` and `cky tokenize` get their sentences from, one at a time, as soon as each
// has arrived: tokenized lines, raw text one sentence per line, or raw text paragraphs split into
// sentences. Ready() tells whether the next sentence can be had without waiting for input, so that
// a reader can batch what has arrived and go to work when the input stalls.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/input_file.h"
#include "common/status.h"
#include "text/token_convention.h"
#include "text/tokenizer.h"

namespace cky::apps {

enum class InputForm {
  kTokenized,        // one sentence per line, tokens separated by whitespace (Berkeley's input)
  kSentencePerLine,  // raw text, one sentence per line: tokenized, never split
  kParagraphs,       // raw text; blank lines separate paragraphs, split into sentences
};

struct SentenceSourceOptions {
  InputForm form = InputForm::kParagraphs;
  TokenizerOptions tokenizer;  // raw text's; TokenizerOptionsFor(*convention) with a convention
  // When set, every sentence's tokens, tokenized lines' too, are rewritten into the grammar's
  // words (text/token_convention.h: `` '' " -> what the grammar knows, ( -> -LRB-, hyphenated
  // words split for a grammar that splits them, ...).
  std::optional<TokenConvention> convention;
  // Raw text only: warn once (naming the file and line) when a line looks already tokenized
  // (LooksTokenized), which --tokenized would read as it is rather than tokenize again.
  bool warn_if_tokenized = false;
};

class SentenceSource {
 public:
  // `input` must outlive the source. Fails when the tokenizer cannot be built. Each line holding
  // invalid UTF-8 or a NUL byte is warned about on stderr (naming the file and line), the first
  // few one by one; each such byte is read, parsed and printed as U+FFFD. A UTF-8 byte-order mark
  // at the start of the input is dropped.
  static StatusOr<std::unique_ptr<SentenceSource>> Create(InputFile& input,
                                                          const SentenceSourceOptions& options);
  ~SentenceSource();

  // The next sentence's tokens (in the options' convention when one is set); false at the end
  // of the input. A blank line is an empty sentence in the line forms.
  bool Next(std::vector<std::string>* tokens);
  // True when Next will not wait for input (a sentence is known, or the end of input is).
  bool Ready();
  // Lines read so far; lines with invalid UTF-8 or NUL bytes.
  int64_t lines_read() const { return lines_read_; }
  int64_t invalid_utf8_lines() const { return invalid_utf8_lines_; }

 private:
  SentenceSource(InputFile& input, const SentenceSourceOptions& options, Tokenizer tokenizer);
  // Reads one line; false at the end of input.
  bool ReadLine(std::string* line);
  // Reads lines until a paragraph is complete (a blank line or the end of input) or, when
  // `only_ready`, until reading would wait. Moves a complete paragraph's sentences to pending_.
  void FillPending(bool only_ready);
  // Adds one sentence to pending_, in the convention.
  void AddPending(std::vector<std::string> tokens);

  InputFile& input_;
  SentenceSourceOptions options_;
  Tokenizer tokenizer_;
  std::vector<std::vector<std::string>> pending_;  // sentences known, in order
  size_t next_pending_ = 0;
  std::string paragraph_;  // lines of an unfinished paragraph
  bool ended_ = false;
  int64_t lines_read_ = 0;
  int64_t invalid_utf8_lines_ = 0;
  bool warned_tokenized_ = false;
};

}  // namespace cky::apps
