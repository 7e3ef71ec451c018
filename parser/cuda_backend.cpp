#include "parser/cuda_backend.h"

#include <optional>
#include <thread>

#include "common/thread_pool.h"
#include "common/timeline.h"
#include "cuda/common/device.h"
#include "cuda/viterbi/viterbi.h"
#include "parser/device_batches.h"
#include "parser/tree_extraction.h"
#include "parser/viterbi_cpu.h"

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

cuda::GrammarArrays CudaGrammarArrays(const Grammar& g) {
  cuda::GrammarArrays a;
  a.num_states = g.num_states();
  a.num_symbols = g.num_symbols();
  a.state_symbol = g.state_symbol.data();
  a.symbol_first_state = g.symbol_first_state.data();
  a.symbol_num_substates = g.symbol_num_substates.data();
  a.num_binary = g.num_binary_rules();
  a.binary_parent = g.binary_parent.data();
  a.binary_left = g.binary_left.data();
  a.binary_right = g.binary_right.data();
  a.binary_log_prob = g.binary_log_prob.data();
  a.binary_parent_begin = g.binary_parent_begin.data();
  a.num_unary = g.num_unary_rules();
  a.unary_child = g.unary_child.data();
  a.unary_log_prob = g.unary_log_prob.data();
  a.unary_parent_begin = g.unary_parent_begin.data();
  a.symbol_is_phrasal = g.symbol_is_phrasal.data();
  return a;
}

namespace {

class CudaBackend : public ViterbiBackend {
 public:
  CudaBackend(const Grammar& g, std::unique_ptr<cuda::DeviceViterbi> device,
              const CudaBackendOptions& options)
      : grammar_(g),
        device_(std::move(device)),
        options_(options),
        extraction_pool_(options.extraction_threads) {
    // `cky parse --timeline`: the device's own breakdown (CUDA events) goes into the notes.
    if (timeline::Enabled()) device_->SetProfiling(true);
  }

  ~CudaBackend() override { FinishExtraction(); }

  std::string name() const override { return "cuda/" + device_->kernel(); }

  std::vector<ParseOutcome> ParseBatch(std::span<const SentenceInput> sentences) override {
    std::vector<ParseOutcome> outcomes(sentences.size());
    std::vector<size_t> order;
    for (size_t i = 0; i < sentences.size(); ++i) {
      if (sentences[i].words.empty()) {
        outcomes[i].status = ParseStatus::kNoParse;
        outcomes[i].message = "empty sentence";
      } else if (device_->BytesForSentence(Length(sentences[i])) > device_->BatchBudget()) {
        ParseOnCpu(sentences[i], "does not fit the device batch budget", &outcomes[i]);
      } else {
        order.push_back(i);
      }
    }
    RunInDeviceBatches(
        std::move(order), [&](size_t i) { return Length(sentences[i]); },
        [&](int32_t n) { return device_->BytesForSentence(n); },
        {.max_sentences = options_.max_batch_sentences, .budget = device_->BatchBudget()},
        [&](const std::vector<size_t>& batch) { return RunBatch(sentences, batch, &outcomes); },
        [&](size_t i, const DeviceFailure& failure) {
          if (options_.cpu_fallback) {
            ParseOnCpu(sentences[i], failure.Why(), &outcomes[i]);
          } else {
            outcomes[i] = DeviceFailureOutcome(failure);
          }
        });
    FinishExtraction();
    if (timeline::Enabled())
      timeline::Note("cuda device (" + name() + ")", device_->ProfileReport());
    return outcomes;
  }

 private:
  static int32_t Length(const SentenceInput& s) { return static_cast<int32_t>(s.words.size()); }

  void ParseOnCpu(const SentenceInput& s, const std::string& why, ParseOutcome* outcome) {
    const int32_t n = Length(s);
    if (std::string no = ChartsDoNotFit(n, ChartBytes(n, 8.0 * grammar_.num_states()));
        !no.empty()) {
      *outcome = {.status = ParseStatus::kOutOfMemory, .message = why + "; on the CPU, " + no};
      return;
    }
    if (!cpu_) cpu_ = std::make_unique<CpuViterbi>(grammar_);
    try {
      Chart chart;
      cpu_->Inside(s.lexical, &chart);
      *outcome = ParseWithChart(grammar_, s, chart);
      if (outcome->status == ParseStatus::kOk) {
        outcome->message =
            "parsed on the CPU: a sentence of " + std::to_string(s.words.size()) + " words " + why;
      }
    } catch (const std::bad_alloc&) {
      outcome->status = ParseStatus::kOutOfMemory;
      outcome->message = "out of memory for a chart of " + std::to_string(s.words.size()) +
                         " words, on the device and on the CPU";
    }
  }

  // One device batch; on a failure (out of memory or any other) it returns what failed, and the
  // caller retries smaller (RunSplittingFailedBatches).
  std::optional<DeviceFailure> RunBatch(std::span<const SentenceInput> sentences,
                                        const std::vector<size_t>& batch,
                                        std::vector<ParseOutcome>* outcomes) {
    std::vector<cuda::SentenceRef> refs;
    for (size_t i : batch)
      refs.push_back({Length(sentences[i]), sentences[i].lexical.scores.data()});
    std::vector<const float*> charts;
    std::vector<cuda::DeviceTree> trees;
    std::string error;
    const bool on_device = options_.device_trees && device_->SupportsTrees();
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
      for (size_t k = 0; k < batch.size(); ++k)
        (*outcomes)[batch[k]] = OutcomeOfDeviceTree(sentences[batch[k]], trees[k]);
      return std::nullopt;
    }
    // Tree extraction from the copied-back charts, in parallel and in the background, while the
    // device computes the next batch (the device keeps two host chart buffers).
    FinishExtraction();
    extraction_ = std::thread([this, sentences, batch, charts = std::move(charts), outcomes] {
      timeline::Scope scope("tree extraction on the host");
      const int32_t num_states = grammar_.num_states();
      extraction_pool_.ParallelFor(static_cast<int>(batch.size()), [&](int k, int) {
        const SentenceInput& s = sentences[batch[k]];
        Chart chart(Length(s), num_states);
        const float* src = charts[k];
        std::vector<double>& dst = chart.data();
        for (size_t j = 0; j < dst.size(); ++j) dst[j] = src[j];
        (*outcomes)[batch[k]] = ParseWithChart(grammar_, s, chart);
      });
    });
    return std::nullopt;
  }

  ParseOutcome OutcomeOfDeviceTree(const SentenceInput& s, const cuda::DeviceTree& tree) const {
    ParseOutcome outcome;
    switch (tree.status) {
      case cuda::DeviceTree::kNoParse:
        outcome.status = ParseStatus::kNoParse;
        outcome.message = "no parse";
        return outcome;
      case cuda::DeviceTree::kChart: {  // the device search stopped: the host's gives the answer
        Chart chart(Length(s), grammar_.num_states());
        std::vector<double>& dst = chart.data();
        for (size_t j = 0; j < dst.size(); ++j) dst[j] = tree.chart[j];
        return ParseWithChart(grammar_, s, chart);
      }
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

  void FinishExtraction() {
    if (extraction_.joinable()) extraction_.join();
  }

  const Grammar& grammar_;
  std::unique_ptr<cuda::DeviceViterbi> device_;
  CudaBackendOptions options_;
  std::unique_ptr<CpuViterbi> cpu_;
  // Tree extraction runs on extraction_, one background thread per batch (so that the device
  // computes the next batch meanwhile), which spreads the batch's sentences over extraction_pool_.
  ThreadPool extraction_pool_;
  std::thread extraction_;  // the previous batch's tree extraction
};

}  // namespace

bool CudaBackendAvailable() { return cuda::BuiltWithCuda() && cuda::DeviceAvailable(); }

std::vector<std::string> CudaKernelNames() { return cuda::ViterbiKernelNames(); }

StatusOr<std::unique_ptr<ViterbiBackend>> MakeCudaBackend(const Grammar& grammar,
                                                          const std::string& kernel) {
  return MakeCudaBackend(grammar, CudaBackendOptions{.kernel = kernel});
}

std::unique_ptr<ViterbiBackend> MakeCudaBackendForDevice(
    const Grammar& grammar, std::unique_ptr<cuda::DeviceViterbi> device,
    const CudaBackendOptions& options) {
  return std::make_unique<CudaBackend>(grammar, std::move(device), options);
}

StatusOr<std::unique_ptr<ViterbiBackend>> MakeCudaBackend(const Grammar& grammar,
                                                          const CudaBackendOptions& options) {
  if (!cuda::BuiltWithCuda()) {
    return Status::Error("this build has no CUDA support; use --backend cpu");
  }
  if (!cuda::DeviceAvailable()) return Status::Error("no CUDA device; use --backend cpu");
  std::string error;
  auto device = cuda::DeviceViterbi::Create(
      CudaGrammarArrays(grammar),
      {.kernel = options.kernel, .max_batch_bytes = options.max_batch_bytes}, &error);
  if (!device) return Status::Error("CUDA backend: " + error);
  return std::unique_ptr<ViterbiBackend>(
      std::make_unique<CudaBackend>(grammar, std::move(device), options));
}

}  // namespace cky
