#include "apps/sentence_source.h"

#include <spdlog/spdlog.h>

#include <istream>

#include "common/sentence_file.h"

namespace cky::apps {
namespace {

constexpr int64_t kInvalidUtf8Warnings = 5;

bool IsBlank(const std::string& line) {
  return line.find_first_not_of(" \t\r\f\v") == std::string::npos;
}

}  // namespace

StatusOr<std::unique_ptr<SentenceSource>> SentenceSource::Create(
    InputFile& input, const SentenceSourceOptions& options) {
  auto tokenizer = Tokenizer::Create(options.tokenizer);
  if (!tokenizer.ok()) return tokenizer.status();
  return std::unique_ptr<SentenceSource>(new SentenceSource(input, options, std::move(*tokenizer)));
}

SentenceSource::SentenceSource(InputFile& input, const SentenceSourceOptions& options,
                               Tokenizer tokenizer)
    : input_(input), options_(options), tokenizer_(std::move(tokenizer)) {}

SentenceSource::~SentenceSource() = default;

bool SentenceSource::ReadLine(std::string* line) {
  if (!std::getline(input_.stream(), *line)) return false;
  ++lines_read_;
  if (!line->empty() && line->back() == '\r') line->pop_back();
  // A byte-order mark (Windows editors write one) is no part of the first word.
  if (lines_read_ == 1) StripByteOrderMark(line);
  // What was read is what is parsed and printed: U+FFFD, never the raw bytes.
  const size_t bad = ReplaceInvalidUtf8(line);
  if (bad != std::string::npos) {
    if (++invalid_utf8_lines_ <= kInvalidUtf8Warnings) {
      spdlog::warn(
          "{}:{}: invalid UTF-8 or a NUL byte at byte {} of the line (each bad byte is read as "
          "U+FFFD){}",
          input_.path(), lines_read_, bad + 1,
          invalid_utf8_lines_ == kInvalidUtf8Warnings
              ? "; further lines with invalid UTF-8 are not reported"
              : "");
    }
  }
  std::string evidence;
  if (options_.warn_if_tokenized && !warned_tokenized_ && options_.form != InputForm::kTokenized &&
      LooksTokenized(*line, &evidence)) {
    warned_tokenized_ = true;
    spdlog::warn(
        "{}:{}: the input looks tokenized already ({}); it is read as raw text, split into "
        "sentences and tokenized again: give --tokenized to read one tokenized sentence per line",
        input_.path(), lines_read_, evidence);
  }
  return true;
}

void SentenceSource::AddPending(std::vector<std::string> tokens) {
  if (options_.convention) ApplyTokenConvention(*options_.convention, &tokens, &tokenizer_);
  pending_.push_back(std::move(tokens));
}

void SentenceSource::FillPending(bool only_ready) {
  if (next_pending_ == pending_.size()) {
    pending_.clear();
    next_pending_ = 0;
  }
  std::string line;
  while (!ended_) {
    if (only_ready && !input_.LineReady()) return;
    if (!ReadLine(&line)) {
      ended_ = true;
      break;
    }
    if (options_.form == InputForm::kTokenized) {
      AddPending(SplitWhitespace(line));
      return;
    }
    if (options_.form == InputForm::kSentencePerLine) {
      AddPending(tokenizer_.Tokenize(line));
      return;
    }
    if (!IsBlank(line)) {
      if (!paragraph_.empty()) paragraph_.push_back('\n');
      paragraph_.append(line);
      continue;
    }
    if (!paragraph_.empty()) break;  // a blank line ends the paragraph
  }
  // A blank line or the end of input completed the paragraph: its sentences are known.
  if (paragraph_.empty()) return;
  for (const std::string& sentence : tokenizer_.SplitSentences(paragraph_)) {
    AddPending(tokenizer_.Tokenize(sentence));
  }
  paragraph_.clear();
}

bool SentenceSource::Next(std::vector<std::string>* tokens) {
  while (next_pending_ == pending_.size()) {
    if (ended_) return false;
    FillPending(/*only_ready=*/false);
  }
  *tokens = std::move(pending_[next_pending_++]);
  return true;
}

bool SentenceSource::Ready() {
  if (next_pending_ < pending_.size() || ended_) return true;
  FillPending(/*only_ready=*/true);
  return next_pending_ < pending_.size() || ended_;
}

}  // namespace cky::apps
