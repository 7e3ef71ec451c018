// Coarse-to-fine pruning against exact parsing, same grammar, same sentences, same run: sentences/s
// of the pruned CPU backends (Berkeley's default and -accurate thresholds) and of the exact CPU
// backends, trees identical to the exact ones, and per pre-parse level the share of chart items
// kept and the time spent. Sentences: one tokenized sentence per line.
//
//   pruning_bench --grammar gum_sm5.gr --sentences s50.words --threads 1 [--decoder max-rule]
//                 [--no-exact]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "common/sentence_file.h"
#include "grammar_io/grammar_argument.h"
#include "lexicon/lexicon.h"
#include "parser/coarse_to_fine.h"
#include "parser/parser.h"

namespace {

using namespace cky;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Coarse-to-fine pruning against exact parsing (CPU)"};
  std::string grammar_path, sentences_path, decoder = "max-rule";
  int threads = 1;
  bool no_exact = false;
  app.add_option("-g,--grammar", grammar_path, "Grammar (any format cky parse reads)")->required();
  app.add_option("-s,--sentences", sentences_path, "Tokenized sentences, one per line")->required();
  app.add_option("--decoder", decoder, "max-rule or viterbi")->capture_default_str();
  app.add_option("-t,--threads", threads, "CPU threads")->capture_default_str();
  app.add_flag("--no-exact", no_exact, "Skip the exact (unpruned) run");
  CLI11_PARSE(app, argc, argv);

  auto model = LoadGrammarArgument(grammar_path, {});
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().message().c_str());
    return 1;
  }
  const Grammar& g = model->grammar;
  auto lexicon = Lexicon::Build(*model);
  auto sentences = ReadTokenizedSentences(sentences_path);
  if (!lexicon.ok() || !sentences.ok()) {
    std::fprintf(stderr, "cannot build the lexicon or read %s\n", sentences_path.c_str());
    return 1;
  }
  size_t words = 0;
  for (const auto& s : *sentences) words += s.size();
  std::printf(
      "grammar %s: %d states, %lld binary rules; %zu sentences, mean length %.1f; %s, %d "
      "thread(s)\n\n",
      grammar_path.c_str(), g.num_states(), (long long)g.num_binary_rules(), sentences->size(),
      double(words) / sentences->size(), decoder.c_str(), threads);

  std::vector<ParseOutcome> exact;
  std::printf("%-28s %10s %12s %10s\n", "backend", "seconds", "sentences/s", "= exact");
  if (!no_exact) {
    auto backend = MakeBackend(g, {.backend = "cpu", .threads = threads, .decoder = decoder});
    Parser parser(g, *lexicon, std::move(*backend));
    const auto start = std::chrono::steady_clock::now();
    exact = parser.Parse(*sentences);
    const double seconds = Seconds(start);
    std::printf("%-28s %10.2f %12.2f %10s\n", ("exact " + decoder).c_str(), seconds,
                sentences->size() / seconds, "-");
  }
  for (bool accurate : {false, true}) {
    const PruningOptions options = PruningOptions::Berkeley(accurate);
    const auto setup_start = std::chrono::steady_clock::now();
    auto backend = MakePrunedCpuBackend(g, decoder, options, threads);
    if (!backend.ok()) {
      std::fprintf(stderr, "%s\n", backend.status().message().c_str());
      return 1;
    }
    const double setup = Seconds(setup_start);
    Parser parser(g, *lexicon, std::move(*backend));
    const auto start = std::chrono::steady_clock::now();
    auto pruned = parser.Parse(*sentences);
    const double seconds = Seconds(start);
    int same = 0;
    for (size_t i = 0; i < exact.size(); ++i) same += exact[i].tree == pruned[i].tree;
    char agree[32] = "-";
    if (!exact.empty()) std::snprintf(agree, sizeof agree, "%d/%zu", same, exact.size());
    std::printf("%-28s %10.2f %12.2f %10s   (projections built in %.2f s)\n",
                (std::string(accurate ? "pruned -accurate " : "pruned ") + decoder).c_str(),
                seconds, sentences->size() / seconds, agree, setup);
  }

  // Where the time goes: the pre-parse levels alone, one thread.
  for (bool accurate : {false, true}) {
    auto pruner = CoarseToFinePruner::Create(g, PruningOptions::Berkeley(accurate));
    Parser scorer(g, *lexicon, MakeCpuBackend(g, 1));
    PruningStats stats;
    for (const auto& s : *sentences) {
      ItemMask mask;
      (*pruner)->Prune(scorer.ScoreWords(s), &mask, &stats);
    }
    std::printf("\n%s thresholds, pre-parse levels (one thread):\n",
                accurate ? "-accurate" : "default");
    std::printf("%6s %8s %10s %14s %14s %8s %10s\n", "level", "states", "rules", "items in",
                "items kept", "kept", "seconds");
    for (int k = 0; k < (*pruner)->num_levels(); ++k) {
      std::printf("%6d %8d %10lld %14lld %14lld %7.2f%% %10.2f\n", k,
                  (*pruner)->level(k).grammar.num_states(),
                  (long long)(*pruner)->level(k).grammar.num_binary_rules(),
                  (long long)stats.items_before[k], (long long)stats.items_after[k],
                  100.0 * stats.items_after[k] / std::max<int64_t>(1, stats.items_before[k]),
                  stats.seconds[k]);
    }
  }
  return 0;
}
