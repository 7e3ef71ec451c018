#include "parser/cuda_backend.h"

#include <numeric>
#include <optional>
#include <thread>

#include "common/thread_pool.h"
#include "common/timeline.h"
#include "cuda/common/device.h"
#include "cuda/viterbi/viterbi.h"
#include "parser/cpu_backend.h"
#include "parser/device_batches.h"
#include "parser/tree_extraction.h"

namespace cky {
namespace {

// The tree whose preorder nodes start at (*next) (cuda/viterbi/viterbi.h's DeviceTreeNode), as
// ExtractViterbiTree builds it from the chart: labels, chart scores, words as leaves.
Tree BuildDeviceTree(const Grammar& g, const std::vector<cuda::DeviceTreeNode>& nodes,
                     const std::vector<std::string>& words, size_t* next) {
  const cuda::DeviceTreeNode& node = nodes[(*next)++];
  Tree tree(ViterbiNodeLabel(g, node.state));
  tree.score = static_cast<double>(node.score);
  if (node.kind == cuda::DeviceTreeNode::kPreterminal) {
    tree.children.emplace_back(words[node.start]);
  } else {
    const int children = node.kind == cuda::DeviceTreeNode::kBinary ? 2 : 1;
    for (int c = 0; c < children; ++c)
      tree.children.push_back(BuildDeviceTree(g, nodes, words, next));
  }
  return tree;
}

}  // namespace

namespace {

int32_t Length(const SentenceInput& s) { return static_cast<int32_t>(s.words.size()); }

// A sentence's outcome from its chart as floats (the device's), extracted on the host.
ParseOutcome OutcomeOfFloatChart(const Grammar& grammar, const SentenceInput& s,
                                 const float* values) {
  Chart chart(Length(s), grammar.num_states());
  std::vector<double>& dst = chart.data();
  for (size_t j = 0; j < dst.size(); ++j) dst[j] = values[j];
  return ViterbiOutcome(grammar, s, chart);
}

class CudaBackend : public DeviceBackend {
 public:
  CudaBackend(const Grammar& g, std::unique_ptr<cuda::DeviceViterbi> device,
              const CudaBackendOptions& options)
      : DeviceBackend(options.device),
        grammar_(g),
        device_(std::move(device)),
        device_trees_(options.device_trees) {
    // `cky parse --timeline`: the device's own breakdown (CUDA events) goes into the notes.
    if (timeline::Enabled()) device_->SetProfiling(true);
  }

  std::string name() const override { return "cuda/" + device_->kernel(); }

 protected:
  Limits BatchLimits() const override {
    return {.budget = device_->BatchBudget(),
            .bytes = [this](int32_t n) { return device_->BytesForSentence(n); }};
  }

  StatusOr<std::unique_ptr<Backend>> MakeCpuFallback() override {
    return MakeCpuBackend(
        grammar_, {.decoder = DecoderKind::kViterbi, .threads = options().extraction_threads});
  }

  std::string ProfileReport() const override { return device_->ProfileReport(); }

  std::optional<DeviceFailure> RunBatch(std::span<const SentenceInput> sentences,
                                        const std::vector<size_t>& batch, bool /*pruned*/,
                                        std::vector<ParseOutcome>* outcomes) override {
    std::vector<cuda::SentenceRef> refs;
    for (size_t i : batch)
      refs.push_back({Length(sentences[i]), sentences[i].lexical.scores.data()});
    std::vector<const float*> charts;
    std::vector<cuda::DeviceTree> trees;
    std::string error;
    const bool on_device = device_trees_ && device_->SupportsTrees();
    cuda::BatchResult result;
    {
      timeline::Scope scope(on_device ? "cuda batch (to trees)" : "cuda batch (to charts)");
      result = on_device ? device_->ParseTrees(refs, &trees, &error)
                         : device_->InsideBatch(refs, &charts, &error);
    }
    if (result != cuda::BatchResult::kOk) {
      // The previous batch's extraction may read the host chart buffer a retry writes: finish it.
      FinishExtraction();
      return DeviceFailure{.out_of_memory = result == cuda::BatchResult::kOutOfMemory,
                           .error = error};
    }
    if (on_device) {
      // Trees read on the device: only their nodes came back.
      timeline::Scope scope("trees from device nodes");
      for (size_t k = 0; k < batch.size(); ++k) {
        ParseOutcome& outcome = (*outcomes)[batch[k]];
        outcome = OutcomeOfDeviceTree(sentences[batch[k]], trees[k]);
        Done(batch[k], outcome, false);
      }
      return std::nullopt;
    }
    // Tree extraction from the copied-back charts, in parallel and in the background, while the
    // device computes the next batch (the device keeps two host chart buffers).
    Extract([this, sentences, batch, charts = std::move(charts), outcomes](ThreadPool& pool) {
      timeline::Scope scope("tree extraction on the host");
      pool.ParallelFor(static_cast<int>(batch.size()), [&](int k, int) {
        ParseOutcome& outcome = (*outcomes)[batch[k]];
        outcome = OutcomeOfFloatChart(grammar_, sentences[batch[k]], charts[k]);
        Done(batch[k], outcome, false);
      });
    });
    return std::nullopt;
  }

 private:
  ParseOutcome OutcomeOfDeviceTree(const SentenceInput& s, const cuda::DeviceTree& tree) const {
    ParseOutcome outcome;
    switch (tree.status) {
      case cuda::DeviceTree::kNoParse:
        outcome.status = ParseStatus::kNoParse;
        outcome.message = "no parse";
        return outcome;
      case cuda::DeviceTree::kChart:  // the device search stopped: the host's gives the answer
        return OutcomeOfFloatChart(grammar_, s, tree.chart.data());
      case cuda::DeviceTree::kTree:
        break;
    }
    size_t next = 0;
    outcome.tree = BuildDeviceTree(grammar_, tree.nodes, s.words, &next);
    outcome.status = ParseStatus::kOk;
    outcome.log_score = outcome.tree.score;  // the root's chart score
    outcome.log_likelihood = outcome.log_score;
    return outcome;
  }

  const Grammar& grammar_;
  std::unique_ptr<cuda::DeviceViterbi> device_;
  bool device_trees_;
};

// Pruned Viterbi: the pruner's pre-parses and fine pass on the device, trees extracted on the
// host; sentences pruning lost go to the exact CUDA backend (made at the first need).
class CudaPrunedBackend : public DeviceBackend {
 public:
  CudaPrunedBackend(const Grammar& grammar, std::unique_ptr<CudaCoarseToFine> pruner,
                    const CudaPrunerOptions& options)
      : DeviceBackend({.max_batch_sentences = options.max_batch_sentences,
                       .extraction_threads = options.threads,
                       .cpu_fallback = options.cpu_fallback}),
        grammar_(grammar),
        pruner_(std::move(pruner)) {
    if (timeline::Enabled()) pruner_->SetProfiling(true);
  }
  std::string name() const override { return "cuda/pruned"; }

 protected:
  Limits BatchLimits() const override {
    return {.budget = pruner_->BatchBudget(),
            .bytes = [this](int32_t n) { return pruner_->BytesForSentence(n); }};
  }
  bool Pruned() const override { return true; }
  StatusOr<std::unique_ptr<Backend>> MakeCpuFallback() override {
    return MakeCpuBackend(grammar_, {.decoder = DecoderKind::kViterbi,
                                     .threads = options().extraction_threads,
                                     .pruner = pruner_->shared_pruner()});
  }
  std::string ProfileReport() const override { return pruner_->ProfileReport(); }

  std::optional<DeviceFailure> RunBatch(std::span<const SentenceInput> sentences,
                                        const std::vector<size_t>& batch, bool /*pruned*/,
                                        std::vector<ParseOutcome>* outcomes) override {
    std::vector<const LexicalScores*> lexical, next;
    for (size_t i : batch) lexical.push_back(&sentences[i].lexical);
    if (const std::vector<size_t>* coming = NextBatch()) {
      for (size_t i : *coming) next.push_back(&sentences[i].lexical);
    }
    std::vector<size_t> positions(batch.size());
    std::iota(positions.begin(), positions.end(), size_t{0});
    const auto visit = [&](CudaPrunedBatch& device_batch) {
      if (!device_batch.trees.empty()) {
        // Trees read on the device: only their nodes came back. Built while the device runs the
        // next batch (its kernels queued first), on the extraction threads.
        BesideNextBatch([this, sentences, batch, outcomes,
                         device_batch = std::move(device_batch)](ThreadPool& pool) {
          timeline::Scope scope("trees from device nodes");
          pool.ParallelFor(int(device_batch.indices.size()), [&](int b, int) {
            const cuda::DeviceTree& tree = device_batch.trees[b];
            if (tree.status == cuda::DeviceTree::kChart) return;
            const size_t i = batch[device_batch.indices[b]];
            (*outcomes)[i] = OutcomeOfPrunedTree(sentences[i], tree, device_batch.root_score[b]);
            Done(i, (*outcomes)[i], /*pruned=*/true);
          });
          // Where the device search stopped, the CPU fallback (the CPU pruned backend: the same
          // pruner and fine pass, so the same chart) parses the sentence and its search goes on.
          std::vector<std::pair<size_t, std::string>> on_cpu;
          for (size_t b = 0; b < device_batch.indices.size(); ++b) {
            if (device_batch.trees[b].status != cuda::DeviceTree::kChart) continue;
            on_cpu.emplace_back(batch[device_batch.indices[b]],
                                "whose tree the device search did not finish");
          }
          ParseOnCpu(sentences, on_cpu, outcomes);
        });
        return;
      }
      // Trees are extracted in the background, in parallel, while the device runs the next batch.
      Extract([this, sentences, batch, outcomes,
               device_batch = std::move(device_batch)](ThreadPool& pool) {
        charts_.resize(pool.threads());  // one per worker, all -infinity between sentences
        pool.ParallelFor(int(device_batch.indices.size()), [&](int b, int worker) {
          const size_t i = batch[device_batch.indices[b]];
          Chart& chart = charts_[worker];
          device_batch.FillChart(b, &chart);
          (*outcomes)[i] = ViterbiOutcome(grammar_, sentences[i], chart);
          device_batch.ClearChart(b, &chart);
          Done(i, (*outcomes)[i], /*pruned=*/true);
        });
      });
    };
    return pruner_->RunBatch(
        lexical, positions, visit, /*stats=*/nullptr,
        [this](const uint8_t* /*fine_mask*/, const void* /*mask_ready*/) { RunBesideDevice(); },
        next);
  }

  // A sentence's outcome from its tree read on the device (kTree or kNoParse), as ViterbiOutcome
  // gives it from the chart; the log-score is the fine chart's ROOT score (a double).
  ParseOutcome OutcomeOfPrunedTree(const SentenceInput& s, const cuda::DeviceTree& tree,
                                   double root_score) const {
    ParseOutcome outcome;
    if (tree.status != cuda::DeviceTree::kTree) {
      outcome.status = ParseStatus::kNoParse;
      outcome.message = "no parse";
      return outcome;
    }
    size_t next = 0;
    outcome.tree = BuildDeviceTree(grammar_, tree.nodes, s.words, &next);
    outcome.tree.score = root_score;
    outcome.status = ParseStatus::kOk;
    outcome.log_score = root_score;
    outcome.log_likelihood = root_score;
    return outcome;
  }

  // As the CPU pruned backend: a sentence pruning loses is parsed without pruning.
  void ParseUnpruned(std::span<const SentenceInput> sentences, std::vector<size_t> which,
                     std::vector<ParseOutcome>* outcomes) override {
    if (!exact_) {
      auto cuda = MakeCudaBackend(grammar_,
                                  {.device = {.extraction_threads = options().extraction_threads}});
      exact_ =
          cuda.ok() ? std::move(*cuda) : MakeCpuBackend(grammar_, options().extraction_threads);
    }
    std::vector<SentenceInput> inputs;
    for (size_t i : which) inputs.push_back(sentences[i]);
    std::vector<ParseOutcome> exact = exact_->ParseBatch(inputs);
    for (size_t j = 0; j < which.size(); ++j) {
      (*outcomes)[which[j]] = std::move(exact[j]);
      Done(which[j], (*outcomes)[which[j]], false);
    }
  }

 private:
  const Grammar& grammar_;
  std::unique_ptr<CudaCoarseToFine> pruner_;
  std::vector<Chart> charts_;  // the extraction workers'
  std::unique_ptr<Backend> exact_;
};

}  // namespace

bool CudaBackendAvailable() { return cuda::BuiltWithCuda() && cuda::DeviceAvailable(); }

const std::vector<cuda::ViterbiKernelInfo>& CudaKernels() { return cuda::ViterbiKernels(); }

std::vector<std::string> CudaKernelNames() { return cuda::ViterbiKernelNames(); }

std::unique_ptr<Backend> MakeCudaBackendForDevice(const Grammar& grammar,
                                                  std::unique_ptr<cuda::DeviceViterbi> device,
                                                  const CudaBackendOptions& options) {
  return std::make_unique<CudaBackend>(grammar, std::move(device), options);
}

StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const Grammar& grammar,
                                                   const CudaBackendOptions& options) {
  if (!cuda::BuiltWithCuda()) {
    return Status::Error("this build has no CUDA support; use --backend cpu");
  }
  if (!cuda::DeviceAvailable()) return Status::Error("no CUDA device; use --backend cpu");
  std::string error;
  auto device = cuda::DeviceViterbi::Create(
      CudaGrammarView(grammar),
      {.kernel = options.kernel, .max_batch_bytes = options.device.max_batch_bytes}, &error);
  if (!device) return Status::Error("CUDA backend: " + error);
  return std::unique_ptr<Backend>(
      std::make_unique<CudaBackend>(grammar, std::move(device), options));
}

StatusOr<std::unique_ptr<Backend>> MakeCudaPrunedBackend(const Grammar& grammar,
                                                         const PruningOptions& pruning,
                                                         const CudaPrunerOptions& options) {
  auto pruner = CudaCoarseToFine::Create(grammar, pruning, options);
  if (!pruner.ok()) return pruner.status();
  return std::unique_ptr<Backend>(new CudaPrunedBackend(grammar, std::move(*pruner), options));
}

}  // namespace cky
