// `cky tokenize`: raw text in, one Penn Treebank tokenized sentence per line out.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "apps/command_util.h"
#include "apps/commands.h"
#include "apps/output_format.h"
#include "apps/sentence_source.h"
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
  bool sentence_per_line = false;
  std::string token_style = "ptb";
};

void RunTokenize(const TokenizeArgs& args) {
  TokenizerOptions options;
  options.split_hyphens = args.split_hyphens;
  options.ptb_brackets = !args.keep_brackets;
  options.ascii_punctuation = !args.keep_unicode_punctuation;
  options.style = args.token_style == "gum" ? TokenStyle::kGum : TokenStyle::kPtb;
  StatusOr<std::unique_ptr<InputFile>> input = InputFile::Open(args.input);
  if (!input.ok()) Fail(input.status().message());
  auto source = SentenceSource::Create(
      **input,
      {.form = args.sentence_per_line ? InputForm::kSentencePerLine : InputForm::kParagraphs,
       .tokenizer = options});
  if (!source.ok()) Fail(source.status().message());
  std::ofstream output_file;
  std::ostream& out = OpenOutput(args.output, output_file);
  ResultWriter writer(out, FlushEachLine(args.output), args.output);

  long sentences = 0;
  std::vector<std::string> tokens;
  while ((*source)->Next(&tokens)) {
    if (tokens.empty()) continue;  // a blank line
    std::string line;
    for (size_t i = 0; i < tokens.size(); ++i) line += (i ? " " : "") + tokens[i];
    writer.Write(line + "\n");
    ++sentences;
    if (!(*source)->Ready()) writer.EndBatch();  // the input stalls: let the reader have these
  }
  writer.EndBatch();
  if (Status read = (*input)->ReadStatus(); !read.ok()) {
    Fail(read.message() + " (after sentence " + std::to_string(sentences) + ")");
  }
  FinishOutput(out, output_file, args.output);
  spdlog::debug("{} sentences", sentences);
}

}  // namespace

void AddTokenizeCommand(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* command = app.add_subcommand(
      "tokenize",
      "Split raw UTF-8 text into sentences and Penn Treebank tokens; print one sentence per line, "
      "tokens separated by single spaces. Blank lines separate paragraphs: no sentence spans one.");
  Shown(command
            ->add_option("-i,--input,INPUT", args->input,
                         "Text to read (plain, gzip, bzip2, xz or zstd); - for standard input. "
                         "Each sentence is written as soon as it is known")
            ->capture_default_str(),
        "FILE");
  Shown(command->add_option("-o,--output", args->output, "Where to write; - for standard output")
            ->capture_default_str(),
        "FILE");
  command->add_flag("--split-hyphens", args->split_hyphens,
                    "Split hyphenated words (\"well - known\") as GUM and OntoNotes do; by "
                    "default they stay whole as in the WSJ treebank");
  command->add_flag("--keep-brackets", args->keep_brackets,
                    "Print ( ) [ ] { } as they are instead of -LRB- -RRB- -LSB- ...");
  command->add_flag("--keep-unicode-punctuation", args->keep_unicode_punctuation,
                    "Keep dashes, ellipses and curly apostrophes as written instead of -- ... '");
  Shown(command
            ->add_option("--token-style", args->token_style,
                         "ptb: double quotes become `` and '', single ones ` and ', [ ] become "
                         "-LSB- -RSB- (the Penn Treebank's words, the WSJ's); gum: \" ' [ ] stay "
                         "as written (GUM's words; `cky parse` uses them for the built-in "
                         "grammar)")
            ->check(OneOf({"ptb", "gum"}))
            ->capture_default_str(),
        "{ptb,gum}");
  command->add_flag("--sentence-per-line", args->sentence_per_line,
                    "Take each non-blank input line as one sentence (no sentence splitting)");
  // The old spelling, hidden.
  command->add_flag("--one-sentence-per-line", args->sentence_per_line)->group("");
  command->callback([args] { RunTokenize(*args); });
}

}  // namespace cky::apps
