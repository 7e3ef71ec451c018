// `cky tokenize`: raw text in, one Penn Treebank tokenized sentence per line out.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "apps/command_util.h"
#include "apps/commands.h"
#include "common/input_file.h"
#include "text/tokenizer.h"

namespace cky::apps {
namespace {

struct TokenizeArgs {
  std::string input = "-";
  std::string output = "-";
  bool split_hyphens = false;
  bool keep_brackets = false;
  bool keep_unicode_punctuation = false;
  bool no_sentence_split = false;
};

void RunTokenize(const TokenizeArgs& args) {
  TokenizerOptions options;
  options.split_hyphens = args.split_hyphens;
  options.ptb_brackets = !args.keep_brackets;
  options.ascii_punctuation = !args.keep_unicode_punctuation;
  StatusOr<Tokenizer> tokenizer = Tokenizer::Create(options);
  if (!tokenizer.ok()) {
    spdlog::error("{}", tokenizer.status().message());
    throw CLI::RuntimeError(1);
  }
  StatusOr<std::unique_ptr<InputFile>> input = InputFile::Open(args.input);
  if (!input.ok()) {
    spdlog::error("{}", input.status().message());
    throw CLI::RuntimeError(1);
  }
  std::ofstream output_file;
  std::ostream& out = OpenOutput(args.output, output_file);

  ParagraphReader reader((*input)->stream());
  std::string paragraph;
  long sentences = 0;
  while (reader.Next(&paragraph)) {
    std::vector<std::string> pieces;
    if (args.no_sentence_split) {
      // One sentence per non-blank line.
      size_t start = 0;
      while (start <= paragraph.size()) {
        size_t end = paragraph.find('\n', start);
        if (end == std::string::npos) end = paragraph.size();
        pieces.push_back(paragraph.substr(start, end - start));
        start = end + 1;
      }
    } else {
      pieces = tokenizer->SplitSentences(paragraph);
    }
    for (const std::string& sentence : pieces) {
      std::vector<std::string> tokens = tokenizer->Tokenize(sentence);
      if (tokens.empty()) continue;
      for (size_t i = 0; i < tokens.size(); ++i) out << (i ? " " : "") << tokens[i];
      out << '\n';
      ++sentences;
    }
  }
  out.flush();
  if (reader.bad()) {
    spdlog::error("error while reading '{}'", args.input);
    throw CLI::RuntimeError(1);
  }
  if (!out) {
    spdlog::error("error while writing '{}'", args.output);
    throw CLI::RuntimeError(1);
  }
  spdlog::debug("{} sentences", sentences);
}

}  // namespace

void AddTokenizeCommand(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* command = app.add_subcommand(
      "tokenize",
      "Split raw UTF-8 text into sentences and Penn Treebank tokens; print one sentence per line, "
      "tokens separated by single spaces. Blank lines separate paragraphs: no sentence spans one.");
  command
      ->add_option("-i,--input", args->input,
                   "Text to read (plain or gzipped; '-' for standard input)")
      ->capture_default_str();
  command->add_option("-o,--output", args->output, "Where to write ('-' for standard output)")
      ->capture_default_str();
  command->add_flag("--split-hyphens", args->split_hyphens,
                    "Split hyphenated words (\"well - known\") as GUM and OntoNotes do; by "
                    "default they stay whole as in the WSJ treebank");
  command->add_flag("--keep-brackets", args->keep_brackets,
                    "Print ( ) [ ] { } as they are instead of -LRB- -RRB- -LSB- ...");
  command->add_flag("--keep-unicode-punctuation", args->keep_unicode_punctuation,
                    "Keep dashes, ellipses and curly apostrophes as written instead of -- ... '");
  command->add_flag("--one-sentence-per-line", args->no_sentence_split,
                    "Take each non-blank input line as one sentence (no sentence splitting)");
  command->callback([args] { RunTokenize(*args); });
}

}  // namespace cky::apps
