#include "dense/dense_inside.h"

#include <algorithm>

#include "common/thread_pool.h"

namespace cky {
namespace {

constexpr double kNegativeInfinity = -std::numeric_limits<double>::infinity();

// The scale bookkeeping shared by every variant. For span (i,k) the split j contributes with weight
// exp(log_scale(i,j) + log_scale(j,k) - offset), offset being the largest such sum; the cell's raw
// values then carry scale `offset` until FinishCell renormalises them.
template <typename T>
double SplitWeights(const DenseChart<T>& chart, int i, int k, std::vector<T>* weights) {
  double offset = kNegativeInfinity;
  for (int j = i + 1; j < k; ++j) {
    offset =
        std::max(offset, chart.log_scale[chart.Cell(i, j)] + chart.log_scale[chart.Cell(j, k)]);
  }
  weights->assign(k - i - 1, T(0));
  if (offset == kNegativeInfinity) return offset;
  for (int j = i + 1; j < k; ++j) {
    (*weights)[j - i - 1] = static_cast<T>(
        std::exp(chart.log_scale[chart.Cell(i, j)] + chart.log_scale[chart.Cell(j, k)] - offset));
  }
  return offset;
}

// Divides the cell's raw values by their maximum and records the scale.
template <typename T>
void FinishCell(DenseChart<T>* chart, int i, int k, double offset) {
  T* values = chart->CellValues(i, k);
  T largest = 0;
  for (int a = 0; a < chart->m; ++a) largest = std::max(largest, values[a]);
  if (!(largest > 0) || offset == kNegativeInfinity) {
    std::fill(values, values + chart->m, T(0));
    chart->log_scale[chart->Cell(i, k)] = kNegativeInfinity;
    return;
  }
  const T inverse = T(1) / largest;
  for (int a = 0; a < chart->m; ++a) values[a] *= inverse;
  chart->log_scale[chart->Cell(i, k)] = offset + std::log(static_cast<double>(largest));
}

template <typename T, typename Grammar>
void FillWordCells(const Grammar& terminals, int m, const std::vector<int>& word_ids,
                   DenseChart<T>* chart) {
  for (int i = 0; i < chart->n; ++i) {
    T* values = chart->CellValues(i, i + 1);
    for (int a = 0; a < m; ++a) {
      values[a] = static_cast<T>(terminals[static_cast<size_t>(word_ids[i]) * m + a]);
    }
    FinishCell(chart, i, i + 1, 0.0);
  }
}

}  // namespace

const char* DenseAlgorithmName(DenseAlgorithm algorithm) {
  return algorithm == DenseAlgorithm::kBaseline ? "baseline" : "factored";
}

const char* DenseParallelismName(DenseParallelism parallelism) {
  switch (parallelism) {
    case DenseParallelism::kSerial:
      return "serial";
    case DenseParallelism::kOuter:
      return "(i) outer parallel";
    case DenseParallelism::kInner:
      return "(ii) inner parallel";
    case DenseParallelism::kBoth:
      return "(iii) both parallel";
  }
  return "?";
}

DenseChart<double> DenseInsideReference(const DensePcfg& g, const std::vector<int>& word_ids,
                                        DenseSemiring semiring) {
  const int n = static_cast<int>(word_ids.size());
  const int m = g.num_nonterminals;
  DenseChart<double> chart;
  chart.Resize(n, m);
  FillWordCells(g.terminals, m, word_ids, &chart);
  std::vector<double> weights;
  for (int gap = 2; gap <= n; ++gap) {
    for (int i = 0; i + gap <= n; ++i) {
      const int k = i + gap;
      const double offset = SplitWeights(chart, i, k, &weights);
      double* cell = chart.CellValues(i, k);
      for (int a = 0; a < m; ++a) {
        double total = 0;
        for (int j = i + 1; j < k; ++j) {
          const double* left = chart.CellValues(i, j);
          const double* right = chart.CellValues(j, k);
          for (int b = 0; b < m; ++b) {
            for (int c = 0; c < m; ++c) {
              const double term = g.Rule(a, b, c) * weights[j - i - 1] * left[b] * right[c];
              total = semiring == DenseSemiring::kSum ? total + term : std::max(total, term);
            }
          }
        }
        cell[a] = total;
      }
      FinishCell(&chart, i, k, offset);
    }
  }
  return chart;
}

// ---------------------------------------------------------------------------------------------
// The fast float32 variants.

struct DenseInsideCpu::Impl {
  int m;
  std::vector<float> rules;      // R[a][b][c]
  std::vector<float> terminals;  // T[w][a]
  ThreadPool pool;
  // Per-worker scratch: weights, BC (m*m) and partial cell vectors.
  std::vector<std::vector<float>> weights, bc, partial;
  std::vector<float> shared;  // cross-worker buffers of the inner / both variants

  Impl(const DensePcfg& g, int threads)
      : m(g.num_nonterminals),
        rules(g.rules.begin(), g.rules.end()),
        terminals(g.terminals.begin(), g.terminals.end()),
        pool(threads),
        weights(pool.threads()),
        bc(pool.threads()),
        partial(pool.threads()) {
    for (auto& buffer : bc) buffer.assign(static_cast<size_t>(m) * m, 0.f);
    for (auto& buffer : partial) buffer.assign(static_cast<size_t>(m) * m, 0.f);
  }

  // --- Baseline (Figure 1): C[i,k,a] op= R[a,b,c] * C[i,j,b] * C[j,k,c], for a in [a0, a1) and
  // splits j in [j0, j1), into out[a - a0]. The c loop runs over a vector accumulator so that it
  // vectorises; `scratch` holds m floats.
  template <bool kMax>
  void BaselinePart(const DenseChart<float>& chart, const std::vector<float>& w, int i, int k,
                    int a0, int a1, int j0, int j1, float* out, float* scratch) const {
    for (int a = a0; a < a1; ++a) {
      std::fill(scratch, scratch + m, 0.f);
      for (int j = j0; j < j1; ++j) {
        const float* left = chart.CellValues(i, j);
        const float* right = chart.CellValues(j, k);
        const float weight = w[j - i - 1];
        for (int b = 0; b < m; ++b) {
          const float lb = weight * left[b];
          const float* rule = rules.data() + (static_cast<size_t>(a) * m + b) * m;
          for (int c = 0; c < m; ++c) {
            const float term = rule[c] * (lb * right[c]);
            scratch[c] = kMax ? (term > scratch[c] ? term : scratch[c]) : scratch[c] + term;
          }
        }
      }
      float total = 0.f;
      for (int c = 0; c < m; ++c) total = kMax ? std::max(total, scratch[c]) : total + scratch[c];
      out[a - a0] = total;
    }
  }

  // --- Factored (Figure 2), step 1: BC[b,c] op= w_j C[i,j,b] C[j,k,c] for rows b in [b0, b1).
  template <bool kMax>
  void AccumulateBc(const DenseChart<float>& chart, const std::vector<float>& w, int i, int k,
                    int b0, int b1, float* bc_matrix) const {
    std::fill(bc_matrix + static_cast<size_t>(b0) * m, bc_matrix + static_cast<size_t>(b1) * m,
              0.f);
    for (int j = i + 1; j < k; ++j) {
      const float* left = chart.CellValues(i, j);
      const float* right = chart.CellValues(j, k);
      const float weight = w[j - i - 1];
      for (int b = b0; b < b1; ++b) {
        const float lb = weight * left[b];
        float* row = bc_matrix + static_cast<size_t>(b) * m;
        for (int c = 0; c < m; ++c) {
          const float term = lb * right[c];
          row[c] = kMax ? (term > row[c] ? term : row[c]) : row[c] + term;
        }
      }
    }
  }

  // Step 2: C[i,k,a] = op_bc R[a,b,c] BC[b,c] for a in [a0, a1). Eight accumulators let the
  // compiler vectorise the reduction without reassociating floating point on its own.
  template <bool kMax>
  void Contract(const float* bc_matrix, int a0, int a1, float* cell) const {
    const size_t size = static_cast<size_t>(m) * m;
    for (int a = a0; a < a1; ++a) {
      const float* rule = rules.data() + static_cast<size_t>(a) * size;
      float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      size_t bc = 0;
      for (; bc + 8 <= size; bc += 8) {
        for (int lane = 0; lane < 8; ++lane) {
          const float term = rule[bc + lane] * bc_matrix[bc + lane];
          lanes[lane] = kMax ? (term > lanes[lane] ? term : lanes[lane]) : lanes[lane] + term;
        }
      }
      float total = 0.f;
      for (; bc < size; ++bc) {
        const float term = rule[bc] * bc_matrix[bc];
        total = kMax ? std::max(total, term) : total + term;
      }
      for (float lane : lanes) total = kMax ? std::max(total, lane) : total + lane;
      cell[a] = total;
    }
  }

  // Splits [0, count) into `parts` nearly equal blocks.
  static std::pair<int, int> Block(int count, int parts, int index) {
    return {static_cast<int>(static_cast<long>(count) * index / parts),
            static_cast<int>(static_cast<long>(count) * (index + 1) / parts)};
  }

  template <bool kMax>
  void Run(const std::vector<int>& word_ids, DenseAlgorithm algorithm, DenseParallelism parallelism,
           DenseChart<float>* chart, int worker) {
    const int n = static_cast<int>(word_ids.size());
    chart->Resize(n, m);
    FillWordCells(terminals, m, word_ids, chart);
    const int threads = pool.threads();
    const size_t mm = static_cast<size_t>(m) * m;
    std::vector<std::vector<float>> span_weights(n);
    std::vector<double> offsets(n);
    for (int gap = 2; gap <= n; ++gap) {
      const int spans = n - gap + 1;
      for (int i = 0; i < spans; ++i)
        offsets[i] = SplitWeights(*chart, i, i + gap, &span_weights[i]);
      const int splits = gap - 1;
      if (parallelism == DenseParallelism::kSerial) {
        for (int i = 0; i < spans; ++i)
          SpanSerial<kMax>(chart, span_weights[i], i, i + gap, algorithm, worker);
      } else if (parallelism == DenseParallelism::kOuter) {
        if (algorithm == DenseAlgorithm::kBaseline) {
          pool.ParallelFor(spans * m, [&](int item, int w) {
            const int i = item / m, a = item % m;
            BaselinePart<kMax>(*chart, span_weights[i], i, i + gap, a, a + 1, i + 1, i + gap,
                               chart->CellValues(i, i + gap) + a, partial[w].data());
          });
        } else {
          pool.ParallelFor(spans, [&](int i, int w) {
            SpanSerial<kMax>(chart, span_weights[i], i, i + gap, algorithm, w);
          });
        }
      } else if (parallelism == DenseParallelism::kInner) {
        for (int i = 0; i < spans; ++i) {
          const int k = i + gap;
          float* cell = chart->CellValues(i, k);
          if (algorithm == DenseAlgorithm::kBaseline) {
            const int parts = std::min(threads, splits);
            shared.assign(static_cast<size_t>(parts) * m, 0.f);
            pool.ParallelFor(parts, [&](int part, int w) {
              auto [j0, j1] = Block(splits, parts, part);
              BaselinePart<kMax>(*chart, span_weights[i], i, k, 0, m, i + 1 + j0, i + 1 + j1,
                                 shared.data() + static_cast<size_t>(part) * m, partial[w].data());
            });
            CombineParts<kMax>(shared.data(), parts, cell);
          } else {
            float* bc_matrix = bc[worker].data();
            const int parts = std::min(threads, m);
            pool.ParallelFor(parts, [&](int part, int) {
              auto [b0, b1] = Block(m, parts, part);
              AccumulateBc<kMax>(*chart, span_weights[i], i, k, b0, b1, bc_matrix);
            });
            pool.ParallelFor(parts, [&](int part, int) {
              auto [a0, a1] = Block(m, parts, part);
              Contract<kMax>(bc_matrix, a0, a1, cell);
            });
          }
        }
      } else {  // kBoth
        if (algorithm == DenseAlgorithm::kBaseline) {
          // Every (span, split) pair computes a partial cell vector; each span then combines its
          // splits' vectors.
          shared.assign(static_cast<size_t>(spans) * splits * m, 0.f);
          pool.ParallelFor(spans * splits, [&](int item, int w) {
            const int i = item / splits, j = i + 1 + item % splits;
            BaselinePart<kMax>(*chart, span_weights[i], i, i + gap, 0, m, j, j + 1,
                               shared.data() + static_cast<size_t>(item) * m, partial[w].data());
          });
          for (int i = 0; i < spans; ++i) {
            CombineParts<kMax>(shared.data() + static_cast<size_t>(i) * splits * m, splits,
                               chart->CellValues(i, i + gap));
          }
        } else {
          const int parts = std::min(threads, m);
          shared.assign(static_cast<size_t>(spans) * mm, 0.f);
          pool.ParallelFor(spans * parts, [&](int item, int) {
            const int i = item / parts;
            auto [b0, b1] = Block(m, parts, item % parts);
            AccumulateBc<kMax>(*chart, span_weights[i], i, i + gap, b0, b1,
                               shared.data() + static_cast<size_t>(i) * mm);
          });
          pool.ParallelFor(spans * parts, [&](int item, int) {
            const int i = item / parts;
            auto [a0, a1] = Block(m, parts, item % parts);
            Contract<kMax>(shared.data() + static_cast<size_t>(i) * mm, a0, a1,
                           chart->CellValues(i, i + gap));
          });
        }
      }
      for (int i = 0; i < spans; ++i) FinishCell(chart, i, i + gap, offsets[i]);
    }
  }

  template <bool kMax>
  void CombineParts(const float* parts_values, int parts, float* cell) const {
    for (int a = 0; a < m; ++a) {
      float total = 0.f;
      for (int part = 0; part < parts; ++part) {
        const float v = parts_values[static_cast<size_t>(part) * m + a];
        total = kMax ? std::max(total, v) : total + v;
      }
      cell[a] = total;
    }
  }

  // One span, on one thread, with worker w's scratch. Leaves raw (unnormalised) values.
  template <bool kMax>
  void SpanSerial(DenseChart<float>* chart, const std::vector<float>& w, int i, int k,
                  DenseAlgorithm algorithm, int worker) {
    float* cell = chart->CellValues(i, k);
    if (algorithm == DenseAlgorithm::kBaseline) {
      BaselinePart<kMax>(*chart, w, i, k, 0, m, i + 1, k, cell, partial[worker].data());
    } else {
      AccumulateBc<kMax>(*chart, w, i, k, 0, m, bc[worker].data());
      Contract<kMax>(bc[worker].data(), 0, m, cell);
    }
  }
};

DenseInsideCpu::DenseInsideCpu(const DensePcfg& grammar, int num_threads)
    : impl_(std::make_unique<Impl>(grammar, ThreadPool::ResolveThreads(num_threads))) {}

DenseInsideCpu::~DenseInsideCpu() = default;

int DenseInsideCpu::num_threads() const { return impl_->pool.threads(); }
int DenseInsideCpu::num_nonterminals() const { return impl_->m; }

DenseChart<float> DenseInsideCpu::Inside(const std::vector<int>& word_ids, DenseSemiring semiring,
                                         DenseAlgorithm algorithm, DenseParallelism parallelism) {
  DenseChart<float> chart;
  if (semiring == DenseSemiring::kMax) {
    impl_->Run<true>(word_ids, algorithm, parallelism, &chart, 0);
  } else {
    impl_->Run<false>(word_ids, algorithm, parallelism, &chart, 0);
  }
  return chart;
}

std::vector<double> DenseInsideCpu::SentenceLogProbsAcrossSentences(
    const std::vector<std::vector<int>>& sentences, DenseSemiring semiring) {
  std::vector<double> log_probs(sentences.size());
  // Longest first, so that the long tail does not end up on one worker at the end.
  std::vector<int> order(sentences.size());
  for (size_t s = 0; s < order.size(); ++s) order[s] = static_cast<int>(s);
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return sentences[x].size() > sentences[y].size(); });
  impl_->pool.ParallelFor(static_cast<int>(sentences.size()), [&](int index, int worker) {
    const int s = order[index];
    DenseChart<float> chart;
    if (semiring == DenseSemiring::kMax) {
      impl_->Run<true>(sentences[s], DenseAlgorithm::kFactored, DenseParallelism::kSerial, &chart,
                       worker);
    } else {
      impl_->Run<false>(sentences[s], DenseAlgorithm::kFactored, DenseParallelism::kSerial, &chart,
                        worker);
    }
    log_probs[s] = chart.SentenceLogProb();
  });
  return log_probs;
}

// ---------------------------------------------------------------------------------------------
// Viterbi trees.

namespace {

template <typename T>
Tree BuildTree(const DensePcfg& g, const DenseChart<T>& chart,
               const std::vector<std::string>& words, int i, int k, int a) {
  Tree node(DensePcfg::NonterminalName(a));
  node.score = chart.LogValue(i, k, a);
  if (k == i + 1) {
    node.children.emplace_back(words[i]);
    return node;
  }
  const int m = g.num_nonterminals;
  double best = kNegativeInfinity;
  int best_j = -1, best_b = 0, best_c = 0;
  for (int j = i + 1; j < k; ++j) {
    for (int b = 0; b < m; ++b) {
      const double left = chart.LogValue(i, j, b);
      if (left == kNegativeInfinity) continue;
      for (int c = 0; c < m; ++c) {
        const double rule = g.Rule(a, b, c);
        if (rule <= 0) continue;
        const double score = std::log(rule) + left + chart.LogValue(j, k, c);
        if (score > best) {
          best = score;
          best_j = j;
          best_b = b;
          best_c = c;
        }
      }
    }
  }
  // The cell is positive, so some split reaches it; best_j >= 0 holds.
  node.children.push_back(BuildTree(g, chart, words, i, best_j, best_b));
  node.children.push_back(BuildTree(g, chart, words, best_j, k, best_c));
  return node;
}

}  // namespace

template <typename T>
StatusOr<Tree> DenseViterbiTree(const DensePcfg& grammar, const DenseChart<T>& chart,
                                const std::vector<int>& word_ids,
                                const std::vector<std::string>& words) {
  if (chart.n == 0 || word_ids.empty()) return Status::Error("the empty sentence has no parse");
  if (static_cast<int>(words.size()) != chart.n || static_cast<int>(word_ids.size()) != chart.n) {
    return Status::Error("sentence and chart lengths differ");
  }
  if (chart.SentenceLogProb() == kNegativeInfinity) {
    return Status::Error("the sentence has no parse under this grammar");
  }
  return BuildTree(grammar, chart, words, 0, chart.n, 0);
}

template StatusOr<Tree> DenseViterbiTree<float>(const DensePcfg&, const DenseChart<float>&,
                                                const std::vector<int>&,
                                                const std::vector<std::string>&);
template StatusOr<Tree> DenseViterbiTree<double>(const DensePcfg&, const DenseChart<double>&,
                                                 const std::vector<int>&,
                                                 const std::vector<std::string>&);

StatusOr<std::unique_ptr<cuda::DenseInsideGpu>> CreateDenseInsideGpu(const DensePcfg& grammar) {
  const std::vector<float> rules(grammar.rules.begin(), grammar.rules.end());
  const std::vector<float> terminals(grammar.terminals.begin(), grammar.terminals.end());
  return cuda::DenseInsideGpu::Create(grammar.num_nonterminals, grammar.vocabulary_size(), rules,
                                      terminals);
}

DenseChart<float> ToDenseChart(cuda::DenseGpuChart&& chart) {
  DenseChart<float> out;
  out.n = chart.n;
  out.m = chart.m;
  out.values = std::move(chart.values);
  out.log_scale = std::move(chart.log_scale);
  return out;
}

}  // namespace cky
