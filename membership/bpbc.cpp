#include "membership/bpbc.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <random>

#include "common/thread_pool.h"

namespace cky {
namespace {

int64_t ProductCost(const BpbcProduct& p) {
  return static_cast<int64_t>(p.left.size() + p.right.size());
}

std::vector<int32_t> Intersect(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<int32_t> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}
std::vector<int32_t> Union(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<int32_t> out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}
std::vector<int32_t> Minus(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<int32_t> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// Factoring step (Sect. 4.1): repeatedly take the row or column of the parent's rule matrix with
// the most ones, make it one product, and clear it.
std::vector<BpbcProduct> FactorParent(int32_t parent, const std::vector<BpbcProduct>& rules) {
  std::vector<int32_t> lefts, rights;
  for (const BpbcProduct& p : rules) {
    lefts.insert(lefts.end(), p.left.begin(), p.left.end());
    rights.insert(rights.end(), p.right.begin(), p.right.end());
  }
  std::sort(lefts.begin(), lefts.end());
  lefts.erase(std::unique(lefts.begin(), lefts.end()), lefts.end());
  std::sort(rights.begin(), rights.end());
  rights.erase(std::unique(rights.begin(), rights.end()), rights.end());
  const size_t rows = lefts.size(), cols = rights.size();
  std::vector<uint8_t> matrix(rows * cols, 0);
  std::vector<int32_t> row_count(rows, 0), col_count(cols, 0);
  int64_t ones = 0;
  auto row_of = [&](int32_t l) {
    return std::lower_bound(lefts.begin(), lefts.end(), l) - lefts.begin();
  };
  auto col_of = [&](int32_t r) {
    return std::lower_bound(rights.begin(), rights.end(), r) - rights.begin();
  };
  for (const BpbcProduct& p : rules) {
    for (int32_t l : p.left) {
      for (int32_t r : p.right) {
        uint8_t& cell = matrix[row_of(l) * cols + col_of(r)];
        if (!cell) {
          cell = 1;
          ++row_count[row_of(l)];
          ++col_count[col_of(r)];
          ++ones;
        }
      }
    }
  }
  std::vector<BpbcProduct> products;
  while (ones > 0) {
    const size_t best_row =
        std::max_element(row_count.begin(), row_count.end()) - row_count.begin();
    const size_t best_col =
        std::max_element(col_count.begin(), col_count.end()) - col_count.begin();
    BpbcProduct product{parent, {}, {}};
    if (col_count[best_col] >= row_count[best_row]) {
      product.right.push_back(rights[best_col]);
      for (size_t r = 0; r < rows; ++r) {
        if (matrix[r * cols + best_col]) {
          product.left.push_back(lefts[r]);
          matrix[r * cols + best_col] = 0;
          --row_count[r];
          --ones;
        }
      }
      col_count[best_col] = 0;
    } else {
      product.left.push_back(lefts[best_row]);
      for (size_t c = 0; c < cols; ++c) {
        if (matrix[best_row * cols + c]) {
          product.right.push_back(rights[c]);
          matrix[best_row * cols + c] = 0;
          --col_count[c];
          --ones;
        }
      }
      row_count[best_row] = 0;
    }
    products.push_back(std::move(product));
  }
  return products;
}

// Simulated annealing step (Sect. 4.2). Moves: join two products on their common left (or right)
// operands, keeping the uncovered remainders as products of their own; or split one operand off a
// product. Both keep the covered rule set exactly; the cost is the gate count.
std::vector<BpbcProduct> AnnealParent(std::vector<BpbcProduct> state,
                                      const MinimizeOptions& options, uint64_t seed) {
  if (state.size() < 2) return state;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int64_t cost = 0;
  for (const auto& p : state) cost += ProductCost(p);
  std::vector<BpbcProduct> best = state;
  int64_t best_cost = cost;
  const int64_t steps = std::min<int64_t>(options.anneal_steps_per_product * state.size(), 400000);
  const double cooling = std::pow(options.final_temperature / options.initial_temperature,
                                  1.0 / std::max<int64_t>(1, steps));
  double temperature = options.initial_temperature;
  for (int64_t step = 0; step < steps; ++step, temperature *= cooling) {
    if (state.size() < 2) break;
    const bool split = unit(rng) < 0.2;
    if (split) {
      const size_t p = rng() % state.size();
      BpbcProduct& product = state[p];
      const bool on_left = (rng() & 1) ? product.left.size() > 1 : product.right.size() <= 1;
      std::vector<int32_t>& operands = on_left ? product.left : product.right;
      if (operands.size() < 2) continue;
      const int64_t delta =
          static_cast<int64_t>(on_left ? product.right.size() : product.left.size());
      if (!(unit(rng) < std::exp(-delta / temperature))) continue;
      const size_t k = rng() % operands.size();
      BpbcProduct piece{product.parent, {}, {}};
      if (on_left) {
        piece.left = {operands[k]};
        piece.right = product.right;
      } else {
        piece.left = product.left;
        piece.right = {operands[k]};
      }
      operands.erase(operands.begin() + k);
      state.push_back(std::move(piece));
      cost += delta;
      continue;
    }
    size_t p = rng() % state.size();
    size_t q = rng() % (state.size() - 1);
    if (q >= p) ++q;
    const BpbcProduct& a = state[p];
    const BpbcProduct& b = state[q];
    const bool join_left_first = rng() & 1;
    std::vector<BpbcProduct> replacement;
    for (int attempt = 0; attempt < 2 && replacement.empty(); ++attempt) {
      const bool join_on_left = (attempt == 0) == join_left_first;
      const auto& a_shared = join_on_left ? a.left : a.right;
      const auto& b_shared = join_on_left ? b.left : b.right;
      const auto& a_other = join_on_left ? a.right : a.left;
      const auto& b_other = join_on_left ? b.right : b.left;
      std::vector<int32_t> common = Intersect(a_shared, b_shared);
      if (common.empty()) continue;
      auto make = [&](std::vector<int32_t> shared_side, std::vector<int32_t> other_side) {
        return join_on_left ? BpbcProduct{a.parent, std::move(shared_side), std::move(other_side)}
                            : BpbcProduct{a.parent, std::move(other_side), std::move(shared_side)};
      };
      replacement.push_back(make(common, Union(a_other, b_other)));
      if (auto rest = Minus(a_shared, common); !rest.empty())
        replacement.push_back(make(rest, a_other));
      if (auto rest = Minus(b_shared, common); !rest.empty())
        replacement.push_back(make(rest, b_other));
    }
    if (replacement.empty()) continue;
    int64_t delta = -ProductCost(a) - ProductCost(b);
    for (const auto& r : replacement) delta += ProductCost(r);
    if (delta > 0 && !(unit(rng) < std::exp(-delta / temperature))) continue;
    if (p < q) std::swap(p, q);  // erase the later index first
    state.erase(state.begin() + p);
    state.erase(state.begin() + q);
    for (auto& r : replacement) state.push_back(std::move(r));
    cost += delta;
    if (cost < best_cost) {
      best_cost = cost;
      best = state;
    }
  }
  return best;
}

}  // namespace

int64_t BpbcCircuit::GateCount() const {
  int64_t gates = 0;
  for (const auto& p : products) gates += ProductCost(p);
  return gates;
}

std::vector<CnfBinaryRule> BpbcCircuit::CoveredRules() const {
  std::vector<CnfBinaryRule> rules;
  for (const auto& p : products) {
    for (int32_t l : p.left) {
      for (int32_t r : p.right) rules.push_back({p.parent, l, r});
    }
  }
  std::sort(rules.begin(), rules.end());
  rules.erase(std::unique(rules.begin(), rules.end()), rules.end());
  return rules;
}

BpbcCircuit CompileCircuit(const CnfGrammar& grammar) {
  BpbcCircuit circuit;
  circuit.num_nonterminals = grammar.num_nonterminals();
  for (const CnfBinaryRule& rule : grammar.binary_rules) {
    circuit.products.push_back({rule.parent, {rule.left}, {rule.right}});
  }
  return circuit;
}

BpbcCircuit MinimizeCircuit(const BpbcCircuit& circuit, const MinimizeOptions& options) {
  std::map<int32_t, std::vector<BpbcProduct>> by_parent;
  for (const auto& p : circuit.products) by_parent[p.parent].push_back(p);
  std::vector<std::pair<int32_t, std::vector<BpbcProduct>>> work(by_parent.begin(),
                                                                 by_parent.end());
  std::vector<std::vector<BpbcProduct>> minimized(work.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k; (k = next.fetch_add(1)) < work.size();) {
      const auto& [parent, products] = work[k];
      std::vector<BpbcProduct> current = options.factor ? FactorParent(parent, products) : products;
      if (options.anneal) {
        current =
            AnnealParent(std::move(current), options,
                         options.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(parent));
      }
      int64_t before = 0, after = 0;
      for (const auto& p : products) before += ProductCost(p);
      for (const auto& p : current) after += ProductCost(p);
      minimized[k] = after <= before ? std::move(current) : products;
    }
  };
  const int num_threads =
      std::min<int>(ThreadPool::ResolveThreads(options.threads), std::max<size_t>(1, work.size()));
  ThreadPool pool(num_threads);
  pool.ParallelFor(num_threads, [&](int, int) { worker(); });
  BpbcCircuit out;
  out.num_nonterminals = circuit.num_nonterminals;
  for (auto& products : minimized) {
    // Products sharing left operands run back to back: better cache reuse of U.
    std::sort(products.begin(), products.end(),
              [](const BpbcProduct& a, const BpbcProduct& b) { return a.left < b.left; });
    for (auto& p : products) out.products.push_back(std::move(p));
  }
  return out;
}

cuda::BpbcProgram FlattenCircuit(const CnfGrammar& grammar, const BpbcCircuit& circuit) {
  cuda::BpbcProgram program;
  program.num_nonterminals = grammar.num_nonterminals();
  program.start = grammar.start;
  std::vector<const BpbcProduct*> order;
  for (const auto& p : circuit.products) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const BpbcProduct* a, const BpbcProduct* b) {
    return a->parent < b->parent;
  });
  for (const BpbcProduct* p : order) {
    program.code.push_back(static_cast<uint16_t>(p->parent));
    program.code.push_back(static_cast<uint16_t>(p->left.size()));
    program.code.push_back(static_cast<uint16_t>(p->right.size()));
    for (int32_t l : p->left) program.code.push_back(static_cast<uint16_t>(l));
    for (int32_t r : p->right) program.code.push_back(static_cast<uint16_t>(r));
  }
  program.num_products = static_cast<int32_t>(order.size());
  for (const CnfUnaryRule& u : grammar.unary_closure) {
    program.unary_parent.push_back(static_cast<uint16_t>(u.parent));
    program.unary_child.push_back(static_cast<uint16_t>(u.child));
  }
  program.terminal_offsets.push_back(0);
  for (const auto& parents : grammar.terminal_parents) {
    program.terminal_parents.insert(program.terminal_parents.end(), parents.begin(), parents.end());
    program.terminal_offsets.push_back(static_cast<int32_t>(program.terminal_parents.size()));
  }
  return program;
}

namespace {

int CellIndex(int n, int length, int start) {
  return (length - 1) * (n + 1) - (length - 1) * length / 2 + start;
}

// Runs the CKY of one group of up to sizeof(Word) * 8 strings of length n; returns the start
// symbol's word of the top cell. `table` has room for n(n+1)/2 cells, then one all-zero cell.
template <typename Word>
Word EvaluateGroup(const cuda::BpbcProgram& program,
                   const std::vector<std::vector<int32_t>>& strings, const int64_t* members,
                   int count, int n, std::vector<Word>& table) {
  const int symbols = program.num_nonterminals;
  const uint16_t* code = program.code.data();
  const size_t code_length = program.code.size();
  auto close = [&](Word* cell) {
    for (size_t u = 0; u < program.unary_parent.size(); ++u) {
      cell[program.unary_parent[u]] |= cell[program.unary_child[u]];
    }
  };
  // The all-zero cell after the table pads the last pass over the splits.
  const Word* zero_cell = &table[table.size() - symbols];
  for (int i = 0; i < n; ++i) {
    Word* cell = &table[static_cast<size_t>(CellIndex(n, 1, i)) * symbols];
    std::fill(cell, cell + symbols, Word(0));
    for (int b = 0; b < count; ++b) {
      const int32_t token = strings[members[b]][i];
      for (int32_t p = program.terminal_offsets[token]; p < program.terminal_offsets[token + 1];
           ++p) {
        cell[program.terminal_parents[p]] |= Word(1) << b;
      }
    }
    close(cell);
  }
  for (int length = 2; length <= n; ++length) {
    for (int i = 0; i + length <= n; ++i) {
      Word* target = &table[static_cast<size_t>(CellIndex(n, length, i)) * symbols];
      std::fill(target, target + symbols, Word(0));
      // Four splits per pass over the circuit: each operand index decoded serves four loads.
      constexpr int kSplits = 4;
      for (int m0 = 1; m0 < length; m0 += kSplits) {
        const Word* u[kSplits];
        const Word* v[kSplits];
        for (int c = 0; c < kSplits; ++c) {
          const int m = m0 + c;
          u[c] = m < length ? &table[static_cast<size_t>(CellIndex(n, m, i)) * symbols] : zero_cell;
          v[c] = m < length ? &table[static_cast<size_t>(CellIndex(n, length - m, i + m)) * symbols]
                            : zero_cell;
        }
        size_t pc = 0;
        while (pc < code_length) {
          const int parent = code[pc];
          const int num_left = code[pc + 1];
          const int num_right = code[pc + 2];
          pc += 3;
          Word left[kSplits] = {};
          for (int k = 0; k < num_left; ++k) {
            const int op = code[pc + k];
            for (int c = 0; c < kSplits; ++c) left[c] |= u[c][op];
          }
          pc += num_left;
          if (left[0] | left[1] | left[2] | left[3]) {
            Word right[kSplits] = {};
            for (int k = 0; k < num_right; ++k) {
              const int op = code[pc + k];
              for (int c = 0; c < kSplits; ++c) right[c] |= v[c][op];
            }
            target[parent] |= (left[0] & right[0]) | (left[1] & right[1]) | (left[2] & right[2]) |
                              (left[3] & right[3]);
          }
          pc += num_right;
        }
      }
      close(target);
    }
  }
  return table[static_cast<size_t>(CellIndex(n, n, 0)) * symbols + program.start];
}

template <typename Word>
void RunBulkCpu(const cuda::BpbcProgram& program, const std::vector<std::vector<int32_t>>& strings,
                const BulkCpuOptions& options, std::vector<uint8_t>* accepted) {
  constexpr int kBits = sizeof(Word) * 8;
  struct Group {
    int length;
    size_t first;  // into `order`
    int count;
  };
  // Strings ordered by length (longest first), then cut into groups of kBits of one length.
  std::vector<int64_t> order;
  for (size_t s = 0; s < strings.size(); ++s) {
    if (!strings[s].empty()) order.push_back(static_cast<int64_t>(s));
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return strings[a].size() > strings[b].size(); });
  std::vector<Group> groups;
  int max_length = 0;
  for (size_t k = 0; k < order.size();) {
    const int n = static_cast<int>(strings[order[k]].size());
    max_length = std::max(max_length, n);
    size_t end = k;
    while (end < order.size() && end - k < static_cast<size_t>(kBits) &&
           static_cast<int>(strings[order[end]].size()) == n) {
      ++end;
    }
    groups.push_back({n, k, static_cast<int>(end - k)});
    k = end;
  }
  const int num_threads = std::min<int>(ThreadPool::ResolveThreads(options.threads),
                                        std::max<size_t>(1, groups.size()));
  std::atomic<size_t> next{0};
  auto worker = [&](int thread_index) {
    std::vector<Word> table((static_cast<size_t>(max_length) * (max_length + 1) / 2 + 1) *
                            program.num_nonterminals);
    auto run = [&](size_t g) {
      const Group& group = groups[g];
      const Word top = EvaluateGroup<Word>(program, strings, &order[group.first], group.count,
                                           group.length, table);
      for (int b = 0; b < group.count; ++b) {
        (*accepted)[order[group.first + b]] = static_cast<uint8_t>((top >> b) & 1);
      }
    };
    if (options.dynamic_scheduling) {
      for (size_t g; (g = next.fetch_add(1)) < groups.size();) run(g);
    } else {
      for (size_t g = thread_index; g < groups.size(); g += num_threads) run(g);
    }
  };
  // Each of the num_threads shares runs once; with static scheduling, share t takes the groups
  // t, t + num_threads, ... whichever pool worker runs it.
  ThreadPool pool(num_threads);
  pool.ParallelFor(num_threads, [&](int share, int) { worker(share); });
}

Status CheckStrings(const cuda::BpbcProgram& program,
                    const std::vector<std::vector<int32_t>>& strings) {
  const int32_t num_terminals = static_cast<int32_t>(program.terminal_offsets.size()) - 1;
  for (size_t s = 0; s < strings.size(); ++s) {
    if (strings[s].size() > static_cast<size_t>(cuda::BpbcGpu::kMaxLength)) {
      return Status::Error("string " + std::to_string(s + 1) + " has more than " +
                           std::to_string(cuda::BpbcGpu::kMaxLength) + " terminals");
    }
    for (int32_t t : strings[s]) {
      if (t < 0 || t >= num_terminals) return Status::Error("terminal id out of range");
    }
  }
  return Status();
}

}  // namespace

StatusOr<std::vector<uint8_t>> RecognizeBulkCpu(const cuda::BpbcProgram& program,
                                                const std::vector<std::vector<int32_t>>& strings,
                                                const BulkCpuOptions& options) {
  CKY_RETURN_IF_ERROR(CheckStrings(program, strings));
  std::vector<uint8_t> accepted(strings.size(), 0);
  if (options.word_bits == 32) {
    RunBulkCpu<uint32_t>(program, strings, options, &accepted);
  } else if (options.word_bits == 64) {
    RunBulkCpu<uint64_t>(program, strings, options, &accepted);
  } else {
    return Status::Error("word_bits must be 32 or 64");
  }
  return accepted;
}

StatusOr<std::vector<uint8_t>> RecognizeBulkGpu(const cuda::BpbcProgram& program,
                                                const std::vector<std::vector<int32_t>>& strings,
                                                const cuda::BpbcGpuOptions& options) {
  CKY_RETURN_IF_ERROR(CheckStrings(program, strings));
  auto gpu = cuda::BpbcGpu::Create(program);
  if (!gpu.ok()) return gpu.status();
  std::vector<uint8_t> accepted;
  CKY_RETURN_IF_ERROR((*gpu)->Recognize(strings, options, &accepted, nullptr));
  return accepted;
}

}  // namespace cky
