// Dense PCFG inside / Viterbi charts on the GPU (see dense_inside_device.h). Layout of this file:
// public API (DenseInsideGpuImpl::Inside), then dispatch (batches, span lists, launch shapes per
// span width), then the kernels.
//
// Per batch of sentences (sorted by length, longest first), per span width d = 2 .. longest:
//   BcKernel       one block per (span, 32x32 tile of BC): BC = sum_j w_j left_j^T right_j
//   ContractKernel [spans x m^2] x [m^2 x m] tiled like a GEMM, split along m^2 when there are too
//                  few spans to fill the GPU (the partial products are combined by FinishKernel)
//   FinishKernel   one warp per span: combine the partial products, rescale, write the chart cell
// Both products share one 32x32 register-tiled inner loop (64 threads, 4x4 outputs each) and take
// the semiring (sum or max) as a template parameter.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include "cuda/dense/dense_inside_device.h"

namespace cky::cuda {
namespace {

#define CKY_CUDA_TRY(call)                                                              \
  do {                                                                                  \
    cudaError_t cky_err_ = (call);                                                      \
    if (cky_err_ != cudaSuccess) {                                                      \
      return Status::Error(std::string("CUDA error in dense inside: ") + #call + ": " + \
                           cudaGetErrorString(cky_err_));                               \
    }                                                                                   \
  } while (0)

constexpr int kTile = 32;         // tile edge of both products
constexpr int kTileThreads = 64;  // 8 x 8 threads, 4 x 4 outputs each
constexpr int kTilePad = 36;      // shared-memory row stride: float4-aligned, fewer conflicts
constexpr int kFinishWarps = 8;   // spans per FinishKernel block

struct SentenceInfo {
  long long cell_offset;  // first cell of this sentence's chart, (n + 1)^2 cells
  int n;
  int word_offset;
};

template <bool kMax>
__device__ __forceinline__ float Combine(float accumulated, float term) {
  return kMax ? fmaxf(accumulated, term) : accumulated + term;
}

// acc[u][v] op= As[kk][ty*4+u] * Bs[kk][tx*4+v] over the 32 staged kk.
template <bool kMax>
__device__ __forceinline__ void TileProduct(const float (*As)[kTilePad],
                                            const float (*Bs)[kTilePad], int ty, int tx,
                                            float acc[4][4]) {
#pragma unroll 8
  for (int kk = 0; kk < kTile; ++kk) {
    const float4 a = *reinterpret_cast<const float4*>(&As[kk][ty * 4]);
    const float4 b = *reinterpret_cast<const float4*>(&Bs[kk][tx * 4]);
    const float av[4] = {a.x, a.y, a.z, a.w};
    const float bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
    for (int u = 0; u < 4; ++u) {
#pragma unroll
      for (int v = 0; v < 4; ++v) acc[u][v] = Combine<kMax>(acc[u][v], av[u] * bv[v]);
    }
  }
}

// A thread's 4 x 4 block of a tile product into out[row * cols + col], computed as an Index: rows
// row0 .. row0 + 3 (those below `rows`), columns col0 .. col0 + 3 (those below `cols`).
template <typename Index>
__device__ __forceinline__ void StoreTileBlock(const float acc[4][4], int row0, int rows, int col0,
                                               int cols, float* out) {
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const int row = row0 + u;
    if (row >= rows) continue;
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      const int col = col0 + v;
      if (col < cols) out[static_cast<Index>(row) * cols + col] = acc[u][v];
    }
  }
}

__device__ __forceinline__ float WarpMax(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}

// The kernels with a warp per span: the warp's index in the grid (its span's), and its lane.
__device__ __forceinline__ int GridWarp() { return (blockIdx.x * blockDim.x + threadIdx.x) >> 5; }
__device__ __forceinline__ int WarpLane() { return threadIdx.x & 31; }

// The chart cell of the span of `width` words from `start` in sentence s.
__device__ __forceinline__ long long CellOf(const SentenceInfo& s, int start, int width) {
  return s.cell_offset + static_cast<long long>(start) * (s.n + 1) + start + width;
}

// Width-1 cells: C[i,i+1,:] = T[word_i, :], rescaled. One warp per span.
__global__ void WordCellsKernel(const int2* spans, int span_count, const SentenceInfo* sentences,
                                const int* words, const float* terminals, int m, float* values,
                                double* log_scale) {
  const int warp = GridWarp(), lane = WarpLane();
  if (warp >= span_count) return;
  const int2 span = spans[warp];
  const SentenceInfo s = sentences[span.x];
  const int word = words[s.word_offset + span.y];
  const long long cell = CellOf(s, span.y, 1);
  float largest = 0.f;
  for (int a = lane; a < m; a += 32)
    largest = fmaxf(largest, terminals[static_cast<long long>(word) * m + a]);
  largest = WarpMax(largest);
  const float inverse = largest > 0.f ? 1.f / largest : 0.f;
  for (int a = lane; a < m; a += 32) {
    values[cell * m + a] = terminals[static_cast<long long>(word) * m + a] * inverse;
  }
  if (lane == 0) log_scale[cell] = largest > 0.f ? log(static_cast<double>(largest)) : -INFINITY;
}

// BC of span p, tile (blockIdx.y): BC[b,c] = op_j w_j C[i,j,b] C[j,k,c]. The split weights
// w_j = exp(ls(i,j) + ls(j,k) - offset) bring the cells' scales to the common `offset`, the largest
// such sum, which block (p, 0) records for FinishKernel.
template <bool kMax>
__global__ void __launch_bounds__(kTileThreads)
    BcKernel(const int2* spans, const SentenceInfo* sentences, int width, int m, int tiles_c,
             const float* values, const double* log_scale, float* bc, double* span_offset) {
  __shared__ __align__(16) float As[kTile][kTilePad];
  __shared__ __align__(16) float Bs[kTile][kTilePad];
  __shared__ float weights[kTile];
  __shared__ double warp_best[kTileThreads / 32];
  const int p = blockIdx.x;
  const int tid = threadIdx.x;
  const int2 span = spans[p];
  const SentenceInfo s = sentences[span.x];
  const int i = span.y, k = span.y + width;
  const long long row = s.n + 1;
  const long long base = s.cell_offset;
  // offset = max_j ls(i,j) + ls(j,k)
  double best = -INFINITY;
  for (int j = i + 1 + tid; j < k; j += kTileThreads) {
    best = fmax(best, log_scale[base + i * row + j] + log_scale[base + j * row + k]);
  }
  for (int o = 16; o > 0; o >>= 1) best = fmax(best, __shfl_xor_sync(0xffffffffu, best, o));
  if ((tid & 31) == 0) warp_best[tid >> 5] = best;
  __syncthreads();
  best = fmax(warp_best[0], warp_best[1]);
  if (blockIdx.y == 0 && tid == 0) span_offset[p] = best;

  const int b0 = (blockIdx.y / tiles_c) * kTile, c0 = (blockIdx.y % tiles_c) * kTile;
  const int ty = tid >> 3, tx = tid & 7;
  float acc[4][4] = {};
  for (int j0 = i + 1; j0 < k; j0 += kTile) {
    if (tid < kTile) {
      const int j = j0 + tid;
      float w = 0.f;
      if (j < k && best != -INFINITY) {
        w = static_cast<float>(
            exp(log_scale[base + i * row + j] + log_scale[base + j * row + k] - best));
      }
      weights[tid] = w;
    }
    __syncthreads();
    for (int e = tid; e < kTile * kTile; e += kTileThreads) {
      const int r = e >> 5, col = e & 31;
      const int j = j0 + r;
      float left = 0.f, right = 0.f;
      if (j < k) {
        if (b0 + col < m) left = values[(base + i * row + j) * m + b0 + col] * weights[r];
        if (c0 + col < m) right = values[(base + j * row + k) * m + c0 + col];
      }
      As[r][col] = left;
      Bs[r][col] = right;
    }
    __syncthreads();
    TileProduct<kMax>(As, Bs, ty, tx, acc);
    __syncthreads();
  }
  StoreTileBlock<int>(acc, b0 + ty * 4, m, c0 + tx * 4, m, bc + static_cast<long long>(p) * m * m);
}

// partial[split][p][a] = op_{bc in split's range} BC[p][bc] * Rt[bc][a], for a 32 x 32 tile of
// (p, a). Rt is R transposed to [b*m+c][a].
template <bool kMax>
__global__ void __launch_bounds__(kTileThreads)
    ContractKernel(const float* bc, int span_count, int m, const float* rules_t,
                   int chunks_per_split, float* partial) {
  __shared__ __align__(16) float As[kTile][kTilePad];
  __shared__ __align__(16) float Bs[kTile][kTilePad];
  const int tid = threadIdx.x;
  const int p0 = blockIdx.x * kTile, a0 = blockIdx.y * kTile;
  const long long inner = static_cast<long long>(m) * m;
  const long long k_begin = static_cast<long long>(blockIdx.z) * chunks_per_split * kTile;
  const long long k_end = min(inner, k_begin + static_cast<long long>(chunks_per_split) * kTile);
  const int ty = tid >> 3, tx = tid & 7;
  float acc[4][4] = {};
  for (long long k0 = k_begin; k0 < k_end; k0 += kTile) {
    for (int e = tid; e < kTile * kTile; e += kTileThreads) {
      const int r = e >> 5, col = e & 31;
      const long long kk = k0 + col;
      As[col][r] = (p0 + r < span_count && kk < k_end) ? bc[(p0 + r) * inner + kk] : 0.f;
      const long long kb = k0 + r;
      Bs[r][col] = (a0 + col < m && kb < k_end) ? rules_t[kb * m + a0 + col] : 0.f;
    }
    __syncthreads();
    TileProduct<kMax>(As, Bs, ty, tx, acc);
    __syncthreads();
  }
  StoreTileBlock<long long>(acc, p0 + ty * 4, span_count, a0 + tx * 4, m,
                            partial + static_cast<long long>(blockIdx.z) * span_count * m);
}

// Combines the k-split partial products of each span, rescales the cell to a largest value of 1
// and records its log scale. One warp per span.
template <bool kMax>
__global__ void FinishKernel(const float* partial, int splits, int span_count,
                             const double* span_offset, const int2* spans,
                             const SentenceInfo* sentences, int width, int m, float* values,
                             double* log_scale) {
  const int warp = GridWarp(), lane = WarpLane();
  if (warp >= span_count) return;
  const int2 span = spans[warp];
  const long long cell = CellOf(sentences[span.x], span.y, width);
  const double offset = span_offset[warp];
  float largest = 0.f;
  for (int a = lane; a < m; a += 32) {
    float v = partial[static_cast<long long>(warp) * m + a];
    for (int split = 1; split < splits; ++split) {
      v = Combine<kMax>(v, partial[(static_cast<long long>(split) * span_count + warp) * m + a]);
    }
    values[cell * m + a] = v;
    largest = fmaxf(largest, v);
  }
  largest = WarpMax(largest);
  const bool zero = !(largest > 0.f) || offset == -INFINITY;
  const float inverse = zero ? 0.f : 1.f / largest;
  for (int a = lane; a < m; a += 32) values[cell * m + a] *= inverse;
  if (lane == 0) log_scale[cell] = zero ? -INFINITY : offset + log(static_cast<double>(largest));
}

__global__ void SentenceLogProbKernel(const SentenceInfo* sentences, int count, int m,
                                      const float* values, const double* log_scale, double* out) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= count) return;
  const SentenceInfo info = sentences[s];
  const long long cell = info.cell_offset + info.n;  // (0, n)
  const float v = values[cell * m];
  out[s] = v > 0.f ? log(static_cast<double>(v)) + log_scale[cell] : -INFINITY;
}

// A device buffer that only grows.
template <typename T>
struct DeviceBuffer {
  T* data = nullptr;
  size_t capacity = 0;
  ~DeviceBuffer() {
    if (data) cudaFree(data);
  }
  Status Reserve(size_t count) {
    if (count <= capacity) return Status();
    if (data) cudaFree(data);
    data = nullptr;
    capacity = 0;
    CKY_CUDA_TRY(cudaMalloc(&data, std::max<size_t>(count, 1) * sizeof(T)));
    capacity = count;
    return Status();
  }
};

class DenseInsideGpuImpl final : public DenseInsideGpu {
 public:
  Status Init(int m, int vocabulary_size, const std::vector<float>& rules,
              const std::vector<float>& terminals) {
    m_ = m;
    vocabulary_size_ = vocabulary_size;
    CKY_CUDA_TRY(cudaGetDevice(&device_));
    CKY_CUDA_TRY(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
    const size_t mm = static_cast<size_t>(m) * m;
    std::vector<float> transposed(mm * m);
    for (int a = 0; a < m; ++a) {
      for (size_t bc = 0; bc < mm; ++bc) transposed[bc * m + a] = rules[a * mm + bc];
    }
    CKY_RETURN_IF_ERROR(rules_t_.Reserve(transposed.size()));
    CKY_RETURN_IF_ERROR(terminals_.Reserve(terminals.size()));
    CKY_CUDA_TRY(cudaMemcpy(rules_t_.data, transposed.data(), transposed.size() * sizeof(float),
                            cudaMemcpyHostToDevice));
    CKY_CUDA_TRY(cudaMemcpy(terminals_.data, terminals.data(), terminals.size() * sizeof(float),
                            cudaMemcpyHostToDevice));
    return Status();
  }

  Status Inside(const std::vector<std::vector<int>>& sentences, bool viterbi,
                std::vector<double>* log_probs, std::vector<DenseGpuChart>* charts) override {
    const auto start = std::chrono::steady_clock::now();
    stats_ = DenseGpuStats();
    log_probs->assign(sentences.size(), -std::numeric_limits<double>::infinity());
    if (charts) {
      charts->assign(sentences.size(), DenseGpuChart());
      for (size_t s = 0; s < sentences.size(); ++s) {
        (*charts)[s].n = static_cast<int>(sentences[s].size());
        (*charts)[s].m = m_;
      }
    }
    for (const auto& sentence : sentences) {
      for (int word : sentence) {
        if (word < 0 || word >= vocabulary_size_) {
          return Status::Error("dense inside GPU: word id outside the vocabulary");
        }
      }
    }
    // Longest first; batches hold consecutive sentences up to a chart budget.
    std::vector<int> order;
    for (size_t s = 0; s < sentences.size(); ++s) {
      if (!sentences[s].empty()) order.push_back(static_cast<int>(s));
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int x, int y) { return sentences[x].size() > sentences[y].size(); });
    const size_t chart_budget_floats = size_t{1} << 28;  // 1 GiB of chart values per batch
    size_t first = 0;
    while (first < order.size()) {
      size_t last = first;
      size_t floats = 0;
      while (last < order.size()) {
        const size_t n = sentences[order[last]].size();
        const size_t need = (n + 1) * (n + 1) * static_cast<size_t>(m_);
        if (last > first && floats + need > chart_budget_floats) break;
        floats += need;
        ++last;
      }
      std::vector<int> batch(order.begin() + first, order.begin() + last);
      CKY_RETURN_IF_ERROR(RunBatch(sentences, batch, viterbi, log_probs, charts));
      ++stats_.batches;
      first = last;
    }
    stats_.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return Status();
  }

  DenseGpuStats last_stats() const override { return stats_; }

 private:
  Status RunBatch(const std::vector<std::vector<int>>& sentences, const std::vector<int>& batch,
                  bool viterbi, std::vector<double>* log_probs,
                  std::vector<DenseGpuChart>* charts) {
    const int count = static_cast<int>(batch.size());
    std::vector<SentenceInfo> info(count);
    std::vector<int> words;
    long long cells = 0;
    int longest = 0;
    for (int s = 0; s < count; ++s) {
      const auto& sentence = sentences[batch[s]];
      const int n = static_cast<int>(sentence.size());
      info[s] = {cells, n, static_cast<int>(words.size())};
      cells += static_cast<long long>(n + 1) * (n + 1);
      words.insert(words.end(), sentence.begin(), sentence.end());
      longest = std::max(longest, n);
    }
    // Spans (sentence, start) of each width, widths 1 .. longest, one after another.
    std::vector<int2> spans;
    std::vector<size_t> level_begin(longest + 2, 0);
    for (int width = 1; width <= longest; ++width) {
      level_begin[width] = spans.size();
      for (int s = 0; s < count && info[s].n >= width; ++s) {
        for (int i = 0; i + width <= info[s].n; ++i) spans.push_back(make_int2(s, i));
      }
    }
    level_begin[longest + 1] = spans.size();
    size_t widest_level = 0;
    for (int width = 2; width <= longest; ++width) {
      widest_level = std::max(widest_level, level_begin[width + 1] - level_begin[width]);
    }
    const size_t mm = static_cast<size_t>(m_) * m_;
    const size_t bc_budget_floats = size_t{1} << 27;  // 512 MiB of BC matrices at a time
    const size_t chunk_capacity =
        std::max<size_t>(1, std::min(widest_level, bc_budget_floats / mm));

    CKY_RETURN_IF_ERROR(sentences_.Reserve(count));
    CKY_RETURN_IF_ERROR(words_.Reserve(words.size()));
    CKY_RETURN_IF_ERROR(spans_.Reserve(spans.size()));
    CKY_RETURN_IF_ERROR(values_.Reserve(static_cast<size_t>(cells) * m_));
    CKY_RETURN_IF_ERROR(log_scale_.Reserve(cells));
    CKY_RETURN_IF_ERROR(bc_.Reserve(chunk_capacity * mm));
    CKY_RETURN_IF_ERROR(span_offset_.Reserve(chunk_capacity));
    // k-splitting only happens with few spans; see ContractShape.
    CKY_RETURN_IF_ERROR(partial_.Reserve((chunk_capacity + kTile + 4 * kTile * sm_count_) * m_));
    CKY_RETURN_IF_ERROR(results_.Reserve(count));
    CKY_CUDA_TRY(cudaMemcpy(sentences_.data, info.data(), count * sizeof(SentenceInfo),
                            cudaMemcpyHostToDevice));
    CKY_CUDA_TRY(
        cudaMemcpy(words_.data, words.data(), words.size() * sizeof(int), cudaMemcpyHostToDevice));
    CKY_CUDA_TRY(
        cudaMemcpy(spans_.data, spans.data(), spans.size() * sizeof(int2), cudaMemcpyHostToDevice));
    CKY_CUDA_TRY(cudaMemset(values_.data, 0, static_cast<size_t>(cells) * m_ * sizeof(float)));
    // The charts are copied back whole, cells no span fills (i >= j) included: zero their scales
    // too, so that no uninitialized device memory is read (compute-sanitizer initcheck).
    CKY_CUDA_TRY(cudaMemset(log_scale_.data, 0, static_cast<size_t>(cells) * sizeof(double)));

    {
      const int span_count = static_cast<int>(level_begin[2] - level_begin[1]);
      const int threads = 256;
      const int blocks = (span_count * 32 + threads - 1) / threads;
      WordCellsKernel<<<blocks, threads>>>(spans_.data + level_begin[1], span_count,
                                           sentences_.data, words_.data, terminals_.data, m_,
                                           values_.data, log_scale_.data);
      CKY_CUDA_TRY(cudaGetLastError());
      ++stats_.kernel_launches;
    }
    for (int width = 2; width <= longest; ++width) {
      ++stats_.levels;
      const size_t level_spans = level_begin[width + 1] - level_begin[width];
      for (size_t chunk = 0; chunk < level_spans; chunk += chunk_capacity) {
        const int span_count = static_cast<int>(std::min(chunk_capacity, level_spans - chunk));
        const int2* chunk_spans = spans_.data + level_begin[width] + chunk;
        CKY_RETURN_IF_ERROR(viterbi ? RunLevel<true>(chunk_spans, span_count, width)
                                    : RunLevel<false>(chunk_spans, span_count, width));
      }
    }
    SentenceLogProbKernel<<<(count + 127) / 128, 128>>>(sentences_.data, count, m_, values_.data,
                                                        log_scale_.data, results_.data);
    CKY_CUDA_TRY(cudaGetLastError());
    ++stats_.kernel_launches;
    std::vector<double> results(count);
    CKY_CUDA_TRY(
        cudaMemcpy(results.data(), results_.data, count * sizeof(double), cudaMemcpyDeviceToHost));
    for (int s = 0; s < count; ++s) (*log_probs)[batch[s]] = results[s];
    if (charts) {
      std::vector<float> values(static_cast<size_t>(cells) * m_);
      std::vector<double> scales(cells);
      CKY_CUDA_TRY(cudaMemcpy(values.data(), values_.data, values.size() * sizeof(float),
                              cudaMemcpyDeviceToHost));
      CKY_CUDA_TRY(cudaMemcpy(scales.data(), log_scale_.data, scales.size() * sizeof(double),
                              cudaMemcpyDeviceToHost));
      for (int s = 0; s < count; ++s) {
        DenseGpuChart& chart = (*charts)[batch[s]];
        const size_t first_cell = info[s].cell_offset;
        const size_t chart_cells = static_cast<size_t>(info[s].n + 1) * (info[s].n + 1);
        chart.values.assign(values.begin() + first_cell * m_,
                            values.begin() + (first_cell + chart_cells) * m_);
        chart.log_scale.assign(scales.begin() + first_cell,
                               scales.begin() + first_cell + chart_cells);
      }
    }
    return Status();
  }

  template <bool kMax>
  Status RunLevel(const int2* spans, int span_count, int width) {
    const int tiles = (m_ + kTile - 1) / kTile;
    BcKernel<kMax><<<dim3(span_count, tiles * tiles), kTileThreads>>>(
        spans, sentences_.data, width, m_, tiles, values_.data, log_scale_.data, bc_.data,
        span_offset_.data);
    CKY_CUDA_TRY(cudaGetLastError());
    // Split the m^2 inner dimension when the (span, a) tiles alone cannot fill the GPU.
    const int span_tiles = (span_count + kTile - 1) / kTile;
    const int inner_chunks = (m_ * m_ + kTile - 1) / kTile;
    const int wanted_blocks = 2 * sm_count_;
    int splits = std::clamp((wanted_blocks + span_tiles * tiles - 1) / (span_tiles * tiles), 1,
                            inner_chunks);
    const int chunks_per_split = (inner_chunks + splits - 1) / splits;
    splits = (inner_chunks + chunks_per_split - 1) / chunks_per_split;
    ContractKernel<kMax><<<dim3(span_tiles, tiles, splits), kTileThreads>>>(
        bc_.data, span_count, m_, rules_t_.data, chunks_per_split, partial_.data);
    CKY_CUDA_TRY(cudaGetLastError());
    const int threads = 32 * kFinishWarps;
    FinishKernel<kMax><<<(span_count + kFinishWarps - 1) / kFinishWarps, threads>>>(
        partial_.data, splits, span_count, span_offset_.data, spans, sentences_.data, width, m_,
        values_.data, log_scale_.data);
    CKY_CUDA_TRY(cudaGetLastError());
    stats_.kernel_launches += 3;
    return Status();
  }

  int m_ = 0;
  int vocabulary_size_ = 0;
  int device_ = 0;
  int sm_count_ = 1;
  DenseGpuStats stats_;
  DeviceBuffer<float> rules_t_, terminals_, values_, bc_, partial_;
  DeviceBuffer<double> log_scale_, span_offset_, results_;
  DeviceBuffer<SentenceInfo> sentences_;
  DeviceBuffer<int> words_;
  DeviceBuffer<int2> spans_;
};

}  // namespace

StatusOr<std::unique_ptr<DenseInsideGpu>> DenseInsideGpu::Create(
    int num_nonterminals, int vocabulary_size, const std::vector<float>& rules,
    const std::vector<float>& terminals) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    return Status::Error("dense inside GPU: no CUDA device");
  }
  const size_t m = static_cast<size_t>(num_nonterminals);
  if (num_nonterminals < 1 || rules.size() != m * m * m ||
      terminals.size() != static_cast<size_t>(vocabulary_size) * m) {
    return Status::Error("dense inside GPU: grammar arrays have the wrong sizes");
  }
  auto gpu = std::make_unique<DenseInsideGpuImpl>();
  CKY_RETURN_IF_ERROR(gpu->Init(num_nonterminals, vocabulary_size, rules, terminals));
  return std::unique_ptr<DenseInsideGpu>(std::move(gpu));
}

}  // namespace cky::cuda
