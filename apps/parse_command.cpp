// cky parse: sentences in, one tree per line out, in input order.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "apps/command_util.h"
#include "apps/commands.h"
#include "common/input_file.h"
#include "common/sentence_file.h"
#include "cuda/common/device.h"
#include "grammar_io/grammar_argument.h"
#include "parser/cuda_backend.h"
#include "parser/loaded_parser.h"
#include "parser/tree_format.h"
#include "text/tokenizer.h"

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
  double min_rule_prob = -1.0;  // < 0: 1e-10 for a .gr file (as Berkeley's parser), else 0
  bool binarize = false;
  bool substates = false;
  bool scores = false;
  bool backoff = false;
  bool no_cache = false;
  bool no_retry = false;
  bool progress = false;
  bool no_progress = false;
  bool tokenized = false;
  std::string hyphens = "auto";
  std::string decoder = "max-rule";
  std::string prune = "auto";
  bool accurate = false;  // --accurate: --prune accurate
  bool sentence_likelihood = false;
  bool model_score = false;
};

// Where sentences come from: one tokenized sentence per line, or raw text split into sentences
// and tokenized. Next returns false at the end of the input.
class SentenceSource {
 public:
  virtual ~SentenceSource() = default;
  virtual bool Next(std::vector<std::string>* words) = 0;
};

class TokenizedLines : public SentenceSource {
 public:
  explicit TokenizedLines(std::istream& in) : in_(in) {}
  bool Next(std::vector<std::string>* words) override {
    if (!std::getline(in_, line_)) return false;
    *words = SplitWhitespace(line_);
    return true;
  }

 private:
  std::istream& in_;
  std::string line_;
};

class RawText : public SentenceSource {
 public:
  RawText(std::istream& in, Tokenizer tokenizer)
      : paragraphs_(in), tokenizer_(std::move(tokenizer)) {}
  bool Next(std::vector<std::string>* words) override {
    while (next_ == pending_.size()) {
      std::string paragraph;
      if (!paragraphs_.Next(&paragraph)) return false;
      pending_ = tokenizer_.SplitSentences(paragraph);
      next_ = 0;
    }
    *words = tokenizer_.Tokenize(pending_[next_++]);
    return true;
  }

 private:
  ParagraphReader paragraphs_;
  Tokenizer tokenizer_;
  std::vector<std::string> pending_;
  size_t next_ = 0;
};

// Berkeley's score columns before the tree, tab-separated: P(w) (-sentence_likelihood), then the
// max-rule score (-modelScore, printed "%.8f").
std::string ScorePrefix(const ParseArgs& args, const ParseOutcome& outcome) {
  std::string prefix;
  if (args.sentence_likelihood) {
    prefix +=
        FormatJavaDouble(outcome.status == ParseStatus::kOk ? outcome.log_likelihood : kNegInf) +
        "\t";
  }
  if (args.model_score) {
    char text[64];
    std::snprintf(text, sizeof text, "%.8f",
                  outcome.status == ParseStatus::kOk ? outcome.log_score : kNegInf);
    // Java's String.format prints infinities as "-Infinity".
    prefix += (std::isinf(outcome.log_score) || outcome.status != ParseStatus::kOk)
                  ? std::string("-Infinity")
                  : std::string(text);
    prefix += "\t";
  }
  return prefix;
}

void RunParse(const ParseArgs& args) {
  if (args.decoder != "viterbi" && (args.substates || args.scores)) {
    Fail("--substates and --scores print a Viterbi derivation: add --decoder viterbi", 2);
  }
  if (args.decoder == "viterbi" && args.sentence_likelihood) {
    Fail("--sentence-likelihood needs the max-rule decoder (inside-outside)", 2);
  }
  const auto load_start = std::chrono::steady_clock::now();
  auto loaded = LoadedParser::Load(
      {.grammar = args.grammar,
       .grammar_options = {.min_rule_prob = args.min_rule_prob, .use_cache = !args.no_cache},
       .lexicon = {.backoff_unknown_words = args.backoff},
       .backend = {.backend = args.backend,
                   .threads = args.threads,
                   .kernel = args.kernel,
                   .decoder = args.decoder,
                   .prune = args.accurate ? "accurate" : args.prune},
       .parser = {.max_length = args.max_length, .retry_with_wider_lexicon = !args.no_retry}});
  if (!loaded.ok()) Fail(loaded.status().message());
  const Grammar& grammar = (*loaded)->model().grammar;
  const std::string backend_name = (*loaded)->parser().backend().name();
  spdlog::debug(
      "grammar {}: {} symbols, {} states, {} binary and {} unary rules; loaded, with the {} "
      "backend{}, in {:.2f} s",
      GrammarArgumentName(args.grammar), grammar.num_symbols(), grammar.num_states(),
      grammar.num_binary_rules(), grammar.num_unary_rules(), backend_name,
      backend_name.rfind("cuda", 0) == 0 ? " on " + cuda::DeviceDescription() : "",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count());
  LoadedParser& parser = **loaded;

  auto input = InputFile::Open(args.input);
  if (!input.ok()) Fail(input.status().message());
  std::ofstream output_file;
  std::ostream* out = &OpenOutput(args.output, output_file);
  const bool show_progress = !args.no_progress && (args.progress || isatty(fileno(stderr)));
  const OutputForm form{
      .binarize = args.binarize, .substates = args.substates, .scores = args.scores};

  std::istream& in = (*input)->stream();
  std::unique_ptr<SentenceSource> source;
  if (args.tokenized) {
    source = std::make_unique<TokenizedLines>(in);
  } else {
    TokenizerOptions tokenizer_options;
    // The built-in grammar was trained on GUM, which splits hyphenated words; Berkeley's English
    // grammars were trained on the WSJ, which keeps them whole.
    tokenizer_options.split_hyphens =
        args.hyphens == "split" ||
        (args.hyphens == "auto" && GrammarArgumentSplitsHyphens(args.grammar));
    auto tokenizer = Tokenizer::Create(tokenizer_options);
    if (!tokenizer.ok()) Fail(tokenizer.status().message());
    source = std::make_unique<RawText>(in, std::move(*tokenizer));
  }
  long sentence_number = 0, failures = 0;
  const auto parse_start = std::chrono::steady_clock::now();
  std::vector<std::vector<std::string>> batch;
  std::vector<std::string> words;
  bool more = true;
  while (more) {
    batch.clear();
    while (static_cast<int>(batch.size()) < args.batch_size && (more = source->Next(&words))) {
      batch.push_back(std::move(words));
    }
    if (batch.empty()) break;
    std::vector<ParseOutcome> outcomes = parser.Parse(batch);
    for (size_t i = 0; i < outcomes.size(); ++i) {
      ++sentence_number;
      if (outcomes[i].status == ParseStatus::kOk) {
        *out << ScorePrefix(args, outcomes[i]) << FormatOutcome(outcomes[i], form) << '\n';
        // A tree with a message, e.g. parsed on the CPU because it never fits on the GPU.
        if (!outcomes[i].message.empty()) {
          spdlog::warn("sentence {} ({} words): {}", sentence_number, batch[i].size(),
                       outcomes[i].message);
        }
      } else {
        ++failures;
        *out << ScorePrefix(args, outcomes[i]) << FormatOutcome(outcomes[i], form) << '\n';
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
  if (sentence_number == 0) spdlog::warn("{}: the input holds no sentences", args.input);
  if (failures > 0) {
    spdlog::warn("{} of {} sentences got no tree and were printed as {}", failures, sentence_number,
                 kNoParseOutput);
  }
}

}  // namespace

void AddParseCommand(CLI::App& app) {
  auto args = std::make_shared<ParseArgs>();
  CLI::App* cmd = app.add_subcommand(
      "parse",
      "Parse text into Penn Treebank trees, one line per sentence, in input order. Input is raw "
      "UTF-8 text (split into sentences and tokenized Penn Treebank style; blank lines separate "
      "paragraphs) or, with --tokenized, one tokenized sentence per line. A sentence that cannot "
      "be parsed (no parse, too long, out of memory) prints (()) and a warning on stderr.");
  cmd->add_option("-g,--grammar", args->grammar,
                  "Grammar: a Berkeley .gr file (the Berkeley parser's own grammar, read "
                  "directly, with its lexicon's exact scores), a Berkeley text export PREFIX "
                  "(PREFIX.grammar + PREFIX.lexicon from "
                  "WriteGrammarToTextFile, or PREFIX.binary + PREFIX.unary from DumpGrammar; "
                  "files may be gzipped) or a .ckybin cache written by `cky convert`; default: "
                  "the built-in English grammar trained on GUM (data/README.md)");
  cmd->add_option("-i,--input", args->input, "Input file, plain or gzipped; - for stdin")
      ->capture_default_str();
  cmd->add_flag("--tokenized", args->tokenized,
                "Input holds one tokenized sentence per line (tokens separated by spaces), as "
                "the Berkeley parser reads it; an empty line is an empty sentence and prints (())");
  cmd->add_option("--hyphens", args->hyphens,
                  "Raw text only: keep hyphenated words whole (the WSJ convention of Berkeley's "
                  "English grammars), split them at hyphens (GUM/OntoNotes style), or auto: split "
                  "for the built-in grammar (trained on GUM), keep for a --grammar")
      ->check(CLI::IsMember({"auto", "keep", "split"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output, "Output file; - for stdout")->capture_default_str();
  cmd->add_option("-b,--backend", args->backend,
                  "auto: CUDA when a GPU is present, else cpu; cpu: all cores; reference: the "
                  "plain single-threaded reference; cuda: the GPU")
      ->check(CLI::IsMember({"auto", "cpu", "reference", "cuda"}))
      ->capture_default_str();
  cmd->add_option("-k,--kernel", args->kernel,
                  "CUDA kernel variant (the names above). Default: the first, the fastest "
                  "measured (bench/RESULTS.md); the others are the design space of Yi et al. "
                  "(2011), kept for measurement. Every variant gives the same trees")
      ->check(CLI::IsMember(CudaKernelNames()));
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
                  "Drop binary rules with a smaller probability before parsing; 0 keeps every "
                  "rule. Default: 1e-10 for a .gr file (what the Berkeley parser does, so that "
                  "trees match its own), 0 for text exports and caches")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--decoder", args->decoder,
                  "viterbi: the grammar's single best derivation (Berkeley's -viterbi), exact; "
                  "max-rule: the tree whose rules have the largest product of posterior "
                  "probabilities, from exact inside-outside over the latent substates (the "
                  "Berkeley parser's default, more accurate). With a text-export grammar, which "
                  "holds only Viterbi-closed unary rules, max-rule sums over those (an "
                  "approximation; a .gr file has the exact sum-closed unaries)")
      ->check(CLI::IsMember({"viterbi", "max-rule"}))
      ->capture_default_str();
  cmd->add_option("--prune", args->prune,
                  "Coarse-to-fine pruning (Petrov & Klein 2007, as the Berkeley parser): parse "
                  "first with coarser projections of the grammar and skip the chart items they "
                  "find very unlikely (cpu backend only). off: exact, every item considered; "
                  "fast (or on): the Berkeley parser's default thresholds; accurate: its "
                  "-accurate ones; safe: 4 nats below those, the trees of exact parsing on 97% of "
                  "GUM test sentences (gum_sm5.gr); auto: safe for max-rule and fast for Viterbi "
                  "on the cpu backend (the fastest settings within 0.05 F1 of exact, measured on "
                  "GUM), off on the GPU (no GPU pruning yet) and for the reference backend")
      ->check(CLI::IsMember({"auto", "off", "on", "fast", "accurate", "safe"}))
      ->capture_default_str();
  cmd->add_flag("--accurate", args->accurate,
                "Same as --prune accurate (the Berkeley parser's -accurate)");
  cmd->add_flag("--sentence-likelihood", args->sentence_likelihood,
                "Print log P(words), the sum over every tree, before each tree, tab-separated "
                "(Berkeley's -sentence_likelihood; max-rule decoder)");
  cmd->add_flag("--model-score", args->model_score,
                "Print the max-rule score (log of the product of the tree's rule posteriors) "
                "before each tree, tab-separated, as %.8f (Berkeley's -modelScore)");
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
