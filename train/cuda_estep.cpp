#include "train/cuda_estep.h"

#include "cuda/train/split_merge_estep.h"

namespace cky {

struct CudaEStep::Impl {
  std::unique_ptr<cuda::DeviceSplitMergeEStep> device;
  std::vector<double> binary_probs, unary_probs;  // flat copies of the rules' probabilities
};

CudaEStep::CudaEStep(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaEStep::~CudaEStep() = default;

StatusOr<std::unique_ptr<CudaEStep>> CudaEStep::Create(const LatentPcfg& grammar,
                                                       const std::vector<LatentTrainingTree>& trees,
                                                       const std::vector<int32_t>& token_tags,
                                                       int chunks) {
  cuda::SplitMergeTreebank tb;
  tb.num_symbols = int32_t(grammar.symbol_names.size());
  tb.tree_first_node.push_back(0);
  const size_t num_trees = trees.size();
  for (int chunk = 0; chunk < chunks; ++chunk) {
    for (size_t t = num_trees * chunk / chunks; t < num_trees * (chunk + 1) / chunks; ++t) {
      tb.tree_chunk.push_back(chunk);
    }
  }
  for (const LatentTrainingTree& tree : trees) {
    const int32_t first = tb.tree_first_node.back();
    for (const LatentTrainingTree::Node& node : tree.nodes) {
      tb.symbol.push_back(node.symbol);
      tb.left.push_back(node.left < 0 ? -1 : first + node.left);
      tb.right.push_back(node.right < 0 ? -1 : first + node.right);
      tb.rule.push_back(node.token >= 0 ? -1 : node.rule);
      tb.token.push_back(node.token);
    }
    tb.tree_first_node.push_back(first + int32_t(tree.nodes.size()));
  }
  for (const auto& rule : grammar.binaries) {
    tb.binary_parent.push_back(rule.parent);
    tb.binary_left.push_back(rule.left);
    tb.binary_right.push_back(rule.right);
  }
  for (const auto& rule : grammar.unaries) {
    tb.unary_parent.push_back(rule.parent);
    tb.unary_child.push_back(rule.child);
  }
  tb.token_tag = token_tags;
  std::string error;
  auto device = cuda::DeviceSplitMergeEStep::Create(tb, &error);
  if (!device) return Status::Error("CUDA E-step: " + error);
  auto impl = std::make_unique<Impl>();
  impl->device = std::move(device);
  return std::unique_ptr<CudaEStep>(new CudaEStep(std::move(impl)));
}

StatusOr<LatentExpectedCounts> CudaEStep::Run(const LatentPcfg& grammar,
                                              const std::vector<int64_t>& binary_offset,
                                              const std::vector<int64_t>& unary_offset,
                                              const std::vector<int64_t>& token_offset,
                                              const std::vector<double>& lexical) {
  Impl& m = *impl_;
  m.binary_probs.resize(binary_offset.back());
  for (size_t i = 0; i < grammar.binaries.size(); ++i) {
    std::copy(grammar.binaries[i].probs.begin(), grammar.binaries[i].probs.end(),
              m.binary_probs.begin() + binary_offset[i]);
  }
  m.unary_probs.resize(unary_offset.back());
  for (size_t i = 0; i < grammar.unaries.size(); ++i) {
    std::copy(grammar.unaries[i].probs.begin(), grammar.unaries[i].probs.end(),
              m.unary_probs.begin() + unary_offset[i]);
  }
  cuda::SplitMergeParameters params;
  params.num_substates = grammar.num_substates.data();
  params.binary_offset = binary_offset.data();
  params.unary_offset = unary_offset.data();
  params.token_offset = token_offset.data();
  params.binary_probs = m.binary_probs.data();
  params.unary_probs = m.unary_probs.data();
  params.lexical = lexical.data();
  cuda::SplitMergeCounts counts;
  std::string error;
  if (!m.device->Run(params, &counts, &error)) return Status::Error("CUDA E-step: " + error);
  LatentExpectedCounts out;
  out.binary = std::move(counts.binary);
  out.unary = std::move(counts.unary);
  out.token = std::move(counts.token);
  out.log_likelihood = counts.log_likelihood;
  out.unparsable = counts.unparsable;
  return out;
}

std::string CudaEStep::LastRunProfile() const { return impl_->device->LastRunProfile(); }

}  // namespace cky
