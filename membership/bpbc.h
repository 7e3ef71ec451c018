// Bitwise-parallel bulk CKY (Fujita, Nakano and Ito): the grammar compiled to an AND/OR circuit
// over bit-vectors, the circuit minimised (IEICE 2017, Sect. 4: factoring the rule matrix of each
// parent, then simulated annealing), and its evaluation for many strings at once, one bit per
// string, on all CPU cores (here) or on the GPU (cuda/membership/bpbc_device.h). Every path agrees
// with RecognizeReference (membership/cyk_recognizer.h).
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "cuda/membership/bpbc_device.h"
#include "membership/cnf_grammar.h"

namespace cky {

// (OR of U[l], l in left) AND (OR of V[r], r in right), ORed into W[parent]: covers the rules
// parent -> l r for every l in left and r in right.
struct BpbcProduct {
  int32_t parent;
  std::vector<int32_t> left, right;  // sorted, non-empty
};

// The circuit computing W = U (x) V of a grammar: products sorted by parent. Together the products
// of a parent cover exactly its binary rules (they may overlap).
struct BpbcCircuit {
  int32_t num_nonterminals = 0;
  std::vector<BpbcProduct> products;

  // Gates as counted in the 2017 paper's Table 1: |left| + |right| per product (the ORs inside each
  // operand, the AND, and the OR into W), so a circuit of p rules has 2p gates before minimisation.
  int64_t GateCount() const;
  // The rules the circuit covers, sorted and deduplicated.
  std::vector<CnfBinaryRule> CoveredRules() const;
};

// One product per binary rule.
BpbcCircuit CompileCircuit(const CnfGrammar& grammar);

struct MinimizeOptions {
  bool factor = true;  // greedy joining of the fullest row or column of each parent's matrix
  bool anneal = true;  // then simulated annealing over joins and splits of products
  int64_t anneal_steps_per_product = 200;
  double initial_temperature = 1.0;
  double final_temperature = 0.02;
  uint64_t seed = 1;
  int threads = 0;  // parents are minimised in parallel; 0: all cores
};
// A smaller circuit covering the same rules (never more gates than `circuit`).
BpbcCircuit MinimizeCircuit(const BpbcCircuit& circuit, const MinimizeOptions& options = {});

// The circuit, chain rules and terminal rules in the flat form both evaluators read.
cuda::BpbcProgram FlattenCircuit(const CnfGrammar& grammar, const BpbcCircuit& circuit);

struct BulkCpuOptions {
  int word_bits = 64;              // 32 or 64 strings per machine word
  int threads = 0;                 // 0: all cores
  bool dynamic_scheduling = true;  // an atomic counter hands out string groups; else round robin
};
// accepted[s] = 1 when the grammar derives strings[s] (empty strings give 0). Strings of mixed
// lengths are grouped by length (at most cuda::BpbcGpu::kMaxLength terminals each).
StatusOr<std::vector<uint8_t>> RecognizeBulkCpu(const cuda::BpbcProgram& program,
                                                const std::vector<std::vector<int32_t>>& strings,
                                                const BulkCpuOptions& options = {});

// The same on the GPU (fails without a device).
StatusOr<std::vector<uint8_t>> RecognizeBulkGpu(const cuda::BpbcProgram& program,
                                                const std::vector<std::vector<int32_t>>& strings,
                                                const cuda::BpbcGpuOptions& options = {});

}  // namespace cky
