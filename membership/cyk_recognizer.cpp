#include "membership/cyk_recognizer.h"

#include <memory>

namespace cky {

bool RecognizeReference(const CnfGrammar& grammar, std::span<const int32_t> string) {
  const int32_t n = static_cast<int32_t>(string.size());
  if (n == 0) return false;
  const int32_t num_symbols = grammar.num_nonterminals();
  // chart[(i * (n + 1) + j) * num_symbols + A]: A derives words i .. j-1.
  std::vector<uint8_t> chart(static_cast<size_t>(n) * (n + 1) * num_symbols, 0);
  auto cell = [&](int32_t i, int32_t j) {
    return &chart[(static_cast<size_t>(i) * (n + 1) + j) * num_symbols];
  };
  auto close_chain_rules = [&](uint8_t* symbols) {
    // unary_closure is transitive, so one pass over it completes the cell.
    for (const CnfUnaryRule& rule : grammar.unary_closure) {
      if (symbols[rule.child]) symbols[rule.parent] = 1;
    }
  };
  for (int32_t i = 0; i < n; ++i) {
    uint8_t* leaf = cell(i, i + 1);
    for (int32_t a : grammar.terminal_parents[string[i]]) leaf[a] = 1;
    close_chain_rules(leaf);
  }
  for (int32_t length = 2; length <= n; ++length) {
    for (int32_t i = 0; i + length <= n; ++i) {
      const int32_t j = i + length;
      uint8_t* target = cell(i, j);
      for (const CnfBinaryRule& rule : grammar.binary_rules) {
        for (int32_t split = i + 1; split < j; ++split) {
          if (cell(i, split)[rule.left] && cell(split, j)[rule.right]) {
            target[rule.parent] = 1;
            break;
          }
        }
      }
      close_chain_rules(target);
    }
  }
  return cell(0, n)[grammar.start] != 0;
}

cuda::MembershipGrammar ToMembershipGrammar(const CnfGrammar& grammar) {
  cuda::MembershipGrammar out;
  out.num_nonterminals = grammar.num_nonterminals();
  out.start = grammar.start;
  for (const CnfBinaryRule& rule : grammar.binary_rules) {
    out.rule_parent.push_back(rule.parent);
    out.rule_left.push_back(rule.left);
    out.rule_right.push_back(rule.right);
  }
  for (const CnfUnaryRule& rule : grammar.unary_closure) {
    out.unary_parent.push_back(rule.parent);
    out.unary_child.push_back(rule.child);
  }
  out.terminal_offsets.push_back(0);
  for (const auto& parents : grammar.terminal_parents) {
    out.terminal_parents.insert(out.terminal_parents.end(), parents.begin(), parents.end());
    out.terminal_offsets.push_back(static_cast<int32_t>(out.terminal_parents.size()));
  }
  return out;
}

StatusOr<std::vector<uint8_t>> RecognizeEachOnGpu(const CnfGrammar& grammar,
                                                  const std::vector<std::vector<int32_t>>& strings,
                                                  const cuda::CykGpuOptions& options) {
  for (size_t s = 0; s < strings.size(); ++s) {
    if (static_cast<int32_t>(strings[s].size()) > kMaxRecognizeLength) {
      return Status::Error("string " + std::to_string(s + 1) + " has " +
                           std::to_string(strings[s].size()) + " terminals; at most " +
                           std::to_string(kMaxRecognizeLength) + " are supported");
    }
  }
  auto recognizer =
      cuda::CykMembershipGpu::Create(ToMembershipGrammar(grammar), options, kMaxRecognizeLength);
  if (!recognizer.ok()) return recognizer.status();
  std::vector<uint8_t> accepted;
  CKY_RETURN_IF_ERROR((*recognizer)->Recognize(strings, &accepted));
  return accepted;
}

const char* RuleMappingName(cuda::RuleMapping mapping) {
  switch (mapping) {
    case cuda::RuleMapping::kRule:
      return "R";
    case cuda::RuleMapping::kRvs:
      return "RVS";
    case cuda::RuleMapping::kLvs:
      return "LVS";
    case cuda::RuleMapping::kRvsDummy:
      return "RVS+D";
    case cuda::RuleMapping::kLvsDummy:
      return "LVS+D";
  }
  return "?";
}

const char* CellMemoryName(cuda::CellMemory memory) {
  return memory == cuda::CellMemory::kShared ? "M+SH" : "M";
}

}  // namespace cky
