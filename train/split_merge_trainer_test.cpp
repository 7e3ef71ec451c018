#include "train/split_merge_trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "grammar_io/berkeley_model.h"
#include "lexicon/lexicon.h"
#include "train/split_merge_test_util.h"
#include "treebank/reader.h"

namespace cky {
namespace {

// Expected counts by brute force: every assignment of substates to the nodes of each tree,
// weighted by the product of its rule and lexical scores.
SplitMergeTrainer::ExpectedCounts BruteForceCounts(const SplitMergeTrainer& trainer) {
  const LatentPcfg& g = trainer.grammar();
  SplitMergeTrainer::ExpectedCounts counts;
  counts.binary.assign(trainer.binary_offset(int32_t(g.binaries.size())), 0.0);
  counts.unary.assign(trainer.unary_offset(int32_t(g.unaries.size())), 0.0);
  counts.token.assign(trainer.token_offset(trainer.num_tokens()), 0.0);
  for (const LatentTrainingTree& tree : trainer.trees()) {
    const size_t size = tree.nodes.size();
    std::vector<int32_t> assignment(size, 0);
    std::vector<double> weights;
    std::vector<std::vector<int32_t>> assignments;
    double z = 0;
    while (true) {
      double w = 1;
      for (size_t i = 0; i < size; ++i) {
        const auto& node = tree.nodes[i];
        const int32_t p = assignment[i];
        if (node.token >= 0) {
          w *= trainer.TokenScores(node.token)[p];
        } else if (node.right < 0) {
          const auto& rule = g.unaries[node.rule];
          w *= rule.probs[size_t(p) * g.num_substates[rule.child] + assignment[node.left]];
        } else {
          const auto& rule = g.binaries[node.rule];
          const int32_t nl = g.num_substates[rule.left], nr = g.num_substates[rule.right];
          w *= rule.probs[(size_t(p) * nl + assignment[node.left]) * nr + assignment[node.right]];
        }
      }
      z += w;
      weights.push_back(w);
      assignments.push_back(assignment);
      size_t k = 0;
      while (k < size && ++assignment[k] == g.num_substates[tree.nodes[k].symbol]) {
        assignment[k++] = 0;
      }
      if (k == size) break;
    }
    counts.log_likelihood += std::log(z);
    for (size_t a = 0; a < assignments.size(); ++a) {
      const double posterior = weights[a] / z;
      const auto& as = assignments[a];
      for (size_t i = 0; i < size; ++i) {
        const auto& node = tree.nodes[i];
        if (node.token >= 0) {
          counts.token[trainer.token_offset(node.token) + as[i]] += posterior;
        } else if (node.right < 0) {
          const auto& rule = g.unaries[node.rule];
          counts.unary[trainer.unary_offset(node.rule) +
                       size_t(as[i]) * g.num_substates[rule.child] + as[node.left]] += posterior;
        } else {
          const auto& rule = g.binaries[node.rule];
          const int32_t nl = g.num_substates[rule.left], nr = g.num_substates[rule.right];
          counts.binary[trainer.binary_offset(node.rule) +
                        (size_t(as[i]) * nl + as[node.left]) * nr + as[node.right]] += posterior;
        }
      }
    }
  }
  return counts;
}

void ExpectNear(const std::vector<double>& actual, const std::vector<double>& expected,
                const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-10 * (1 + std::abs(expected[i]))) << what << " " << i;
  }
}

TEST(SplitMergeTrainer, BinarizesTheBerkeleyWay) {
  auto trainer = MakeTrainer(Trees(kTinyTrees), {});
  ASSERT_TRUE(trainer);
  const LatentPcfg& g = trainer->grammar();
  EXPECT_EQ(g.symbol_names[0], "ROOT");
  // NP -> DT JJ NN becomes NP -> @NP NN, @NP -> DT JJ.
  bool found_top = false, found_low = false;
  auto name = [&](int32_t s) { return g.symbol_names[s]; };
  for (const auto& r : g.binaries) {
    if (name(r.parent) == "NP" && name(r.left) == "@NP" && name(r.right) == "NN") found_top = true;
    if (name(r.parent) == "@NP" && name(r.left) == "DT" && name(r.right) == "JJ") found_low = true;
  }
  EXPECT_TRUE(found_top);
  EXPECT_TRUE(found_low);
  // The baseline is relative frequency: S -> NP VP (2 of 3 S nodes; the third has S -> @S .).
  for (const auto& r : g.binaries) {
    if (name(r.parent) == "S" && name(r.left) == "NP" && name(r.right) == "VP") {
      EXPECT_DOUBLE_EQ(r.probs[0], 2.0 / 3.0);
    }
  }
}

TEST(SplitMergeTrainer, ExpectedCountsEqualBruteForceSums) {
  SplitMergeOptions options;
  options.rare_word_threshold = 1;  // some rare words: signature statistics are exercised
  options.randomness = 20;
  auto trainer = MakeTrainer(Trees(kTinyTrees), options);
  ASSERT_TRUE(trainer);
  for (int split = 0; split < 2; ++split) {
    trainer->Split();
    trainer->EmIteration();
    const SplitMergeTrainer::ExpectedCounts counts = trainer->EStep();
    const SplitMergeTrainer::ExpectedCounts brute = BruteForceCounts(*trainer);
    EXPECT_EQ(counts.unparsable, 0);
    EXPECT_NEAR(counts.log_likelihood, brute.log_likelihood, 1e-9);
    ExpectNear(counts.binary, brute.binary, "binary");
    ExpectNear(counts.unary, brute.unary, "unary");
    ExpectNear(counts.token, brute.token, "token");
  }
  // With smoothing on, too.
  trainer->SetSmoothing(true);
  trainer->EmIteration();
  const SplitMergeTrainer::ExpectedCounts counts = trainer->EStep();
  const SplitMergeTrainer::ExpectedCounts brute = BruteForceCounts(*trainer);
  EXPECT_NEAR(counts.log_likelihood, brute.log_likelihood, 1e-9);
  ExpectNear(counts.binary, brute.binary, "binary");
  ExpectNear(counts.token, brute.token, "token");
}

TEST(SplitMergeTrainer, LogLikelihoodNeverDecreasesWithinACycle) {
  SplitMergeOptions options;
  options.rare_word_threshold = 0;  // the rare-word tying is not part of the EM objective
  auto trainer = MakeTrainer(SyntheticTrees(300, 7), options);
  ASSERT_TRUE(trainer);
  ExpectLogLikelihoodNeverDecreasesWithinACycle(trainer.get());
}

TEST(SplitMergeTrainer, SplitThenMergeEverySplitGivesBackTheGrammar) {
  SplitMergeOptions options;
  options.randomness = 5;
  auto trainer = MakeTrainer(SyntheticTrees(100, 3), options);
  ASSERT_TRUE(trainer);
  trainer->Split();
  for (int it = 0; it < 3; ++it) trainer->EmIteration();  // substates that differ
  const LatentPcfg before = trainer->grammar();
  std::vector<std::vector<double>> scores_before;
  for (int32_t t = 0; t < trainer->num_tokens(); ++t) {
    scores_before.push_back(trainer->TokenScores(t, /*no_smoothing=*/false));
  }
  trainer->Split();
  trainer->MergeAllSiblings();
  const LatentPcfg& after = trainer->grammar();
  ASSERT_EQ(after.num_substates, before.num_substates);
  for (size_t i = 0; i < before.binaries.size(); ++i) {
    ExpectNear(after.binaries[i].probs, before.binaries[i].probs, "binary");
  }
  for (size_t i = 0; i < before.unaries.size(); ++i) {
    ExpectNear(after.unaries[i].probs, before.unaries[i].probs, "unary");
  }
  for (int32_t t = 0; t < trainer->num_tokens(); ++t) {
    ExpectNear(trainer->TokenScores(t, false), scores_before[t], "lexicon");
  }
}

// Bit-identical rule scores and lexical scores.
void ExpectSameGrammar(const SplitMergeTrainer& one, const SplitMergeTrainer& two,
                       const std::string& what) {
  const LatentPcfg& a = one.grammar();
  const LatentPcfg& b = two.grammar();
  ASSERT_EQ(a.num_substates, b.num_substates) << what;
  for (size_t i = 0; i < a.binaries.size(); ++i)
    EXPECT_EQ(a.binaries[i].probs, b.binaries[i].probs) << what;
  for (size_t i = 0; i < a.unaries.size(); ++i)
    EXPECT_EQ(a.unaries[i].probs, b.unaries[i].probs) << what;
  for (int32_t t = 0; t < one.num_tokens(); ++t) {
    EXPECT_EQ(one.TokenScores(t), two.TokenScores(t)) << what;
  }
}

TEST(SplitMergeTrainer, ThreadsDoNotChangeTheGrammar) {
  SplitMergeOptions options;
  options.cycles = 1;
  options.split_iterations = 3;
  options.merge_iterations = 2;
  options.smooth_iterations = 2;
  const std::vector<Tree> trees = SyntheticTrees(200, 11);
  options.threads = 1;
  auto one = MakeTrainer(trees, options);
  options.threads = 2;
  auto two = MakeTrainer(trees, options);
  ASSERT_TRUE(one && two);
  ASSERT_TRUE(one->Train().ok());
  ASSERT_TRUE(two->Train().ok());
  ExpectSameGrammar(*one, *two, "1 and 2 threads");
  EXPECT_EQ(one->LogLikelihood(), two->LogLikelihood());
}

// The processes of a sharded E-step, as threads of this test: chunk counts queue up for process
// 0, and a broadcast hands process 0's sums to the others.
class FakeHub {
 public:
  explicit FakeHub(int shards) : to_zero_(shards) {}
  void Send(int from, const std::vector<double>& counts) {
    std::lock_guard lock(mutex_);
    to_zero_[from].push_back(counts);
    changed_.notify_all();
  }
  void Receive(int from, std::vector<double>* counts) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !to_zero_[from].empty(); });
    *counts = std::move(to_zero_[from].front());
    to_zero_[from].pop_front();
  }
  void Broadcast(int shard, long* seen, std::vector<double>& values) {
    std::unique_lock lock(mutex_);
    if (shard == 0) {
      broadcasts_.push_back(values);
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return static_cast<long>(broadcasts_.size()) > *seen; });
      values = broadcasts_[*seen];
    }
    ++*seen;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::deque<std::vector<double>>> to_zero_;
  std::vector<std::vector<double>> broadcasts_;
};

class FakeExchange : public ShardExchange {
 public:
  FakeExchange(FakeHub& hub, int shard, int shards) : hub_(hub), shard_(shard), shards_(shards) {}
  int shard() const override { return shard_; }
  int shards() const override { return shards_; }
  void SendChunk(const std::vector<double>& counts) override { hub_.Send(shard_, counts); }
  void ReceiveChunk(int from, std::vector<double>* counts) override { hub_.Receive(from, counts); }
  void Broadcast(std::vector<double>& values) override { hub_.Broadcast(shard_, &seen_, values); }

 private:
  FakeHub& hub_;
  int shard_, shards_;
  long seen_ = 0;
};

TEST(SplitMergeTrainer, ShardsOverProcessesGiveOneProcesssGrammar) {
  SplitMergeOptions options;
  options.cycles = 1;
  options.split_iterations = 3;
  options.merge_iterations = 2;
  options.smooth_iterations = 2;
  options.threads = 2;
  const std::vector<Tree> trees = SyntheticTrees(200, 12);
  auto one = MakeTrainer(trees, options);
  ASSERT_TRUE(one && one->Train().ok());
  for (int shards : {2, 3}) {
    FakeHub hub(shards);
    std::vector<std::unique_ptr<SplitMergeTrainer>> trainers(shards);
    std::vector<std::thread> processes;
    for (int shard = 0; shard < shards; ++shard) {
      processes.emplace_back([&, shard, options]() mutable {
        options.threads = 1 + shard % 2;
        options.exchange = std::make_shared<FakeExchange>(hub, shard, shards);
        trainers[shard] = MakeTrainer(trees, options);
        EXPECT_TRUE(trainers[shard]->Train().ok());
      });
    }
    for (std::thread& p : processes) p.join();
    for (int shard = 0; shard < shards; ++shard) {
      ExpectSameGrammar(*one, *trainers[shard],
                        std::to_string(shards) + " shards, shard " + std::to_string(shard));
    }
  }
}

TEST(SplitMergeTrainer, ExportLoadsAsATextGrammarAndAsACache) {
  SplitMergeOptions options;
  options.cycles = 2;
  options.split_iterations = 4;
  options.merge_iterations = 2;
  options.smooth_iterations = 2;
  auto trainer = MakeTrainer(SyntheticTrees(200, 5), options);
  ASSERT_TRUE(trainer);
  ASSERT_TRUE(trainer->Train().ok());
  auto model = trainer->Export();
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_GT(model->grammar.num_states(), model->grammar.num_symbols());
  const std::string dir = ::testing::TempDir() + "/split_merge_export";
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteGrammarTextFiles(*model, dir + "/g").ok());
  LoadOptions load;
  load.use_cache = false;
  auto text = ReadWriteGrammarTextFiles(dir + "/g", load);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(text->grammar.num_states(), model->grammar.num_states());
  EXPECT_EQ(text->grammar.num_binary_rules(), model->grammar.num_binary_rules());
  // Split trees travel in PREFIX.splits (ROOT, never split, has no line there).
  for (int32_t s = 1; s < model->grammar.num_symbols(); ++s) {
    EXPECT_EQ(text->grammar.symbol_split_trees[s], model->grammar.symbol_split_trees[s]);
  }
  ASSERT_TRUE(WriteModelCache(*model, dir + "/g.ckybin").ok());
  auto cached = ReadModelCache(dir + "/g.ckybin");
  ASSERT_TRUE(cached.ok()) << cached.status().message();
  ASSERT_TRUE(cached->lexicon_counts.has_value());
  // The exact (count-based) scorer gives a training word a score under its tag.
  auto lexicon = Lexicon::Build(*cached);
  ASSERT_TRUE(lexicon.ok()) << lexicon.status().message();
  EXPECT_TRUE(lexicon->exact());
  std::vector<double> scores(cached->grammar.num_states());
  EXPECT_GT(lexicon->Score("dog", 2, scores), 0);
  const int32_t nn = cached->grammar.FindState("NN_0");
  ASSERT_GE(nn, 0);
  EXPECT_TRUE(std::isfinite(scores[nn]));
  // The text rows are the exact scorer's on the words seen.
  auto text_lexicon = Lexicon::Build(*text);
  ASSERT_TRUE(text_lexicon.ok());
  std::vector<double> text_scores(text->grammar.num_states());
  text_lexicon->Score("dog", 2, text_scores);
  EXPECT_NEAR(text_scores[text->grammar.FindState("NN_0")], scores[nn], 1e-9);
}

}  // namespace
}  // namespace cky
