// How much of the fine grammar's work a coarse-to-fine mask leaves, counted on the CPU (no GPU,
// no timing of the fine passes): for each pruning setting (which pre-parse levels, which
// thresholds), over the same sentences, the share of (cell, symbol) items kept and of the work a
// fine binary pass does when it visits only what the mask allows, against the X-bar-derivable
// chart (what an exhaustive pass with presence flags visits):
//   pair-split   sum over cells, split points and child symbol pairs (B, C) with B kept left,
//                C kept right and a kept parent A with a rule A -> B C, of s_B * s_C (the
//                max/sum over split points per substate pair, Dunlop et al.'s first phase);
//   rules        sum over cells and such pairs live at some split point, of the substate rules
//                of kept parents (the second phase);
//   tile rules   sum over cells and such pairs, of all the pair's substate rules (kept parents
//                or not: a kernel that lists the live (pair, cell)s but not their parents);
//   tile-groups  (child pair, group of 8 cells of one span length) that a group mask keeps (the
//                exact GPU kernels' skipping), and the rules those tiles read (group rules).
// Mask granularity: symbols (a symbol is kept in a cell when any of its substates is). Per
// pre-parse level: the share of its allowed items kept, and its own pair-split work (its
// substates) against the fine grammar's on the X-bar-derivable chart.
//
//   pruning_work -g GRAMMAR -s SENTENCES [-n 200] [--settings safe@0 safe -12@0,3 ...]
// A setting is NAME[@LEVELS] (PruningOptions::FromSpec): fast, accurate, safe, balanced or
// thresholds (one, or one per hierarchy level separated by '/'), at every level of the hierarchy
// or at the listed ones (0 = X-bar).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <map>

#include "common/sentence_file.h"
#include "grammar_io/grammar_argument.h"
#include "lexicon/lexicon.h"
#include "parser/coarse_to_fine.h"
#include "parser/parser.h"
#include "parser/backend_factory.h"

namespace {

using namespace cky;

// Base-symbol structure of the fine grammar's binary rules.
struct BaseRules {
  // (B, C) -> parents A with the number of substate rules A_a -> B_b C_c.
  std::map<std::pair<int32_t, int32_t>, std::vector<std::pair<int32_t, int64_t>>> by_pair;
};

BaseRules MakeBaseRules(const Grammar& g) {
  std::map<std::tuple<int32_t, int32_t, int32_t>, int64_t> count;
  for (int64_t r = 0; r < g.num_binary_rules(); ++r) {
    ++count[{g.state_symbol[g.binary_parent[r]], g.state_symbol[g.binary_left[r]],
             g.state_symbol[g.binary_right[r]]}];
  }
  BaseRules base;
  for (const auto& [key, n] : count) {
    base.by_pair[{std::get<1>(key), std::get<2>(key)}].push_back({std::get<0>(key), n});
  }
  return base;
}

struct Work {
  double items = 0, pair_split = 0, rules = 0, tile_groups = 0, tile_group_rules = 0;
  double tile_cell_rules = 0;  // every rule of the tiles live in a cell (kept parents or not)
  double seconds = 0;
  int64_t sentences = 0, unpruned = 0;
  void Add(const Work& o) {
    items += o.items, pair_split += o.pair_split, rules += o.rules;
    tile_groups += o.tile_groups, tile_group_rules += o.tile_group_rules;
    tile_cell_rules += o.tile_cell_rules;
    seconds += o.seconds, sentences += o.sentences, unpruned += o.unpruned;
  }
};

// The work a symbol-level mask (cells x symbols) leaves for one sentence.
Work Count(const Grammar& g, const BaseRules& base, int32_t n, const std::vector<uint8_t>& keep) {
  const int32_t symbols = g.num_symbols();
  const Chart layout(n, 1);
  auto kept = [&](int32_t start, int32_t end, int32_t x) {
    return keep[layout.CellIndex(start, end) * symbols + x] != 0;
  };
  Work w;
  for (uint8_t k : keep) w.items += k;
  constexpr int32_t kGroup = 8;
  for (int32_t span = 2; span <= n; ++span) {
    for (int32_t group = 0; group <= n - span; group += kGroup) {
      // Group mask: symbols kept in some left (right) child cell of the group's cells.
      std::vector<uint8_t> left_any(symbols, 0), right_any(symbols, 0);
      for (int32_t start = group; start < std::min(group + kGroup, n - span + 1); ++start) {
        for (int32_t split = start + 1; split < start + span; ++split) {
          for (int32_t x = 0; x < symbols; ++x) {
            left_any[x] |= kept(start, split, x);
            right_any[x] |= kept(split, start + span, x);
          }
        }
      }
      for (const auto& [pair, parents] : base.by_pair) {
        if (!left_any[pair.first] || !right_any[pair.second]) continue;
        int64_t tile_rules = 0;
        for (const auto& p : parents) tile_rules += p.second;
        w.tile_groups += 1;
        w.tile_group_rules += double(tile_rules);
      }
    }
    for (int32_t start = 0; start + span <= n; ++start) {
      const int32_t end = start + span;
      for (const auto& [pair, parents] : base.by_pair) {
        const auto [b, c] = pair;
        int64_t parent_rules = 0, tile_rules = 0;
        for (const auto& p : parents) {
          if (kept(start, end, p.first)) parent_rules += p.second;
          tile_rules += p.second;
        }
        if (parent_rules == 0) continue;
        int32_t live_splits = 0;
        for (int32_t split = start + 1; split < end; ++split) {
          live_splits += kept(start, split, b) && kept(split, end, c);
        }
        if (live_splits == 0) continue;
        w.pair_split += double(live_splits) * g.symbol_num_substates[b] * g.symbol_num_substates[c];
        w.rules += double(parent_rules);
        w.tile_cell_rules += double(tile_rules);
      }
    }
  }
  return w;
}

std::vector<uint8_t> SymbolMask(const Grammar& g, const ItemMask& mask) {
  const int64_t cells = Chart::NumCells(mask.length);
  std::vector<uint8_t> keep(size_t(cells) * g.num_symbols(), 0);
  for (int64_t c = 0; c < cells; ++c) {
    for (int32_t s = 0; s < g.num_states(); ++s) {
      if (mask.cell(c)[s]) keep[c * g.num_symbols() + g.state_symbol[s]] = 1;
    }
  }
  return keep;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fine-pass work left by coarse-to-fine masks (CPU counts)"};
  std::string grammar_path, sentences_path;
  int count = 200;
  std::vector<std::string> settings = {"safe@0", "accurate@0", "fast@0", "safe"};
  app.add_option("-g,--grammar", grammar_path, "Grammar (any format cky parse reads)")->required();
  app.add_option("-s,--sentences", sentences_path, "Tokenized sentences, one per line")->required();
  app.add_option("-n,--count", count, "Sentences (the first N)")->capture_default_str();
  app.add_option("--settings", settings, "Pruning settings (PruningOptions::FromSpec)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

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
  if (int(sentences->size()) > count) sentences->resize(count);
  auto backend = MakeBackend(g, {.device = DeviceKind::kReference});
  Parser parser(g, *lexicon, std::move(*backend));
  std::vector<LexicalScores> lexical;
  for (const auto& s : *sentences) lexical.push_back(parser.ScoreWords(s));
  const BaseRules base = MakeBaseRules(g);
  std::printf("%s: %d symbols, %d states, %lld binary rules, %zu base pairs; %zu sentences\n\n",
              grammar_path.c_str(), g.num_symbols(), g.num_states(),
              (long long)g.num_binary_rules(), base.by_pair.size(), sentences->size());

  // Per sentence, the X-bar-derivable symbols (the first run's masks): what level 0 parses.
  std::vector<std::vector<uint8_t>> derivable_masks;
  // Pre-parse k's pair-split work, summed over the sentences (each level's own substates).
  std::vector<double> level_work;
  auto run = [&](const PruningOptions& options) -> StatusOr<std::pair<Work, PruningStats>> {
    auto pruner = CoarseToFinePruner::Create(g, options);
    if (!pruner.ok()) return pruner.status();
    std::vector<BaseRules> level_base;
    for (int32_t k = 0; k < (*pruner)->num_levels(); ++k) {
      level_base.push_back(MakeBaseRules((*pruner)->level(k).grammar));
    }
    level_work.assign((*pruner)->num_levels(), 0);
    Work total;
    PruningStats stats;
    for (size_t i = 0; i < lexical.size(); ++i) {
      const LexicalScores& s = lexical[i];
      ItemMask mask;
      std::vector<ItemMask> survivors;
      const auto started = std::chrono::steady_clock::now();
      const bool pruned = (*pruner)->Prune(s, &mask, &stats, &survivors);
      if (derivable_masks.size() == lexical.size()) {
        for (size_t k = 0; k < survivors.size(); ++k) {
          const Grammar& level = (*pruner)->level(int32_t(k)).grammar;
          const std::vector<uint8_t> incoming =
              k == 0 ? derivable_masks[i] : SymbolMask((*pruner)->level(int32_t(k) - 1).grammar,
                                                       survivors[k - 1]);
          level_work[k] += Count(level, level_base[k], s.length, incoming).pair_split;
        }
      }
      Work w;
      w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      w.sentences = 1;
      if (!pruned) {
        w.unpruned = 1;
        mask.length = s.length;
        mask.num_states = g.num_states();
        mask.allowed.assign(size_t(Chart::NumCells(s.length)) * g.num_states(), 1);
      }
      std::vector<uint8_t> symbols = SymbolMask(g, mask);
      Work counted = Count(g, base, s.length, symbols);
      if (derivable_masks.size() < lexical.size()) derivable_masks.push_back(std::move(symbols));
      counted.seconds = w.seconds, counted.sentences = 1, counted.unpruned = w.unpruned;
      total.Add(counted);
    }
    return std::make_pair(total, stats);
  };
  // The reference: every item some complete X-bar derivation uses.
  PruningOptions derivable = PruningOptions::Exact();
  derivable.levels = {0};
  auto all = run(derivable);
  if (!all.ok()) {
    std::fprintf(stderr, "%s\n", all.status().message().c_str());
    return 1;
  }
  const Work& ref = all->first;
  std::printf("X-bar-derivable chart: %.0f items, %.3g pair-split, %.3g rules, %.3g tile-groups "
              "(%.3g rules read)\n\n",
              ref.items, ref.pair_split, ref.rules, ref.tile_groups, ref.tile_group_rules);
  std::printf("%-16s %8s %11s %8s %11s %12s %13s %9s %9s  %s\n", "setting", "items",
              "pair-split", "rules", "tile rules", "tile-groups", "group rules", "prune s",
              "unpruned", "per level kept");
  for (const std::string& setting : settings) {
    auto options = PruningOptions::FromSpec(setting);
    if (!options.ok()) {
      std::fprintf(stderr, "%s\n", options.status().message().c_str());
      return 2;
    }
    auto result = run(*options);
    if (!result.ok()) {
      std::fprintf(stderr, "%s: %s\n", setting.c_str(), result.status().message().c_str());
      continue;
    }
    const Work& w = result->first;
    std::string levels;
    const PruningStats& st = result->second;
    for (size_t k = 0; k < st.items_before.size(); ++k) {
      char buffer[96];
      std::snprintf(buffer, sizeof buffer, "%s%.1f%% (%.2f%%)", k ? ", " : "",
                    100.0 * double(st.items_after[k]) / std::max<double>(1, st.items_before[k]),
                    100.0 * level_work[k] / ref.pair_split);
      levels += buffer;
    }
    std::printf("%-16s %7.2f%% %10.3f%% %7.3f%% %10.3f%% %11.2f%% %12.2f%% %9.2f %9lld  %s\n",
                setting.c_str(), 100 * w.items / ref.items, 100 * w.pair_split / ref.pair_split,
                100 * w.rules / ref.rules, 100 * w.tile_cell_rules / ref.tile_cell_rules,
                100 * w.tile_groups / ref.tile_groups,
                100 * w.tile_group_rules / ref.tile_group_rules, w.seconds,
                (long long)w.unpruned, levels.c_str());
  }
  return 0;
}
