// cky parse: sentences in, one tree per line out, in input order.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <spdlog/spdlog.h>

#include "apps/commands.h"
#include "common/input_file.h"
#include "cuda/device.h"
#include "grammar_io/berkeley_model.h"
#include "grammar_io/default_grammar.h"
#include "lexicon/lexicon.h"
#include "parser/parser.h"
#include "parser/tree_format.h"

namespace cky::apps {
namespace {

struct ParseArgs {
  std::string grammar;
  std::string input = "-";
  std::string output = "-";
  std::string backend = "auto";
  std::string kernel;
  int threads = 0;
  int max_length = 200;
  int batch_size = 256;
  double min_rule_prob = 0.0;
  bool binarize = false;
  bool substates = false;
  bool scores = false;
  bool backoff = false;
  bool no_cache = false;
  bool no_retry = false;
  bool progress = false;
  bool no_progress = false;
};

std::vector<std::string> SplitTokens(const std::string& line) {
  std::vector<std::string> tokens;
  std::istringstream in(line);
  std::string token;
  while (in >> token) tokens.push_back(token);
  return tokens;
}

[[noreturn]] void Fail(const std::string& message) {
  spdlog::error("{}", message);
  throw CLI::RuntimeError(1);
}

void RunParse(const ParseArgs& args) {
  const auto load_start = std::chrono::steady_clock::now();
  LoadOptions load_options;
  load_options.min_binary_prob = args.min_rule_prob;
  load_options.use_cache = !args.no_cache;
  auto model = args.grammar.empty() ? LoadDefaultGrammar(load_options)
                                    : LoadBerkeleyModel(args.grammar, load_options);
  if (!model.ok()) Fail(model.status().message());
  LexiconOptions lexicon_options;
  lexicon_options.backoff_unknown_words = args.backoff;
  auto lexicon = Lexicon::Build(*model, lexicon_options);
  if (!lexicon.ok()) Fail(lexicon.status().message());
  const Grammar& grammar = model->grammar;
  spdlog::debug("grammar {}: {} symbols, {} states, {} binary and {} unary rules, loaded in {:.2f} s",
                args.grammar, grammar.num_symbols(), grammar.num_states(),
                grammar.num_binary_rules(), grammar.num_unary_rules(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count());

  auto backend = MakeBackend(grammar, {.backend = args.backend, .threads = args.threads,
                                       .kernel = args.kernel});
  if (!backend.ok()) Fail(backend.status().message());
  spdlog::debug("backend: {}{}", (*backend)->name(),
                (*backend)->name().rfind("cuda", 0) == 0 ? " on " + cuda::DeviceDescription() : "");
  Parser parser(grammar, *lexicon, std::move(*backend),
                {.max_length = args.max_length, .retry_with_wider_lexicon = !args.no_retry});

  auto input = InputFile::Open(args.input);
  if (!input.ok()) Fail(input.status().message());
  std::ofstream output_file;
  std::ostream* out = &std::cout;
  if (args.output != "-") {
    output_file.open(args.output);
    if (!output_file) Fail(args.output + ": cannot open for writing");
    out = &output_file;
  }
  const bool show_progress = !args.no_progress && (args.progress || isatty(fileno(stderr)));
  const OutputForm form{.binarize = args.binarize, .substates = args.substates,
                        .scores = args.scores};

  std::istream& in = (*input)->stream();
  long sentence_number = 0, failures = 0;
  const auto parse_start = std::chrono::steady_clock::now();
  std::vector<std::vector<std::string>> batch;
  std::string line;
  bool more = true;
  while (more) {
    batch.clear();
    while (static_cast<int>(batch.size()) < args.batch_size && (more = bool(std::getline(in, line)))) {
      batch.push_back(SplitTokens(line));
    }
    if (batch.empty()) break;
    std::vector<ParseOutcome> outcomes = parser.Parse(batch);
    for (size_t i = 0; i < outcomes.size(); ++i) {
      ++sentence_number;
      if (outcomes[i].status == ParseStatus::kOk) {
        *out << FormatTree(outcomes[i].tree, form) << '\n';
      } else {
        ++failures;
        *out << kNoParseOutput << '\n';
        spdlog::warn("sentence {} ({} words): {}; printed {}", sentence_number, batch[i].size(),
                     outcomes[i].message, kNoParseOutput);
      }
    }
    out->flush();
    if (show_progress) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - parse_start).count();
      std::fprintf(stderr, "\rcky: parsed %ld sentences (%.1f sentences/s)", sentence_number,
                   sentence_number / std::max(seconds, 1e-9));
    }
  }
  if (show_progress) std::fprintf(stderr, "\n");
  if (in.bad()) Fail(args.input + ": read error after sentence " + std::to_string(sentence_number));
  if (!*out) Fail("write error on " + args.output);
  if (failures > 0) {
    spdlog::warn("{} of {} sentences got no tree and were printed as {}", failures,
                 sentence_number, kNoParseOutput);
  }
}

}  // namespace

void AddParseCommand(CLI::App& app) {
  auto args = std::make_shared<ParseArgs>();
  CLI::App* cmd = app.add_subcommand(
      "parse",
      "Parse tokenized sentences (one per line, tokens separated by spaces) into Penn Treebank "
      "trees, one per line, in input order. A sentence that cannot be parsed (no parse, too long, "
      "out of memory) prints (()) and a warning on stderr.");
  cmd->add_option("-g,--grammar", args->grammar,
                  "Grammar: a Berkeley text export PREFIX (PREFIX.grammar + PREFIX.lexicon from "
                  "WriteGrammarToTextFile, or PREFIX.binary + PREFIX.unary from DumpGrammar; "
                  "files may be gzipped) or a .ckybin cache written by `cky convert`; default: "
                  "the built-in English grammar trained on GUM (data/README.md)");
  cmd->add_option("-i,--input", args->input, "Input file, plain or gzipped; - for stdin")
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output, "Output file; - for stdout")->capture_default_str();
  cmd->add_option("-b,--backend", args->backend,
                  "auto: CUDA when a GPU is present, else cpu; cpu: all cores; reference: the "
                  "plain single-threaded reference; cuda: the GPU")
      ->check(CLI::IsMember({"auto", "cpu", "reference", "cuda"}))
      ->capture_default_str();
  cmd->add_option("-k,--kernel", args->kernel,
                  "CUDA kernel variant (see `cky parse --list-kernels`); default: the fastest");
  cmd->add_option("-t,--threads", args->threads, "CPU threads for the cpu backend; 0 = all cores")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--max-length", args->max_length,
                  "Sentences with more words are not parsed (printed as (()) with a warning); "
                  "0 = no limit")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--batch-size", args->batch_size,
                  "Sentences read and parsed together (GPU batches are built from these)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--min-rule-prob", args->min_rule_prob,
                  "Drop binary rules with a smaller probability before parsing (the Berkeley "
                  "parser uses 1e-10); 0 keeps every rule")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_flag("--binarize", args->binarize,
                "Print the binarized tree, keeping the grammar's @ nodes (Berkeley's -binarize)");
  cmd->add_flag("--substates", args->substates,
                "Keep the latent substates in labels, e.g. NP-3 (Berkeley's -substates)");
  cmd->add_flag("--scores", args->scores,
                "Print each node's Viterbi inside log-score after its label (Berkeley's -scores)");
  cmd->add_flag("--backoff", args->backoff,
                "Let unknown words back off, tag by tag, to shorter signatures (UNK-CAPS-s -> "
                "UNK-CAPS -> UNK) for tags their own signature has no lexicon row for. Off by "
                "default: with Berkeley text exports it agrees less with the Berkeley parser");
  cmd->add_flag("--no-retry", args->no_retry,
                "Do not retry a sentence without a parse with the widened lexicon (known words "
                "also taking their signature's scores)");
  cmd->add_flag("--no-cache", args->no_cache,
                "Do not read or write the binary grammar cache (~/.cache/cky)");
  cmd->add_flag("--progress", args->progress, "Show progress on stderr even when not a terminal");
  cmd->add_flag("--no-progress", args->no_progress, "Never show progress");
  cmd->callback([args] { RunParse(*args); });
}

}  // namespace cky::apps
