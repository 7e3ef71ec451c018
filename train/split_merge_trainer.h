// Split-merge EM training of a latent-annotation PCFG (Petrov, Barrett, Thibaux & Klein 2006),
// following the Berkeley trainer (edu.berkeley.nlp.PCFGLA.GrammarTrainer) and its defaults:
//
//   - trees normalised as NormalizeTrainingTree does (train/pcfg_trainer.h), binarized the Berkeley
//     way with vertical markovization 1 and horizontal 0: X -> c1 ... ck becomes
//     X -> @X ck, @X -> @X c(k-1), ..., @X -> c1 c2 (leftmost children deepest);
//   - the baseline: every symbol one substate, rules and lexicon by relative frequency;
//   - per cycle: split every substate of every symbol but ROOT in two (rule scores shared among
//     the children with a seeded random perturbation of `randomness` percent that keeps every
//     parent substate normalised, lexicon counts halved), `split_iterations` EM iterations; merge
//     back the `merge_fraction` of sibling splits whose removal loses the least likelihood
//     (Berkeley's approximation: per tree node, the inside score of the merged substate is the
//     merge-weight average of the pair's, its outside score their sum), `merge_iterations` EM
//     iterations; then `smooth_iterations` EM iterations with SmoothAcrossParentBits smoothing
//     (rules: `grammar_smoothing`, lexicon: `lexicon_smoothing`; each substate keeps 1 - s of its
//     score and takes s from the other substates of its top-level split branch).
//   - the E-step is inside-outside over the substates of each gold tree's nodes (per-node scaled
//     doubles, so long sentences neither underflow nor overflow); the M-step renormalises rule
//     counts per parent substate (scores below `rule_threshold` become 0).
//   - the lexicon is Berkeley's SophisticatedLexicon: expected counts c(tag_k, word), c(tag_k);
//     tokens of words seen at most `rare_word_threshold` times also count towards their
//     signature (lexicon/signature.h) as c(tag_k, signature), c_unseen(tag_k); after each E-step
//     the substate distribution of rare words is tied to their tag's unseen distribution
//     (tieRareWordStats). During training words score with Berkeley's noSmoothing formula; the
//     exported model carries the counts, and lexicon/berkeley_lexicon.h scores them exactly as the
//     Berkeley parser scores a .gr lexicon.
//
// Deliberate differences from the Berkeley trainer (documented in train/README.md): the baseline
// has no random perturbation (Berkeley adds U(0,1) to every baseline rule count and 1% noise to
// lexicon counts); EM uses the direct unary rules of the gold trees (Berkeley's training grammar
// also holds unary chain closures); after a merge the lexicon's counts are merged by summation
// instead of being re-estimated by a lexicon-only E-step; there is no validation set (Berkeley
// keeps the grammar of the best validation likelihood); signatures test "-KNOWNLC" against all
// training words (Berkeley: against the words counted so far).
//
// Deterministic: the same trees, options and seed give the same grammar, whatever the thread
// count (trees are cut into a fixed number of chunks whose counts are summed in chunk order).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "grammar_io/berkeley_model.h"
#include "train/latent_pcfg.h"
#include "treebank/tree.h"

namespace cky {

// The E-step over several processes (`cky train --split-merge --mpi`): process shard() of
// shards() computes the chunks of trees c with c % shards() == shard(); the others send each of
// their chunks' counts to process 0 (SendChunk, in chunk order), which adds every chunk's counts in
// chunk order, exactly as one process does, and sends the sums to all (Broadcast): every process
// takes the same M-step and merges, and the grammar is bit for bit one process's. Every process
// must then call what runs an E-step (Train, EmIteration, EStep, LogLikelihood) together.
class ShardExchange {
 public:
  virtual ~ShardExchange() = default;
  virtual int shard() const = 0;
  virtual int shards() const = 0;
  virtual void SendChunk(const std::vector<double>& counts) = 0;         // to process 0
  virtual void ReceiveChunk(int from, std::vector<double>* counts) = 0;  // process 0, from `from`
  virtual void Broadcast(std::vector<double>& values) = 0;               // process 0's to all
};
// Where the E-step runs: the CPU reference (threads), a CUDA device (train/cuda_estep.h), or
// the device when there is one and the CPU otherwise.
enum class EStepBackend { kCpu, kCuda, kAuto };

struct SplitMergeOptions {
  int cycles = 2;
  double merge_fraction = 0.5;  // of the sibling splits merged back per cycle
  int split_iterations = 50;    // EM iterations after a split (Berkeley: 50)
  int merge_iterations = 20;    // after a merge (20)
  int smooth_iterations = 10;   // with smoothing (10)
  double randomness = 1.0;      // perturbation of split rule scores, in percent
  double grammar_smoothing = 0.01;
  double lexicon_smoothing = 0.1;
  int rare_word_threshold = 20;  // Berkeley's -rare
  double smooth_unseen = 0.5;    // SophisticatedLexicon smooth[0] (-sm1)
  double smooth_seen = 0.1;      // smooth[1] (-sm2)
  double rule_threshold = 1e-30;
  uint64_t seed = 2;
  int threads = 1;  // E-step threads; results do not depend on it
  EStepBackend backend = EStepBackend::kCpu;
  // The CUDA E-step on several devices (`cky train --devices`): device k of K takes the trees of
  // the reference's chunks [32 k / K, 32 (k + 1) / K) and the counts are summed in device order,
  // within train/cuda_estep.h's tolerance of one device's (not bit for bit). A number may repeat
  // (0,0: two shares on device 0). Empty: one device, the current one.
  std::vector<int> devices;
  std::shared_ptr<ShardExchange> exchange;  // several processes (CPU E-step); null: this one alone
};

struct SplitMergeProgress {
  int cycle = 0;              // 1-based
  std::string phase;          // "split", "merge", "smooth"
  int iteration = 0;          // 1-based within the phase
  double log_likelihood = 0;  // of the training trees under the grammar before this M-step
  double seconds = 0;         // of this EM iteration
};

class SplitMergeTrainer {
 public:
  // Normalises and binarizes the trees and estimates the baseline (one substate per symbol).
  static StatusOr<std::unique_ptr<SplitMergeTrainer>> Create(const std::vector<Tree>& trees,
                                                             const SplitMergeOptions& options);
  ~SplitMergeTrainer();

  // The whole schedule: options.cycles times split, EM, merge, EM, smoothing EM.
  // `progress` is called after every EM iteration.
  Status Train(const std::function<void(const SplitMergeProgress&)>& progress = {});

  // --- The steps Train runs ---
  // Splits every substate of every symbol but ROOT in two; turns smoothing off.
  void Split();
  // Merges back options.merge_fraction of the sibling pairs (those losing least likelihood).
  void Merge();
  // Merges every sibling pair (the inverse of Split, for tests).
  void MergeAllSiblings();
  // Turns SmoothAcrossParentBits smoothing of rules and lexicon on or off.
  void SetSmoothing(bool on);
  // One E-step and M-step; returns the training log-likelihood under the grammar before it.
  double EmIteration();

  // --- Inspection ---
  using ExpectedCounts = LatentExpectedCounts;
  // The E-step on the chosen backend: the device's when there is one (the CPU reference after the
  // device failed: estep_note() says why), else ReferenceEStep.
  ExpectedCounts EStep() const;
  // The plain CPU reference E-step (threads over fixed chunks of trees).
  ExpectedCounts ReferenceEStep() const;
  // The CUDA E-step (an error without a device or with the cpu backend); with several devices,
  // each runs its share at once, on a thread of its own.
  StatusOr<ExpectedCounts> DeviceEStep() const;
  // "cuda" or "cpu": where EStep runs now; why the device is not used (empty when it is).
  std::string estep_backend() const;
  std::string estep_note() const;
  // Where the last device E-step's time went (empty on the CPU).
  std::string estep_profile() const;
  double LogLikelihood() const { return EStep().log_likelihood; }
  const LatentPcfg& grammar() const { return grammar_; }
  const std::vector<LatentTrainingTree>& trees() const { return trees_; }
  // P(word | tag_k) for a token type, as the E-step uses it (noSmoothing), or as the parser
  // scores it (`no_smoothing` false).
  std::vector<double> TokenScores(int32_t token, bool no_smoothing = true) const;
  int32_t num_tokens() const;
  // Offsets of the rules and token types in ExpectedCounts' arrays.
  int64_t binary_offset(int32_t rule) const { return binary_offset_[rule]; }
  int64_t unary_offset(int32_t rule) const { return unary_offset_[rule]; }
  int64_t token_offset(int32_t token) const { return token_offset_[token]; }
  int64_t total_substates() const;

  // The trained model: the grammar (binary rules with p > 0; unary chains closed as Berkeley's
  // computePairsOfUnaries: Viterbi and sum closures over chains of up to two rules), split trees
  // and the lexicon's counts (so that scores equal a .gr lexicon's) with the rows a text export
  // holds.
  StatusOr<BerkeleyModel> Export() const;

 private:
  struct Impl;
  explicit SplitMergeTrainer(std::unique_ptr<Impl> impl);
  void Layout();
  void MergeImpl(bool all);
  void MStep(const ExpectedCounts& counts);
  static void RunEStepChunks(const Impl& m, std::vector<ExpectedCounts>* slots,
                             ExpectedCounts* total,
                             const std::function<void(int chunk, int slot)>& work,
                             const std::function<void(int slot)>& reduce);

  std::unique_ptr<Impl> impl_;
  LatentPcfg grammar_;
  std::vector<LatentTrainingTree> trees_;
  std::vector<int64_t> binary_offset_, unary_offset_, token_offset_;
};

}  // namespace cky
