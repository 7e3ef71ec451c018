// Coarse-to-fine pruning against exact parsing, same grammar, same sentences, same run: sentences/s
// of the pruned backends (parser/coarse_to_fine.h's fast, accurate, safe; on the CPU, or on the GPU
// with --backend cuda: parser/cuda_backend.h and parser/cuda_max_rule_backend.h, both decoders) and
// of the exact backend of the same kind, trees identical to the exact ones, and per pre-parse level
// the share of chart items kept and the time spent. Times are wall-clock through Parser::Parse
// (lexical scoring, pruning, decoding, tree extraction; the grammar loaded and the backend started
// beforehand, and on the GPU after a warm-up on the first 64 sentences): run it on an otherwise
// idle machine. Sentences: one tokenized sentence per line, or with --lengths, sentences of those
// lengths (cycled up to
// --count) filled with consecutive tokens of the --sentences file.
//
//   pruning_bench --grammar gum_sm5.gr --sentences s50.words --threads 1 [--decoder max-rule]
//                 [--thresholds fast accurate safe] [--no-exact]
//   pruning_bench --backend cuda --decoder viterbi --grammar ../shared/grammars/en_sm6s/en_sm6s
//                 --sentences gum.words --lengths ../shared/bench/wsj23-sentence-lengths.txt
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>

#include "common/sentence_file.h"
#include "cuda/common/device.h"
#include "cuda/inside_outside/inside_outside.h"
#include "cuda/viterbi/viterbi.h"
#include "grammar_io/grammar_argument.h"
#include "lexicon/lexicon.h"
#include "parser/backend_factory.h"
#include "parser/coarse_to_fine.h"
#include "parser/cpu_backend.h"
#include "parser/cuda_backend.h"
#include "parser/cuda_max_rule_backend.h"
#include "parser/cuda_pruner.h"
#include "parser/parser.h"

namespace {

using namespace cky;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// A setting (PruningOptions::FromSpec: a name, or "exact": every threshold -infinity, then
// optionally @LEVELS); a non-negative `min_rule_prob` replaces its rule floor.
StatusOr<PruningOptions> Setting(const std::string& name, double min_rule_prob) {
  auto options = PruningOptions::FromSpec(name);
  if (options.ok() && min_rule_prob >= 0) options->min_rule_prob = min_rule_prob;
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Coarse-to-fine pruning against exact parsing (CPU)"};
  std::string grammar_path, sentences_path, decoder = "max-rule", backend_kind = "cpu",
                                            lengths_path;
  int threads = 1, count = 0;
  double min_rule_prob = -1;
  bool no_exact = false;
  std::vector<std::string> settings = {"fast", "accurate", "safe"};
  app.add_option("-g,--grammar", grammar_path, "Grammar (any format cky parse reads)")->required();
  app.add_option("-s,--sentences", sentences_path, "Tokenized sentences, one per line")->required();
  app.add_option("--decoder", decoder, "max-rule or viterbi")->capture_default_str();
  app.add_option("-t,--threads", threads, "CPU threads")->capture_default_str();
  app.add_flag("--no-exact", no_exact, "Skip the exact (unpruned) run");
  app.add_option("--backend", backend_kind, "cpu or cuda")->capture_default_str();
  app.add_option("--lengths", lengths_path,
                 "Sentence lengths, one a line: the bench's sentences have these lengths, words "
                 "from --sentences");
  app.add_option("--count", count, "With --lengths: this many sentences (0: one per length)");
  int batch_sentences = 1024;
  app.add_option("--batch-sentences", batch_sentences,
                 "cuda pruned backends: sentences per device batch at most")
      ->capture_default_str();
  app.add_option("--min-rule-prob", min_rule_prob,
                 "Leave out projected rules below this probability (default: the setting's, "
                 "1e-4; 0 for exact)");
  std::vector<int> masked_dispatch = {3}, pruning_kernels = {4};
  app.add_option("--pruning-kernels", pruning_kernels,
                 "cuda max-rule: pre-parse kernel variants (DevicePrunedViterbiOptions) of the "
                 "profiled device-work rows, paired with --masked-dispatch's in order")
      ->capture_default_str();
  app.add_option("--masked-dispatch", masked_dispatch,
                 "cuda max-rule: masked dispatch variants (DeviceInsideOutsideOptions) of the "
                 "profiled device-work rows")
      ->capture_default_str();
  bool symbol_masks = false;
  app.add_flag("--symbol-masks", symbol_masks,
               "cuda viterbi: also time the exact float Viterbi kernels (DeviceViterbi, default "
               "kernel, trees read on the device) restricted to each setting's last pre-parse "
               "level's survivors as per-cell symbol masks, against the same kernels unmasked");
  std::vector<int> cells_per_group = {8};
  app.add_option("--cells-per-group", cells_per_group,
                 "cuda max-rule: the pair-sum kernel's target cells a group (8 or 16; "
                 "DeviceInsideOutsideOptions) of the profiled device-work rows, paired with "
                 "--masked-dispatch's in order")
      ->capture_default_str();
  app.add_option("--thresholds", settings,
                 "Pruning settings to run (fast, accurate, safe, balanced; exact: thresholds "
                 "-infinity; T0/T1/...: hierarchy level k's threshold the k-th; NAME@LEVELS "
                 "pre-parses at those levels only, e.g. safe@0,2,4 or -16/-16/-14@0,2,4)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows as they come (long runs under a time limit)

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
  const bool gpu = backend_kind == "cuda";
  if (!lengths_path.empty()) {
    std::vector<std::string> tokens;
    for (const auto& s : *sentences) tokens.insert(tokens.end(), s.begin(), s.end());
    std::vector<int> lengths;
    std::ifstream in(lengths_path);
    for (int n; in >> n;) lengths.push_back(n);
    if (lengths.empty() || tokens.empty()) {
      std::fprintf(stderr, "no lengths in %s or no words\n", lengths_path.c_str());
      return 1;
    }
    const int total = count > 0 ? count : int(lengths.size());
    sentences->clear();
    size_t position = 0;
    for (int i = 0; i < total; ++i) {
      std::vector<std::string> sentence;
      for (int k = 0; k < lengths[i % lengths.size()]; ++k) {
        sentence.push_back(tokens[position++ % tokens.size()]);
      }
      sentences->push_back(std::move(sentence));
    }
  }
  if (gpu) std::printf("device: %s\n", cuda::DeviceDescription().c_str());
  size_t words = 0;
  for (const auto& s : *sentences) words += s.size();
  std::printf(
      "grammar %s: %d states, %lld binary rules; %zu sentences, mean length %.1f; %s, %s, %d "
      "thread(s)\n\n",
      grammar_path.c_str(), g.num_states(), (long long)g.num_binary_rules(), sentences->size(),
      double(words) / sentences->size(), backend_kind.c_str(), decoder.c_str(), threads);
  // The GPU backends grow their buffers on the first batches: warm them up first.
  const std::vector<std::vector<std::string>> warm_up(
      sentences->begin(), sentences->begin() + std::min<size_t>(64, sentences->size()));

  std::vector<ParseOutcome> exact;
  std::printf("%-28s %10s %12s %10s\n", "backend", "seconds", "sentences/s", "= exact");
  if (!no_exact) {
    auto backend = MakeBackend(g, {.device = *ParseDeviceKind(backend_kind),
                                   .threads = threads,
                                   .decoder = *ParseDecoderKind(decoder),
                                   .prune = PruneMode::kOff});
    if (!backend.ok()) {
      std::fprintf(stderr, "%s\n", backend.status().message().c_str());
      return 1;
    }
    Parser parser(g, *lexicon, std::move(*backend));
    if (gpu) parser.Parse(warm_up);
    const auto start = std::chrono::steady_clock::now();
    exact = parser.Parse(*sentences);
    const double seconds = Seconds(start);
    std::printf("%-28s %10.2f %12.2f %10s\n", ("exact " + decoder).c_str(), seconds,
                sentences->size() / seconds, "-");
  }
  for (const std::string& setting : settings) {
    auto named = Setting(setting, min_rule_prob);
    if (!named.ok()) {
      std::fprintf(stderr, "%s\n", named.status().message().c_str());
      return 1;
    }
    const PruningOptions options = *named;
    const auto setup_start = std::chrono::steady_clock::now();
    auto backend =
        !gpu ? MakePrunedCpuBackend(g, *ParseDecoderKind(decoder), options, threads)
        : decoder == "viterbi"
            ? MakeCudaPrunedBackend(g, options,
                                    {.max_batch_sentences = batch_sentences, .threads = threads})
            : MakeCudaMaxRuleBackend(g, {.device = {.max_batch_sentences = batch_sentences,
                                                    .extraction_threads = threads},
                                         .pruning = options});
    if (!backend.ok()) {
      std::fprintf(stderr, "%s\n", backend.status().message().c_str());
      return 1;
    }
    const double setup = Seconds(setup_start);
    Parser parser(g, *lexicon, std::move(*backend));
    if (gpu) parser.Parse(warm_up);
    const auto start = std::chrono::steady_clock::now();
    auto pruned = parser.Parse(*sentences);
    const double seconds = Seconds(start);
    int same = 0;
    for (size_t i = 0; i < exact.size(); ++i) same += exact[i].tree == pruned[i].tree;
    char agree[32] = "-";
    if (!exact.empty()) std::snprintf(agree, sizeof agree, "%d/%zu", same, exact.size());
    std::printf("%-28s %10.2f %12.2f %10s   (projections built in %.2f s)\n",
                ("pruned " + setting + " " + decoder).c_str(), seconds, sentences->size() / seconds,
                agree, setup);
  }

  if (gpu) {
    // Where the device's time goes: per level, items in and kept, and device time of the passes.
    Parser scorer(g, *lexicon, MakeCpuBackend(g, 1));
    std::vector<LexicalScores> lexical;
    for (const auto& s : *sentences) lexical.push_back(scorer.ScoreWords(s));
    std::vector<const LexicalScores*> pointers;
    for (const auto& l : lexical) pointers.push_back(&l);
    if (decoder == "max-rule") {
      // The pruned max-rule backend's device work alone, profiled: pre-parses leaving the fine
      // mask on the device, then the masked inside-outside and max-rule passes (no extraction).
      std::string error;
      // Per setting, the first variant's log P(w) and top-cell ROOT max-rule score per sentence:
      // later variants must give the same (1e-9 relative).
      std::map<std::string, std::vector<std::array<double, 2>>> first_scores;
      for (size_t variant = 0; variant < masked_dispatch.size(); ++variant) {
        const int dispatch = masked_dispatch[variant];
        const int kernels = pruning_kernels[std::min(variant, pruning_kernels.size() - 1)];
        const int group = cells_per_group[std::min(variant, cells_per_group.size() - 1)];
        auto io = cuda::DeviceInsideOutside::Create(
            CudaGrammarView(g), {.cells_per_group = group, .masked_dispatch = dispatch}, &error);
        for (const std::string& setting : settings) {
          if (!io) break;
          auto device = CudaCoarseToFine::Create(
              g, *Setting(setting, min_rule_prob),
              {.max_batch_bytes = io->BatchBudget() / 3,
               .threads = threads,
               .fine_mask_only = true,
               .also_needs = [&](int32_t n) { return io->BytesForSentence(n); },
               .also_budget = io->BatchBudget() / 2,
               .pruning_kernels = kernels});
          if (!device.ok()) return 1;
          std::vector<size_t> failed;
          std::string why;
          double io_seconds = 0;
          std::vector<std::array<double, 2>> scores(sentences->size(), {0, 0});
          auto visit = [&](CudaPrunedBatch& batch) {
            std::vector<cuda::IoSentence> refs;
            for (size_t i : batch.indices)
              refs.push_back({lexical[i].length, lexical[i].scores.data()});
            std::vector<cuda::IoResult> results;
            const auto io_start = std::chrono::steady_clock::now();
            const bool ok = io->MaskedMaxRuleBatch(refs, batch.fine_mask, false, &results,
                                                   &error) == cuda::IoBatchResult::kOk;
            io_seconds += Seconds(io_start);
            for (size_t j = 0; ok && j < batch.indices.size(); ++j) {
              const size_t n = refs[j].length, top = n * (n + 1) / 2 - 1;  // ROOT: symbol 0
              const cuda::IoResult& r = results[j];
              double root = -std::numeric_limits<double>::infinity();
              for (size_t e = 0; e < r.entries; ++e)
                if (size_t(r.entry_index[e]) == top * g.num_symbols()) root = r.entry_score[e];
              scores[batch.indices[j]] = {r.log_likelihood, root};
            }
          };
          (*device)->Run(std::span(pointers).first(std::min<size_t>(64, pointers.size())), visit,
                         &failed, &why);
          (*device)->SetProfiling(true);
          io->SetProfiling(true);
          io_seconds = 0;
          const auto start = std::chrono::steady_clock::now();
          (*device)->Run(pointers, visit, &failed, &why);
          const double seconds = Seconds(start);
          std::printf(
              "\n%s thresholds, masked dispatch %d, pruning kernels %d, %d cells a group, "
              "max-rule device work: %.2f s (%.0f sentences/s; no extraction), of which masked "
              "inside-outside + max-rule %.2f s\npre-parses: %s\ninside-outside: %s\n",
              setting.c_str(), dispatch, kernels, group, seconds, sentences->size() / seconds,
              io_seconds, (*device)->ProfileReport().c_str(), io->ProfileReport().c_str());
          auto [first, inserted] = first_scores.emplace(setting, scores);
          if (!inserted) {
            const auto near = [](double a, double b) {
              return a == b || std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
            };
            size_t same = 0;
            for (size_t i = 0; i < scores.size(); ++i)
              same += near(scores[i][0], first->second[i][0]) &&
                      near(scores[i][1], first->second[i][1]);
            std::printf("log P(w) and ROOT max-rule score equal to the first variant's: %zu/%zu\n",
                        same, scores.size());
          }
          io->SetProfiling(false);
        }
      }
    }
    if (decoder == "viterbi" && symbol_masks) {
      // The exact float kernels, unmasked and then with each setting's symbol masks: device
      // Viterbi and tree reading only (lexical scores and masks ready on the host).
      std::string error;
      auto viterbi = cuda::DeviceViterbi::Create(CudaGrammarView(g), {}, &error);
      if (!viterbi || !viterbi->SupportsTrees()) {
        std::fprintf(stderr, "device Viterbi: %s\n", error.c_str());
        return 1;
      }
      std::vector<size_t> order(sentences->size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return lexical[a].length < lexical[b].length; });
      // Parses every sentence with `masks` (per sentence, cells x symbols; empty: none), returns
      // the seconds and fills each sentence's tree nodes (state, start, end per node).
      const auto parse = [&](const std::vector<std::vector<uint8_t>>& masks,
                             std::vector<std::vector<int64_t>>* nodes) {
        nodes->assign(sentences->size(), {});
        const auto start = std::chrono::steady_clock::now();
        size_t next = 0;
        while (next < order.size()) {
          std::vector<cuda::SentenceRef> batch;
          std::vector<size_t> which;
          size_t bytes = 0;
          while (next < order.size()) {
            const size_t i = order[next];
            const size_t need = viterbi->BytesForSentence(lexical[i].length);
            if (!batch.empty() && (bytes + need > viterbi->BatchBudget() || batch.size() >= 1024))
              break;
            bytes += need;
            batch.push_back({lexical[i].length, lexical[i].scores.data(),
                             masks.empty() ? nullptr : masks[i].data()});
            which.push_back(i);
            ++next;
          }
          std::vector<cuda::DeviceTree> trees;
          if (viterbi->ParseTrees(batch, &trees, &error) != cuda::BatchResult::kOk) {
            std::fprintf(stderr, "ParseTrees: %s\n", error.c_str());
            return -1.0;
          }
          for (size_t b = 0; b < which.size(); ++b) {
            auto& out = (*nodes)[which[b]];
            out.push_back(trees[b].status);
            for (const cuda::DeviceTreeNode& node : trees[b].nodes)
              out.push_back((int64_t(node.state) << 32) | (int64_t(node.start) << 16) | node.end);
          }
        }
        return Seconds(start);
      };
      std::vector<std::vector<int64_t>> exact_nodes, nodes;
      parse({}, &exact_nodes);  // warm-up
      const double exact_seconds = parse({}, &exact_nodes);
      std::printf("\nexact float Viterbi kernels (%s), trees read on the device: %.3f s\n",
                  viterbi->kernel().c_str(), exact_seconds);
      for (const std::string& setting : settings) {
        auto device = CudaCoarseToFine::Create(g, *Setting(setting, min_rule_prob),
                                               {.threads = threads, .keep_level_survivors = true});
        if (!device.ok()) return 1;
        const CoarseToFinePruner& pruner = (*device)->pruner();
        const int last = pruner.num_levels() - 1;
        const int symbols = g.num_symbols();
        // The last level's state -> its symbol.
        std::vector<int32_t> symbol_of(pruner.level(last).grammar.num_states(), -1);
        for (int32_t f = 0; f < g.num_states(); ++f)
          symbol_of[pruner.level(last).from_fine[f]] = g.state_symbol[f];
        std::vector<std::vector<uint8_t>> masks(sentences->size());
        std::vector<size_t> failed;
        std::string why;
        const auto start = std::chrono::steady_clock::now();
        (*device)->Run(
            pointers,
            [&](CudaPrunedBatch& batch) {
              for (size_t b = 0; b < batch.indices.size(); ++b) {
                const int64_t cells = Chart::NumCells(batch.lengths[b]);
                const uint8_t* kept = batch.survivors[b][last];
                const int states = int(symbol_of.size());
                std::vector<uint8_t>& mask = masks[batch.indices[b]];
                mask.assign(size_t(cells) * symbols, 0);
                for (int64_t c = 0; c < cells; ++c)
                  for (int s = 0; s < states; ++s)
                    if (kept[c * states + s]) mask[c * symbols + symbol_of[s]] = 1;
              }
            },
            &failed, &why);
        const double prune_seconds = Seconds(start);
        size_t allowed = 0, total = 0;
        for (const auto& m : masks) {
          total += m.size();
          for (uint8_t a : m) allowed += a;
        }
        const double masked_seconds = parse(masks, &nodes);
        size_t same = 0, parsed = 0;
        for (size_t i = 0; i < nodes.size(); ++i) {
          same += nodes[i] == exact_nodes[i];
          parsed += !nodes[i].empty() && nodes[i][0] == cuda::DeviceTree::kTree;
        }
        std::printf(
            "%s: pre-parses with survivor copies %.3f s (%zu not taken); symbol-masked float "
            "Viterbi %.3f s (%.2fx the unmasked kernels), %.1f%% of (cell, symbol) allowed; "
            "trees = exact kernels' %zu of %zu, %zu parsed\n",
            setting.c_str(), prune_seconds, failed.size(), masked_seconds,
            exact_seconds / masked_seconds, 100.0 * allowed / std::max<size_t>(1, total), same,
            nodes.size(), parsed);
      }
    }
    for (const std::string& setting : settings) {
      auto device =
          CudaCoarseToFine::Create(g, *Setting(setting, min_rule_prob), {.threads = threads});
      if (!device.ok()) return 1;
      std::vector<size_t> failed;
      std::string why;
      (*device)->Run(
          std::span(pointers).first(std::min<size_t>(64, pointers.size())), [](CudaPrunedBatch&) {},
          &failed, &why);
      (*device)->SetProfiling(true);
      PruningStats stats;
      failed.clear();
      const auto start = std::chrono::steady_clock::now();
      (*device)->Run(
          pointers, [](CudaPrunedBatch&) {}, &failed, &why, &stats);
      const double seconds = Seconds(start);
      std::printf(
          "\n%s thresholds on the device: %.2f s for pruning, the fine Viterbi inside pass and "
          "the trees read on the device (%.0f sentences/s), %zu sentences not taken\n%s\n",
          setting.c_str(), seconds, sentences->size() / seconds, failed.size(),
          (*device)->ProfileReport().c_str());
      std::printf("%6s %8s %10s %14s %14s %8s\n", "level", "states", "rules", "items in",
                  "items kept", "kept");
      const CoarseToFinePruner& pruner = (*device)->pruner();
      for (int k = 0; k < pruner.num_levels() && k < int(stats.items_before.size()); ++k) {
        std::printf("%6d %8d %10lld %14lld %14lld %7.2f%%\n", k,
                    pruner.level(k).grammar.num_states(),
                    (long long)pruner.level(k).grammar.num_binary_rules(),
                    (long long)stats.items_before[k], (long long)stats.items_after[k],
                    100.0 * stats.items_after[k] / std::max<int64_t>(1, stats.items_before[k]));
      }
    }
    return 0;
  }

  // Where the time goes: the pre-parse levels alone, one thread.
  for (const std::string& setting : settings) {
    auto pruner = CoarseToFinePruner::Create(g, *Setting(setting, min_rule_prob));
    Parser scorer(g, *lexicon, MakeCpuBackend(g, 1));
    PruningStats stats;
    for (const auto& s : *sentences) {
      ItemMask mask;
      (*pruner)->Prune(scorer.ScoreWords(s), &mask, &stats);
    }
    std::printf("\n%s thresholds, pre-parse levels (one thread):\n", setting.c_str());
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
