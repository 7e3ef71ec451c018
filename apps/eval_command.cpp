// `cky eval GOLD TEST`: bracketing precision, recall and F1 with EVALB's numbers and report layout.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "apps/command_util.h"
#include "apps/commands.h"
#include "common/input_file.h"
#include "eval/evalb.h"
#include "treebank/reader.h"

namespace cky::apps {
namespace {

struct EvalOptions {
  std::string gold_path;
  std::string test_path;
  std::string params_path;
  int cutoff = -1;
  int max_error = -1;
  bool no_error_limit = false;
  bool summary_only = false;
  std::string layout = "auto";
  bool strip_root = false;
  bool json = false;
};

void RunEval(const EvalOptions& options) {
  // Before any stream is opened: InputFile shares std::cin's buffer, which this replaces.
  std::ios::sync_with_stdio(false);
  EvalbParams params = EvalbParams::Collins();
  if (!options.params_path.empty()) {
    std::vector<std::string> warnings;
    auto read = ReadEvalbParamsFile(options.params_path, &warnings);
    if (!read.ok()) {
      spdlog::error("{}", read.status().message());
      throw CLI::RuntimeError(1);
    }
    for (const std::string& warning : warnings) spdlog::warn("{}", warning);
    params = std::move(*read);
  }
  if (options.cutoff >= 0) params.cutoff_len = options.cutoff;
  if (options.max_error >= 0) params.max_error = options.max_error;
  if (options.no_error_limit) params.max_error = INT_MAX;

  if (options.gold_path == "-" && options.test_path == "-") {
    spdlog::error("only one of GOLD and TEST can be standard input");
    throw CLI::RuntimeError(2);
  }
  auto gold_file = InputFile::Open(options.gold_path);
  if (!gold_file.ok()) {
    spdlog::error("{}", gold_file.status().message());
    throw CLI::RuntimeError(1);
  }
  auto test_file = InputFile::Open(options.test_path);
  if (!test_file.ok()) {
    spdlog::error("{}", test_file.status().message());
    throw CLI::RuntimeError(1);
  }
  // An empty file (no bytes at all, not even blank lines, which would be sentences without a
  // parse) has nothing to score: EVALB would print a report of zeros.
  for (InputFile* file : {gold_file->get(), test_file->get()}) {
    if (file->stream().peek() == std::char_traits<char>::eof() && !file->stream().bad()) {
      spdlog::error("{}: the file is empty: no trees to score", file->path());
      throw CLI::RuntimeError(1);
    }
  }
  EvalbReportOptions report_options;
  report_options.layout = options.layout == "line"        ? TreeLayout::kOnePerLine
                          : options.layout == "multiline" ? TreeLayout::kMultiLine
                                                          : TreeLayout::kAuto;
  report_options.sentence_lines = !options.summary_only;
  report_options.strip_root = options.strip_root;
  report_options.json = options.json;
  report_options.on_error = [](const std::string& message) { spdlog::warn("{}", message); };
  const bool complete =
      WriteEvalbReport((*gold_file)->stream(), options.gold_path, (*test_file)->stream(),
                       options.test_path, params, report_options, std::cout);
  std::ofstream no_file;
  FinishOutput(std::cout, no_file, "-");
  for (const auto* file : {&*gold_file, &*test_file}) {
    if (Status read = (*file)->ReadStatus(); !read.ok()) Fail(read.message());
  }
  if (!complete) {
    spdlog::error(
        "stopped after too many errors, as EVALB does with MAX_ERROR {} (no summary; "
        "--no-error-limit scores every sentence)",
        params.max_error);
    throw CLI::RuntimeError(1);
  }
}

}  // namespace

void AddEvalCommand(CLI::App& app) {
  auto options = std::make_shared<EvalOptions>();
  CLI::App* eval = app.add_subcommand(
      "eval",
      "Score parses against gold trees: bracketing recall, precision, F1, crossing brackets and "
      "tagging accuracy, printed exactly as EVALB prints them (same layout, same numbers). "
      "Sentences pair up in order; a blank line in a one-tree-per-line file is a sentence without "
      "a parse (skipped). Without --params, COLLINS.prm's settings are used. An empty file "
      "(no bytes at all) is an error (exit 1).");
  Shown(eval->add_option("GOLD", options->gold_path,
                         "Gold trees (Penn Treebank brackets, one per line or spread over lines; "
                         "plain, gzip, bzip2, xz or zstd; - for standard input)")
            ->required(),
        "FILE");
  Shown(eval->add_option("TEST", options->test_path,
                         "Trees to score, in the same order as GOLD (same formats; - for "
                         "standard input)")
            ->required(),
        "FILE");
  Shown(eval->add_option(
            "-p,--params", options->params_path,
            "EVALB parameter file (COLLINS.prm style: DELETE_LABEL, DELETE_LABEL_FOR_LENGTH, "
            "EQ_LABEL, EQ_WORD, QUOTE_LABEL, CUTOFF_LEN, LABELED, MAX_ERROR; DEBUG is "
            "ignored). Settings it does not give take EVALB's built-in values, as with "
            "`evalb -p`"),
        "FILE");
  Shown(eval->add_option("-c,--cutoff", options->cutoff,
                         "Length cutoff of the second summary block (overrides CUTOFF_LEN; "
                         "default 40)")
            ->check(AtLeast(0)),
        "N");
  Shown(eval->add_option("-e,--max-error", options->max_error,
                         "Stop, as EVALB does, when the error count exceeds this plus one "
                         "(overrides MAX_ERROR; default 10)")
            ->check(AtLeast(0)),
        "N");
  eval->add_flag("--no-error-limit", options->no_error_limit,
                 "Never stop on errors: score every sentence and always print the summary");
  eval->add_flag("--summary-only", options->summary_only,
                 "Print only the totals line and the summary blocks, not the per-sentence lines");
  Shown(eval->add_option(
                "--layout", options->layout,
                "How trees sit in both files: line (one per line, EVALB's input; a blank line is "
                "a sentence without a parse), multiline (trees spread over indented lines, blank "
                "lines ignored), or auto (multiline when a tree among the first 200 lines "
                "continues on an indented line)")
            ->check(OneOf({"auto", "line", "multiline"}))
            ->capture_default_str(),
        "{auto,line,multiline}");
  eval->add_flag("--strip-root", options->strip_root,
                 "Read a root labelled ROOT or TOP (as in GUM's trees or a treebank's TOP "
                 "wrapper) as the unlabelled root ( ...) that cky and the Berkeley parser print, "
                 "in both files: the same scores as after `sed 's/^(ROOT /( /'`. EVALB itself "
                 "counts the root bracket, so ROOT against an unlabelled root is a miss");
  eval->add_flag("--json", options->json,
                 "Print the report as one JSON object: \"sentences\" (one object per sentence, "
                 "left out with --summary-only), \"all\" and \"cutoff\" (counts and unrounded "
                 "recall, precision, f1, ...)");
  eval->callback([options] { RunEval(*options); });
}

}  // namespace cky::apps
