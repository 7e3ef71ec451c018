// cky train: treebank files in, a markovized PCFG out in Berkeley's WriteGrammarToTextFile format.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>

#include "apps/command_util.h"
#include "apps/commands.h"
#include "train/pcfg_trainer.h"
#include "treebank/reader.h"

namespace cky::apps {
namespace {

struct TrainArgs {
  std::vector<std::string> treebanks;
  std::string output_prefix;
  PcfgTrainerOptions options;
};

void RunTrain(const TrainArgs& args) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<Tree> trees;
  for (const std::string& path : args.treebanks) {
    auto file_trees = ReadTreebankFile(path);
    if (!file_trees.ok()) Fail(file_trees.status().message());
    for (Tree& tree : *file_trees) trees.push_back(std::move(tree));
  }
  auto text = TrainPcfg(trees, args.options);
  if (!text.ok()) Fail(text.status().message());
  Status written = WriteBerkeleyTextExport(*text, args.output_prefix);
  if (!written.ok()) Fail(written.message());
  spdlog::info(
      "trained on {} trees from {} files in {:.2f} s; wrote {}.{{grammar,lexicon,splits,"
      "words}}",
      trees.size(), args.treebanks.size(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
      args.output_prefix);
}

}  // namespace

void AddTrainCommand(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Estimate a plain (unsplit) PCFG by relative frequency from Penn Treebank files and write it "
      "as a Berkeley WriteGrammarToTextFile export (PREFIX.grammar, .lexicon, .splits, .words) "
      "for `cky parse --grammar PREFIX`. Empty elements (-NONE-) and "
      "function tags are removed and the root is labelled ROOT; rules are binarized the Berkeley "
      "way (X -> @X last) and unary chains closed.");
  Shown(cmd->add_option("TREEBANK", args->treebanks,
                        "Treebank files (bracketed trees, one or several lines each; plain, "
                        "gzip, bzip2, xz or zstd; - for stdin)")
            ->required(),
        "FILE...");
  Shown(cmd->add_option("-o,--output", args->output_prefix,
                        "Output prefix: writes PREFIX.grammar, PREFIX.lexicon, PREFIX.splits and "
                        "PREFIX.words")
            ->required(),
        "PREFIX");
  Shown(cmd->add_option("--horizontal", args->options.horizontal_markovization,
                        "Horizontal markovization: how many following siblings a binarization "
                        "intermediate @X remembers (@NP->_JJ_NN); 0 = none (plain @NP), -1 = all")
            ->check(Between(-1, 100))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--vertical", args->options.vertical_markovization,
                        "Vertical markovization: 1 = plain labels, 2 = phrasal labels carry their "
                        "parent's (NP^S), 3 = and their grandparent's (NP^VP^S)")
            ->check(Between(1, 10))
            ->capture_default_str(),
        "N");
  cmd->add_flag("--tag-annotation", args->options.tag_parent_annotation,
                "Annotate POS tags with their parent's label (IN^PP); the lexicon is then "
                "estimated per annotated tag");
  Shown(cmd->add_option("--rare-word-count", args->options.rare_word_max_count,
                        "Words seen at most this often estimate the unknown-word signature rows "
                        "(UNK-...)")
            ->check(Between(1, 1000))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--signature-smoothing", args->options.signature_smoothing,
                        "Weight of a signature's share among all rare words when estimating "
                        "P(signature | tag) from a tag's own rare words")
            ->check(Between(0.0, 1e6))
            ->capture_default_str(),
        "W");
  Shown(cmd->add_option("--smooth-words-up-to", args->options.smoothed_word_max_count,
                        "Known words seen at most this often may also take the tags that rare "
                        "words take (P(tag | word) smoothed with the rare words' tag "
                        "distribution); 0 = off")
            ->check(Between(0, 1000000))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--word-smoothing", args->options.word_smoothing,
                        "Weight of the rare words' tag distribution in that smoothing")
            ->check(Between(0.0, 1e6))
            ->capture_default_str(),
        "W");
  cmd->callback([args] { RunTrain(*args); });
}

}  // namespace cky::apps
