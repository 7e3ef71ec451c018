// Grammar projections and coarse-to-fine pruning (parser/grammar_projection.h,
// parser/coarse_to_fine.h): the finest projection is the grammar itself, projected rules are the
// weighted sums of the fine ones, split trees map substates as Berkeley's hierarchy does,
// max-marginals equal a brute-force maximum over every derivation, fewer pre-parse levels keep more
// items, and with Berkeley's thresholds on small_sm2.gr the pruned trees agree with the exact ones
// on nearly every reference sentence (skips without ../shared or $CKY_SHARED_DIR). That pruning
// without thresholds gives exactly the unpruned trees (Viterbi and max-rule, every level or one) is
// a row of parser/backend_conformance_test.cpp.
#include "parser/coarse_to_fine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "parser/backend_factory.h"
#include "parser/backend_test_support.h"
#include "parser/cpu_backend.h"
#include "parser/viterbi_cpu.h"

namespace cky {
namespace {

BerkeleyModel RandomModel(uint64_t seed, int substates = 4) {
  return MakeRandomModel(SplitShape(seed, substates));
}

TEST(GrammarProjectionTest, FinestLevelIsTheGrammarItself) {
  for (uint64_t seed : {1, 7}) {
    const Grammar& g = RandomModel(seed, 3).grammar;  // 3 substates: blocks, no split trees
    const int32_t levels = NumProjectionLevels(g);
    ASSERT_EQ(levels, 2);
    auto p = ProjectGrammar(g, levels);
    ASSERT_TRUE(p.ok()) << p.status().message();
    const Grammar& q = p->grammar;
    ASSERT_EQ(q.num_states(), g.num_states());
    EXPECT_EQ(q.symbol_names, g.symbol_names);
    EXPECT_EQ(q.symbol_num_substates, g.symbol_num_substates);
    for (int32_t f = 0; f < g.num_states(); ++f) {
      EXPECT_EQ(p->from_fine[f], f);
      EXPECT_DOUBLE_EQ(p->fine_weight[f], 1.0);
    }
    ASSERT_EQ(q.binary_parent, g.binary_parent);
    ASSERT_EQ(q.binary_left, g.binary_left);
    ASSERT_EQ(q.binary_right, g.binary_right);
    for (size_t r = 0; r < g.binary_log_prob.size(); ++r) {
      EXPECT_NEAR(q.binary_log_prob[r], g.binary_log_prob[r], 1e-12);
    }
    ASSERT_EQ(q.unary_parent, g.unary_parent);
    ASSERT_EQ(q.unary_child, g.unary_child);
    ASSERT_EQ(q.sum_unary_parent, g.sum_unary_parent);
    ASSERT_EQ(q.sum_unary_child, g.sum_unary_child);
    for (size_t u = 0; u < g.sum_unary_log_prob.size(); ++u) {
      EXPECT_NEAR(q.sum_unary_log_prob[u], g.sum_unary_log_prob[u], 1e-12);
    }
  }
}

TEST(GrammarProjectionTest, ProjectedRulesAreWeightedSumsOfFineRules) {
  const Grammar& g = RandomModel(3).grammar;
  for (int32_t level = 0; level < NumProjectionLevels(g); ++level) {
    auto p = ProjectGrammar(g, level);
    ASSERT_TRUE(p.ok());
    const Grammar& q = p->grammar;
    // Weights are a distribution over each coarse state's fine substates.
    std::vector<double> weight_sum(q.num_states(), 0.0);
    for (int32_t f = 0; f < g.num_states(); ++f) weight_sum[p->from_fine[f]] += p->fine_weight[f];
    for (double w : weight_sum) EXPECT_NEAR(w, 1.0, 1e-12);
    // Each projected binary rule against the sum computed here from the fine rules.
    std::map<std::tuple<int32_t, int32_t, int32_t>, double> expected;
    for (int64_t r = 0; r < g.num_binary_rules(); ++r) {
      expected[{p->from_fine[g.binary_parent[r]], p->from_fine[g.binary_left[r]],
                p->from_fine[g.binary_right[r]]}] +=
          p->fine_weight[g.binary_parent[r]] * std::exp(g.binary_log_prob[r]);
    }
    ASSERT_EQ(int64_t(expected.size()), q.num_binary_rules()) << level;
    for (int64_t r = 0; r < q.num_binary_rules(); ++r) {
      const double want = expected[{q.binary_parent[r], q.binary_left[r], q.binary_right[r]}];
      EXPECT_NEAR(std::exp(q.binary_log_prob[r]), want, 1e-12 * std::max(1.0, want));
    }
    if (level == 0) {
      for (int32_t s = 0; s < q.num_symbols(); ++s) EXPECT_EQ(q.symbol_num_substates[s], 1);
    }
  }
}

TEST(GrammarProjectionTest, SplitTreesGroupSubstatesByDepth) {
  GrammarBuilder builder;
  const int32_t root = builder.AddSymbol("ROOT");
  const int32_t s = builder.AddSymbol("S");
  const int32_t t = builder.AddSymbol("T");
  builder.SetNumSubstates(s, 4);
  builder.SetNumSubstates(t, 3);
  // S: substates 0 and 2 come from one level-1 substate, 1 and 3 from the other. T was merged
  // back: level 1 has {0} and {1, 2}.
  builder.SetSplitTree(s, "(0 (0 0 2) (1 1 3))");
  builder.SetSplitTree(t, "(0 (0 0) (1 1 2))");
  for (int a = 0; a < 4; ++a) builder.AddUnary(root, 0, s, a, 0.25);
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 3; ++b) builder.AddBinary(s, a, t, b, t, b, 0.1);
  }
  Grammar g = builder.Finish();
  auto p = ProjectGrammar(g, 1);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const int32_t s0 = g.symbol_first_state[g.FindSymbol("S")];
  const int32_t q0 = p->grammar.symbol_first_state[g.FindSymbol("S")];
  EXPECT_EQ(p->from_fine[s0 + 0], q0 + 0);
  EXPECT_EQ(p->from_fine[s0 + 2], q0 + 0);
  EXPECT_EQ(p->from_fine[s0 + 1], q0 + 1);
  EXPECT_EQ(p->from_fine[s0 + 3], q0 + 1);
  const int32_t t0 = g.symbol_first_state[g.FindSymbol("T")];
  const int32_t u0 = p->grammar.symbol_first_state[g.FindSymbol("T")];
  EXPECT_EQ(p->from_fine[t0 + 0], u0 + 0);
  EXPECT_EQ(p->from_fine[t0 + 1], u0 + 1);
  EXPECT_EQ(p->from_fine[t0 + 2], u0 + 1);
  EXPECT_EQ(p->grammar.symbol_num_substates[g.FindSymbol("T")], 2);

  g.symbol_split_trees[g.FindSymbol("S")] = "(0 (0 0 2) (1 1 1))";
  auto bad = ProjectGrammar(g, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("appears twice"), std::string::npos);
  g.symbol_split_trees[g.FindSymbol("S")] = "(0 (0 0 2) (1 1 3)";
  EXPECT_FALSE(ProjectGrammar(g, 1).ok());
}

// CoarseToFinePruner::Create computes the expected state counts once for every level: given to
// ProjectGrammar, they give what it computes itself; counts of another grammar's size are refused.
TEST(GrammarProjectionTest, PrecomputedExpectedCountsGiveTheSameProjection) {
  const Grammar& g = RandomModel(4).grammar;
  const std::vector<double> counts = ExpectedStateCounts(g);
  for (int32_t level = 0; level < NumProjectionLevels(g); ++level) {
    auto own = ProjectGrammar(g, level);
    auto given = ProjectGrammar(g, level, 0, &counts);
    ASSERT_TRUE(own.ok() && given.ok());
    EXPECT_EQ(given->fine_weight, own->fine_weight);
    EXPECT_EQ(given->grammar.binary_parent, own->grammar.binary_parent);
    EXPECT_EQ(given->grammar.binary_log_prob, own->grammar.binary_log_prob);
    EXPECT_EQ(given->grammar.sum_unary_log_prob, own->grammar.sum_unary_log_prob);
  }
  const std::vector<double> short_counts(counts.begin(), counts.end() - 1);
  EXPECT_FALSE(ProjectGrammar(g, 0, 0, &short_counts).ok());
}

TEST(GrammarProjectionTest, LexicalScoresAreWeightedSums) {
  const TestGrammar grammar = MakeRandomTestGrammar(SplitShape(5));
  const LexicalScores fine = ScoredInputs(grammar, {{"w1", "w2", "w5"}})[0].lexical;
  auto p = ProjectGrammar(grammar.grammar(), 1);
  ASSERT_TRUE(p.ok());
  LexicalScores coarse;
  ProjectLexicalScores(*p, fine, &coarse);
  ASSERT_EQ(coarse.num_states, p->grammar.num_states());
  for (int32_t i = 0; i < fine.length; ++i) {
    std::vector<double> sum(coarse.num_states, 0.0);
    for (int32_t f = 0; f < fine.num_states; ++f) {
      sum[p->from_fine[f]] += p->fine_weight[f] * std::exp(fine.word(i)[f]);
    }
    for (int32_t c = 0; c < coarse.num_states; ++c) {
      if (sum[c] == 0) {
        EXPECT_EQ(coarse.word(i)[c], kNegInf);
      } else {
        EXPECT_NEAR(coarse.word(i)[c], std::log(sum[c]), 1e-12);
      }
    }
  }
}

// The projection state by state, as it was computed before it took runs of fine states: the
// same maxima, and each coarse state's sum added in the fine states' order from 0.0.
std::vector<double> StateByStateProjection(const ProjectedGrammar& p, const LexicalScores& fine) {
  const int32_t states = p.grammar.num_states();
  std::vector<double> out(size_t(fine.length) * states, kNegInf);
  for (int32_t i = 0; i < fine.length; ++i) {
    const double* word = fine.word(i);
    std::vector<double> best(states, kNegInf), sum(states, 0.0);
    for (int32_t f = 0; f < fine.num_states; ++f) {
      best[p.from_fine[f]] = std::max(best[p.from_fine[f]], word[f]);
    }
    for (int32_t f = 0; f < fine.num_states; ++f) {
      if (!(word[f] > kNegInf)) continue;
      const int32_t c = p.from_fine[f];
      sum[c] += p.fine_weight[f] * std::exp(word[f] - best[c]);
    }
    for (int32_t c = 0; c < states; ++c) {
      if (sum[c] > 0) out[size_t(i) * states + c] = best[c] + std::log(sum[c]);
    }
  }
  return out;
}

// ProjectLexicalScores sums long runs of consecutive fine states in registers, short ones state by
// state: bit for bit the state by state sums at every level, also with a coarse state's fine
// states in two long runs (each run's halves moved apart) and in many short ones (the fine states
// shuffled; scores and projection reordered alike).
TEST(GrammarProjectionTest, LexicalScoresEqualTheStateByStateSumsBitForBit) {
  const TestGrammar grammar = MakeRandomTestGrammar(SplitShape(5, 8));
  const LexicalScores fine =
      ScoredInputs(grammar, {{"w1", "w2", "w5", "w3", "w0", "w4"}})[0].lexical;
  int compared = 0;
  for (int32_t level = 0; level < NumProjectionLevels(grammar.grammar()); ++level) {
    auto p = ProjectGrammar(grammar.grammar(), level);
    ASSERT_TRUE(p.ok());
    LexicalScores coarse;
    ProjectLexicalScores(*p, fine, &coarse);
    EXPECT_EQ(coarse.scores, StateByStateProjection(*p, fine)) << "level " << level;
    // Reordered fine states: each run's first halves, then its second halves; then shuffled.
    std::vector<int32_t> halves;
    for (int32_t half = 0; half < 2; ++half) {
      for (int32_t f = 0, end = 0; f < fine.num_states; f = end) {
        while (end < fine.num_states && p->from_fine[end] == p->from_fine[f]) ++end;
        const int32_t middle = f + (end - f) / 2;
        for (int32_t g = half == 0 ? f : middle; g < (half == 0 ? middle : end); ++g) {
          halves.push_back(g);
        }
      }
    }
    std::vector<int32_t> shuffled_order(fine.num_states);
    std::iota(shuffled_order.begin(), shuffled_order.end(), 0);
    std::mt19937 random(static_cast<uint32_t>(level + 1));
    std::shuffle(shuffled_order.begin(), shuffled_order.end(), random);
    for (const std::vector<int32_t>& order : {halves, shuffled_order}) {
      ASSERT_EQ(order.size(), size_t(fine.num_states));
      ProjectedGrammar reordered = *p;
      LexicalScores reordered_fine = fine;
      for (int32_t f = 0; f < fine.num_states; ++f) {
        reordered.from_fine[f] = p->from_fine[order[f]];
        reordered.fine_weight[f] = p->fine_weight[order[f]];
        for (int32_t i = 0; i < fine.length; ++i) {
          reordered_fine.scores[size_t(i) * fine.num_states + f] = fine.word(i)[order[f]];
        }
      }
      ProjectLexicalScores(reordered, reordered_fine, &coarse);
      EXPECT_EQ(coarse.scores, StateByStateProjection(reordered, reordered_fine))
          << "level " << level;
      for (double x : coarse.scores) compared += x > kNegInf;
    }
  }
  EXPECT_GT(compared, 0);
}

// Both orders of additions (AdditionOrder): the same maxima up to rounding.
TEST(CpuViterbiTest, MaxMarginalsEqualBruteForceMaximum) {
  int checked = 0;
  for (const AdditionOrder order : {AdditionOrder::kRuleFirst, AdditionOrder::kPairFirst})
    for (uint64_t seed : {2, 11}) {
      const TestGrammar grammar = MakeRandomTestGrammar(
          {.phrasal_symbols = 3, .tags = 2, .substates = 2, .vocabulary = 4, .seed = seed});
      const Grammar& g = grammar.grammar();
      CpuViterbi viterbi(g, order);
      const Sentences sentences = MakeRandomSentences(grammar.model, 5, 1, 3, seed);
      for (const SentenceInput& input : ScoredInputs(grammar, sentences)) {
        const LexicalScores& lex = input.lexical;
        Chart post, pre;
        viterbi.Inside(lex, nullptr, &post, &pre);
        const int32_t n = lex.length;
        // Unmasked, the inside chart is the exhaustive one (bit for bit in the reference's order).
        Chart exact;
        CpuViterbi(g).Inside(lex, &exact);
        if (order == AdditionOrder::kRuleFirst) {
          ASSERT_EQ(post.data(), exact.data());  // the reference's additions: bit for bit
        } else {
          ASSERT_EQ(post.data().size(), exact.data().size());
          for (size_t i = 0; i < exact.data().size(); ++i) {
            if (exact.data()[i] == kNegInf) {
              ASSERT_EQ(post.data()[i], kNegInf) << i;
            } else {
              ASSERT_NEAR(post.data()[i], exact.data()[i], 1e-12) << i;
            }
          }
        }
        const auto derivations = EnumerateViterbiDerivations(g, lex, Grammar::kRootState, 0, n);
        if (derivations.empty()) continue;
        std::map<std::tuple<int32_t, int32_t, int32_t>, double> best_through;
        double best = kNegInf;
        for (const ViterbiDerivation& d : derivations) {
          best = std::max(best, d.score);
          for (const auto& item : d.items) {
            auto [it, inserted] = best_through.try_emplace(item, d.score);
            if (!inserted) it->second = std::max(it->second, d.score);
          }
        }
        ASSERT_NEAR(post.score(0, n, Grammar::kRootState), best, 1e-9);
        std::vector<double> mm;
        viterbi.MaxMarginals(post, pre, &mm);
        for (int32_t span = 1; span <= n; ++span) {
          for (int32_t start = 0; start + span <= n; ++start) {
            for (int32_t s = 0; s < g.num_states(); ++s) {
              const double got = mm[post.CellIndex(start, start + span) * g.num_states() + s];
              auto it = best_through.find({start, start + span, s});
              if (it == best_through.end()) {
                EXPECT_EQ(got, kNegInf) << start << " " << span << " " << g.StateName(s);
              } else {
                EXPECT_NEAR(got, it->second - best, 1e-9)
                    << start << " " << span << " " << g.StateName(s);
                ++checked;
              }
            }
          }
        }
      }
    }
  EXPECT_GT(checked, 100);
}

// Pre-parsing at fewer levels prunes no more: the fine items the whole hierarchy keeps are kept
// with level 0 alone and with level 1 alone (the later levels only remove items, and a level run
// without the earlier ones' mask sees max-marginals at least as high).
TEST(CoarseToFinePrunerTest, FewerLevelsKeepASupersetOfTheItems) {
  const TestGrammar grammar = MakeRandomTestGrammar(SplitShape(5, 8));
  const Grammar& g = grammar.grammar();
  ASSERT_EQ(NumProjectionLevels(g), 3);
  Parser scorer(g, grammar.lexicon, MakeCpuBackend(g, 1));
  PruningOptions all;
  all.thresholds = {-1};
  all.min_rule_prob = 0;
  auto full = CoarseToFinePruner::Create(g, all);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ((*full)->num_levels(), 3);
  int64_t pruned_by_more_levels = 0, compared = 0;
  for (const std::vector<int32_t>& levels :
       {std::vector<int32_t>{0}, std::vector<int32_t>{1}, std::vector<int32_t>{0, 2}}) {
    PruningOptions fewer = all;
    fewer.levels = levels;
    auto subset = CoarseToFinePruner::Create(g, fewer);
    ASSERT_TRUE(subset.ok());
    ASSERT_EQ((*subset)->num_levels(), int32_t(levels.size()));
    EXPECT_EQ((*subset)->level(int32_t(levels.size()) - 1).level, levels.back());
    for (const auto& words : MakeRandomSentences(grammar.model, 10, 3, 14, 5)) {
      const LexicalScores lexical = scorer.ScoreWords(words);
      ItemMask want, got;
      if (!(*full)->Prune(lexical, &want) || !(*subset)->Prune(lexical, &got)) continue;
      ++compared;
      ASSERT_EQ(want.allowed.size(), got.allowed.size());
      for (size_t i = 0; i < want.allowed.size(); ++i) {
        ASSERT_LE(want.allowed[i], got.allowed[i]) << "item " << i;
        pruned_by_more_levels += got.allowed[i] - want.allowed[i];
      }
    }
  }
  EXPECT_GT(compared, 20);
  EXPECT_GT(pruned_by_more_levels, 0);
}

TEST(PruningOptionsTest, FromSpecReadsNamesThresholdsAndLevels) {
  auto safe = PruningOptions::FromSpec("safe");
  ASSERT_TRUE(safe.ok());
  EXPECT_EQ(safe->thresholds, PruningOptions::Safe().thresholds);
  EXPECT_TRUE(safe->levels.empty());
  auto subset = PruningOptions::FromSpec("accurate@0,2,4");
  ASSERT_TRUE(subset.ok());
  EXPECT_EQ(subset->thresholds, PruningOptions::Berkeley(true).thresholds);
  EXPECT_EQ(subset->levels, (std::vector<int32_t>{0, 2, 4}));
  auto number = PruningOptions::FromSpec("-7.5@1");
  ASSERT_TRUE(number.ok());
  EXPECT_EQ(number->thresholds, std::vector<double>{-7.5});
  EXPECT_EQ(number->min_rule_prob, 0);
  EXPECT_EQ(number->levels, std::vector<int32_t>{1});
  auto per_level = PruningOptions::FromSpec("-16/-14.5/-13@0,2,4");
  ASSERT_TRUE(per_level.ok());
  EXPECT_EQ(per_level->thresholds, (std::vector<double>{-16, -14.5, -13}));
  EXPECT_EQ(per_level->levels, (std::vector<int32_t>{0, 2, 4}));
  for (const char* bad : {"", "quick", "safe@", "safe@1,,2", "safe@-1", "safe@x", "3", "-2x", "-3/",
                          "/-3", "-3//-4", "-3/2", "safe/-3"}) {
    EXPECT_FALSE(PruningOptions::FromSpec(bad).ok()) << bad;
  }
  PruningOptions descending = PruningOptions::Safe();
  descending.levels = {2, 0};
  EXPECT_FALSE(CoarseToFinePruner::Create(RandomModel(1).grammar, descending).ok());
}

// --prune auto on the cpu backend: safe, except Viterbi with a small grammar (exact is faster).
TEST(CoarseToFinePrunerTest, AutoLeavesSmallGrammarsUnprunedForViterbiOnly) {
  BerkeleyModel small = MakeRandomModel({.phrasal_symbols = 4, .substates = 2, .seed = 3});
  ASSERT_LT(small.grammar.num_binary_rules(), 50000);
  auto name = [&](const BerkeleyModel& m, const std::string& decoder) {
    auto backend = MakeBackend(m.grammar, {.device = DeviceKind::kCpu,
                                           .threads = 1,
                                           .decoder = *ParseDecoderKind(decoder),
                                           .prune = PruneMode::kAuto});
    EXPECT_TRUE(backend.ok()) << backend.status().message();
    return backend.ok() ? (*backend)->name() : std::string();
  };
  EXPECT_EQ(name(small, "viterbi"), "cpu");
  EXPECT_EQ(name(small, "max-rule"), "cpu/pruned-max-rule");
  BerkeleyModel large = MakeRandomModel({.phrasal_symbols = 12, .substates = 4, .seed = 3});
  ASSERT_GE(large.grammar.num_binary_rules(), 50000);
  EXPECT_EQ(name(large, "viterbi"), "cpu/pruned");
}

TEST(CoarseToFinePrunerTest, UnsplitGrammarHasNoLevelsAndPrunesNothing) {
  const TestGrammar grammar = MakeRandomTestGrammar(SplitShape(4, 1));
  auto pruner = CoarseToFinePruner::Create(grammar.grammar(), PruningOptions::Berkeley(false));
  ASSERT_TRUE(pruner.ok());
  EXPECT_EQ((*pruner)->num_levels(), 0);
  ItemMask mask;
  ASSERT_TRUE((*pruner)->Prune(ScoredInputs(grammar, {{"w1", "w2"}})[0].lexical, &mask));
  EXPECT_EQ(mask.allowed, std::vector<uint8_t>(3 * grammar.grammar().num_states(), 1));
}

// Berkeley's thresholds on a real grammar: most items go, the trees stay.
TEST(CoarseToFinePrunerTest, BerkeleyThresholdsKeepTheTreesOnSmallSm2) {
  std::string skip;
  const TestFixture* fixture = FindTestFixture("small_sm2", &skip);
  if (!fixture) GTEST_SKIP() << skip;
  const Grammar& g = fixture->grammar->grammar();
  const Lexicon& lexicon = fixture->grammar->lexicon;
  const Sentences sentences = SharedReferenceSentences();  // the reference sentences alone
  ASSERT_FALSE(sentences.empty());
  auto pruner = CoarseToFinePruner::Create(g, PruningOptions::Berkeley(false));
  ASSERT_TRUE(pruner.ok()) << pruner.status().message();
  EXPECT_EQ((*pruner)->num_levels(), 2);
  Parser scorer(g, lexicon, MakeCpuBackend(g, 1));
  PruningStats stats;
  for (const auto& words : sentences) {
    ItemMask mask;
    ASSERT_TRUE((*pruner)->Prune(scorer.ScoreWords(words), &mask, &stats));
  }
  ASSERT_EQ(stats.items_after.size(), 2u);
  // X-bar pruning removes most items; each finer level removes more of what is left.
  EXPECT_LT(stats.items_after[0] * 4, stats.items_before[0]);
  EXPECT_LT(stats.items_after[1] * 3, stats.items_before[1] * 2);

  for (const std::string decoder : {"viterbi", "max-rule"}) {
    auto exact_backend = MakeBackend(g, {.device = DeviceKind::kCpu,
                                         .threads = 2,
                                         .decoder = *ParseDecoderKind(decoder),
                                         .prune = PruneMode::kOff});
    auto pruned_backend =
        MakePrunedCpuBackend(g, *ParseDecoderKind(decoder), PruningOptions::Berkeley(false), 2);
    ASSERT_TRUE(exact_backend.ok() && pruned_backend.ok());
    Parser exact(g, lexicon, std::move(*exact_backend));
    Parser pruned(g, lexicon, std::move(*pruned_backend));
    auto want = exact.Parse(sentences);
    auto got = pruned.Parse(sentences);
    int same = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].status, ParseStatus::kOk) << decoder << " " << i;
      same += want[i].tree == got[i].tree;
    }
    EXPECT_GE(same * 100, int(want.size()) * 95) << decoder << ": " << same << "/" << want.size();
  }
}

}  // namespace
}  // namespace cky
