// The split-merge trainer's model, trees and E-step result (train/split_merge_trainer.h), which the
// CUDA E-step (train/cuda_estep.h) reads and fills too: in a header of their own, so that the
// trainer and its device E-step depend on them and not on each other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cky {

// The trainable model: base symbols (0 = ROOT), their substate counts and the rule scores.
struct LatentPcfg {
  struct BinaryRule {
    int32_t parent, left, right;
    std::vector<double> probs;  // [parent substate][left][right]
  };
  struct UnaryRule {
    int32_t parent, child;
    std::vector<double> probs;  // [parent substate][child]
  };
  std::vector<std::string> symbol_names;
  std::vector<int32_t> num_substates;
  std::vector<BinaryRule> binaries;
  std::vector<UnaryRule> unaries;
};

// A binarized training tree, nodes in post-order (children first, root last).
struct LatentTrainingTree {
  struct Node {
    int32_t symbol = 0;
    int32_t left = -1, right = -1;  // child node indices; right = -1 for a unary node
    int32_t rule = -1;              // LatentPcfg binary or unary rule index (not preterminals)
    int32_t token = -1;             // preterminals: the token type (tag, word, signature)
  };
  std::vector<Node> nodes;
};

// Expected counts of one E-step, and the training trees' log-likelihood.
struct LatentExpectedCounts {
  std::vector<double> binary;  // per rule, LatentPcfg's layout, concatenated in rule order
  std::vector<double> unary;
  std::vector<double> token;  // per token type, per substate of its tag
  double log_likelihood = 0;
  int32_t unparsable = 0;
};

}  // namespace cky
