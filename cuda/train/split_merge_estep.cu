// The split-merge E-step on the device (split_merge_estep.h states the contract): public API, then
// the host dispatch, then the kernels. Compiled with --fmad=false (cuda/CMakeLists.txt) so that
// every product and sum rounds as in the CPU reference, which is built without contraction.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda/common/device_helpers.cuh"
#include "cuda/train/split_merge_estep.h"

namespace cky::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kNodeBlock = 256;   // inside/outside: 8 warps, a node each
constexpr int kCountBlock = 256;  // counts: a thread per entry of a tile of 256
constexpr unsigned kFull = 0xffffffffu;

// Which counts a counts kernel computes.
enum Kind { kBinary = 0, kUnary = 1, kToken = 2 };

// The treebank's static arrays on the device.
struct NodeArrays {
  const int32_t* symbol;
  const int32_t* left;
  const int32_t* right;
  const int32_t* rule;
  const int32_t* token;
  const int64_t* offset;              // per node: its first substate in the in/out arrays
  const int32_t* unary_child_symbol;  // per unary rule
  const int32_t* binary_left_symbol;  // per binary rule
  const int32_t* binary_right_symbol;
};

struct ParameterArrays {
  const int32_t* num_substates;
  const int64_t* binary_offset;
  const int64_t* unary_offset;
  const int64_t* token_offset;
  const double* binary_probs;
  const double* unary_probs;
  const double* lexical;
};

__device__ __forceinline__ double WarpMax(double v) {
  for (int d = kWarp / 2; d > 0; d /= 2) v = fmax(v, __shfl_xor_sync(kFull, v, d));
  return v;
}

// Divides the warp's node vector v[0, n) by its largest value (when positive) and returns
// log(largest) (0 when it is 0: the vector stays all zero). Every lane writes only its own
// entries (k = lane, lane + 32, ...), as it computed them.
__device__ __forceinline__ double ScaleVector(double* v, int n, int lane) {
  double top = 0;
  for (int k = lane; k < n; k += kWarp) top = fmax(top, v[k]);
  top = WarpMax(top);
  if (!(top > 0)) return 0;
  for (int k = lane; k < n; k += kWarp) v[k] /= top;
  return log(top);
}

// Inside pass for the nodes of one height: a warp per node, lanes over its substates.
__global__ void InsideKernel(const int32_t* level_nodes, int count, NodeArrays nodes,
                             ParameterArrays params, double* in, double* in_scale) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (warp >= count) return;
  const int node = level_nodes[warp];
  const int np = params.num_substates[nodes.symbol[node]];
  double* v = in + nodes.offset[node];
  double scale;
  const int token = nodes.token[node];
  if (token >= 0) {
    const double* lexical = params.lexical + params.token_offset[token];
    for (int p = lane; p < np; p += kWarp) v[p] = lexical[p];
    scale = 0;
  } else if (nodes.right[node] < 0) {
    const int rule = nodes.rule[node];
    const int child = nodes.left[node];
    const int nc = params.num_substates[nodes.unary_child_symbol[rule]];
    const double* probs = params.unary_probs + params.unary_offset[rule];
    const double* c = in + nodes.offset[child];
    for (int p = lane; p < np; p += kWarp) {
      const double* row = probs + int64_t(p) * nc;
      double sum = 0;
      for (int k = 0; k < nc; ++k) sum += row[k] * c[k];
      v[p] = sum;
    }
    scale = in_scale[child];
  } else {
    const int rule = nodes.rule[node];
    const int left = nodes.left[node], right = nodes.right[node];
    const int nl = params.num_substates[nodes.binary_left_symbol[rule]];
    const int nr = params.num_substates[nodes.binary_right_symbol[rule]];
    const double* probs = params.binary_probs + params.binary_offset[rule];
    const double* l_in = in + nodes.offset[left];
    const double* r_in = in + nodes.offset[right];
    for (int p = lane; p < np; p += kWarp) {
      double sum = 0;
      for (int l = 0; l < nl; ++l) {
        const double lv = l_in[l];
        if (lv == 0) continue;
        const double* row = probs + (int64_t(p) * nl + l) * nr;
        double inner = 0;
        for (int r = 0; r < nr; ++r) inner += row[r] * r_in[r];
        sum += lv * inner;
      }
      v[p] = sum;
    }
    scale = in_scale[left] + in_scale[right];
  }
  __syncwarp();
  const double log_top = ScaleVector(v, np, lane);
  if (lane == 0) in_scale[node] = scale + log_top;
}

// Outside pass for the parents of one height: a warp per parent node computes its children's
// outside vectors (each child has this one parent), then scales them.
__global__ void OutsideKernel(const int32_t* level_nodes, int count, NodeArrays nodes,
                              ParameterArrays params, const double* in, const double* in_scale,
                              double* out, double* out_scale) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (warp >= count) return;
  const int node = level_nodes[warp];
  const int np = params.num_substates[nodes.symbol[node]];
  const double* o = out + nodes.offset[node];
  const int rule = nodes.rule[node];
  const int left = nodes.left[node], right = nodes.right[node];
  if (right < 0) {
    const int nc = params.num_substates[nodes.unary_child_symbol[rule]];
    const double* probs = params.unary_probs + params.unary_offset[rule];
    double* c_out = out + nodes.offset[left];
    for (int c = lane; c < nc; c += kWarp) {
      double sum = 0;
      for (int p = 0; p < np; ++p) {
        if (o[p] == 0) continue;
        sum += o[p] * probs[int64_t(p) * nc + c];
      }
      c_out[c] = sum;
    }
    __syncwarp();
    const double log_top = ScaleVector(c_out, nc, lane);
    if (lane == 0) out_scale[left] = out_scale[node] + log_top;
    return;
  }
  const int nl = params.num_substates[nodes.binary_left_symbol[rule]];
  const int nr = params.num_substates[nodes.binary_right_symbol[rule]];
  const double* probs = params.binary_probs + params.binary_offset[rule];
  const double* l_in = in + nodes.offset[left];
  const double* r_in = in + nodes.offset[right];
  double* l_out = out + nodes.offset[left];
  double* r_out = out + nodes.offset[right];
  // Left child: sum over p of out[p] (sum over r of p(p, l, r) in_right[r]).
  for (int l = lane; l < nl; l += kWarp) {
    double sum = 0;
    for (int p = 0; p < np; ++p) {
      if (o[p] == 0) continue;
      const double* row = probs + (int64_t(p) * nl + l) * nr;
      double to_left = 0;
      for (int r = 0; r < nr; ++r) to_left += row[r] * r_in[r];
      sum += o[p] * to_left;
    }
    l_out[l] = sum;
  }
  // Right child: sum over p, then l, of (out[p] in_left[l]) p(p, l, r).
  for (int r = lane; r < nr; r += kWarp) {
    double sum = 0;
    for (int p = 0; p < np; ++p) {
      if (o[p] == 0) continue;
      for (int l = 0; l < nl; ++l) {
        const double factor = o[p] * l_in[l];
        sum += factor * probs[(int64_t(p) * nl + l) * nr + r];
      }
    }
    r_out[r] = sum;
  }
  __syncwarp();
  const double log_left = ScaleVector(l_out, nl, lane);
  const double log_right = ScaleVector(r_out, nr, lane);
  if (lane == 0) {
    out_scale[left] = out_scale[node] + in_scale[right] + log_left;
    out_scale[right] = out_scale[node] + in_scale[left] + log_right;
  }
}

// Each tree's root: outside 1 for its first substate, log P(tree) from its inside.
__global__ void RootKernel(const int32_t* roots, int num_trees, NodeArrays nodes,
                           ParameterArrays params, const double* in, const double* in_scale,
                           double* out, double* out_scale, double* tree_ll) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= num_trees) return;
  const int root = roots[t];
  const int np = params.num_substates[nodes.symbol[root]];
  double* o = out + nodes.offset[root];
  for (int p = 0; p < np; ++p) o[p] = p == 0 ? 1.0 : 0.0;
  out_scale[root] = 0;
  const double v = in[nodes.offset[root]];
  tree_ll[t] = v > 0 ? log(v) + in_scale[root] : -INFINITY;
}

// Per occurrence of a rule or token type: where its vectors are and the factor
// exp(scales - log P(tree)) (-1 for a tree without a derivation: no counts).
template <int kKind>
__global__ void OccurrenceKernel(const int32_t* occurrence_nodes, int count,
                                 const int32_t* node_tree, NodeArrays nodes, const double* in_scale,
                                 const double* out_scale, const double* tree_ll, int64_t* a,
                                 int64_t* b, int64_t* c, double* factor) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= count) return;
  const int node = occurrence_nodes[j];
  const double ll = tree_ll[node_tree[node]];
  a[j] = nodes.offset[node];
  if (kKind == kToken) {
    b[j] = nodes.offset[node];
    factor[j] = isfinite(ll) ? exp(out_scale[node] + in_scale[node] - ll) : -1.0;
  } else if (kKind == kUnary) {
    const int child = nodes.left[node];
    b[j] = nodes.offset[child];
    factor[j] = isfinite(ll) ? exp(out_scale[node] + in_scale[child] - ll) : -1.0;
  } else {
    const int left = nodes.left[node], right = nodes.right[node];
    b[j] = nodes.offset[left];
    c[j] = nodes.offset[right];
    factor[j] = isfinite(ll) ? exp(out_scale[node] + in_scale[left] + in_scale[right] - ll) : -1.0;
  }
}

// The counts of one segment (an entity's occurrences within one chunk of trees, in treebank
// order) for one tile of 256 of the entity's entries, summed as the reference sums a chunk.
// work[blockIdx.x] = (segment, first entry).
template <int kKind>
__global__ void SegmentCountsKernel(const int2* work, const int32_t* segment_entity,
                                    const int32_t* segment_begin, const int64_t* segment_partial,
                                    const int32_t* entity_symbols, ParameterArrays params,
                                    const int64_t* a, const int64_t* b, const int64_t* c,
                                    const double* factor, const double* in, const double* out,
                                    double* partial) {
  const int2 w = work[blockIdx.x];
  const int segment = w.x;
  const int entity = segment_entity[segment];
  const int64_t* offsets = kKind == kBinary  ? params.binary_offset
                           : kKind == kUnary ? params.unary_offset
                                             : params.token_offset;
  const int64_t size = offsets[entity + 1] - offsets[entity];
  const int64_t index = int64_t(w.y) + threadIdx.x;
  if (index >= size) return;
  const int begin = segment_begin[segment], end = segment_begin[segment + 1];
  double sum = 0;
  if (kKind == kToken) {
    for (int j = begin; j < end; ++j) {
      const double f = factor[j];
      if (f < 0) continue;
      sum += out[a[j] + index] * in[b[j] + index] * f;
    }
  } else if (kKind == kUnary) {
    const int nc = params.num_substates[entity_symbols[2 * entity + 1]];
    const int p = int(index / nc), k = int(index % nc);
    const double prob = params.unary_probs[offsets[entity] + index];
    for (int j = begin; j < end; ++j) {
      const double f = factor[j];
      if (f < 0) continue;
      const double o = out[a[j] + p];
      if (o == 0) continue;
      sum += o * f * prob * in[b[j] + k];
    }
  } else {
    const int nl = params.num_substates[entity_symbols[3 * entity + 1]];
    const int nr = params.num_substates[entity_symbols[3 * entity + 2]];
    const int p = int(index / (int64_t(nl) * nr));
    const int l = int(index / nr % nl), r = int(index % nr);
    const double prob = params.binary_probs[offsets[entity] + index];
    for (int j = begin; j < end; ++j) {
      const double f = factor[j];
      if (f < 0) continue;
      const double o = out[a[j] + p];
      if (o == 0) continue;
      const double scaled = o * f * in[b[j] + l];
      if (scaled == 0) continue;
      sum += scaled * prob * in[c[j] + r];
    }
  }
  partial[segment_partial[segment] + index] = sum;
}

// Final counts: per entry, the sum of its entity's segment partials in chunk order.
__global__ void ReduceSegmentsKernel(int64_t total, int num_entities, const int64_t* offsets,
                                     const int32_t* entity_first_segment,
                                     const int64_t* segment_partial, const double* partial,
                                     double* counts) {
  const int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= total) return;
  int lo = 0, hi = num_entities - 1;  // the entity e with offsets[e] <= g < offsets[e + 1]
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (offsets[mid] <= g) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const int64_t index = g - offsets[lo];
  double sum = 0;
  for (int s = entity_first_segment[lo]; s < entity_first_segment[lo + 1]; ++s) {
    sum += partial[segment_partial[s] + index];
  }
  counts[g] = sum;
}

// The log-likelihood: per chunk the sum of its trees' (in tree order), then the chunks in order.
// One block; thread i sums chunk i (i, i + blockDim, ...).
__global__ void LikelihoodKernel(const double* tree_ll, const int32_t* chunk_first_tree,
                                 int num_chunks, double* chunk_sum, int* chunk_unparsable,
                                 double* total, int* unparsable) {
  for (int chunk = threadIdx.x; chunk < num_chunks; chunk += blockDim.x) {
    double sum = 0;
    int bad = 0;
    for (int t = chunk_first_tree[chunk]; t < chunk_first_tree[chunk + 1]; ++t) {
      if (isfinite(tree_ll[t])) {
        sum += tree_ll[t];
      } else {
        ++bad;
      }
    }
    chunk_sum[chunk] = sum;
    chunk_unparsable[chunk] = bad;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double sum = 0;
    int bad = 0;
    for (int chunk = 0; chunk < num_chunks; ++chunk) {
      sum += chunk_sum[chunk];
      bad += chunk_unparsable[chunk];
    }
    *total = sum;
    *unparsable = bad;
  }
}

#define ESTEP_CUDA(expr)                                                                  \
  do {                                                                                    \
    const cudaError_t estep_err_ = (expr);                                                \
    if (estep_err_ != cudaSuccess) {                                                      \
      *error = std::string("CUDA error in " #expr ": ") + cudaGetErrorString(estep_err_); \
      return false;                                                                       \
    }                                                                                     \
  } while (0)

// One kind of counts (binary rules, unary rules or token types): its occurrences cut into
// segments, one per (entity, chunk), in entity order then chunk order.
struct CountGroup {
  int num_entities = 0;
  std::vector<int32_t> host_segment_entity, host_segment_begin, host_entity_first_segment;
  DeviceArray<int32_t> occurrence_nodes, segment_entity, segment_begin, entity_first_segment;
  DeviceArray<int32_t>
      entity_symbols;  // binary: parent, left, right; unary: parent, child; token: tag
  int num_occurrences = 0;
  // Per Run.
  DeviceArray<int64_t> a, b, c, segment_partial, offsets;
  DeviceArray<double> factor, partial, counts;
  DeviceArray<int2> work;
};

class DeviceSplitMergeEStepImpl final : public DeviceSplitMergeEStep {
 public:
  bool Init(const SplitMergeTreebank& tb, std::string* error) {
    num_nodes_ = int(tb.symbol.size());
    num_trees_ = int(tb.tree_first_node.size()) - 1;
    num_symbols_ = tb.num_symbols;
    host_symbol_ = tb.symbol;
    // Heights: preterminals 0, a parent 1 + its highest child (children precede parents).
    std::vector<int32_t> height(num_nodes_, 0);
    int max_height = 0;
    for (int i = 0; i < num_nodes_; ++i) {
      if (tb.left[i] >= 0) height[i] = 1 + height[tb.left[i]];
      if (tb.right[i] >= 0) height[i] = std::max(height[i], 1 + height[tb.right[i]]);
      max_height = std::max(max_height, height[i]);
    }
    level_first_.assign(max_height + 2, 0);
    for (int i = 0; i < num_nodes_; ++i) ++level_first_[height[i] + 1];
    for (int h = 0; h <= max_height; ++h) level_first_[h + 1] += level_first_[h];
    std::vector<int32_t> level_nodes(num_nodes_);
    std::vector<int32_t> fill(level_first_.begin(), level_first_.end() - 1);
    for (int i = 0; i < num_nodes_; ++i) level_nodes[fill[height[i]]++] = i;
    std::vector<int32_t> node_tree(num_nodes_), roots(num_trees_);
    for (int t = 0; t < num_trees_; ++t) {
      for (int i = tb.tree_first_node[t]; i < tb.tree_first_node[t + 1]; ++i) node_tree[i] = t;
      roots[t] = tb.tree_first_node[t + 1] - 1;
    }
    const int num_chunks = tb.tree_chunk.empty() ? 1 : tb.tree_chunk.back() + 1;
    std::vector<int32_t> chunk_first_tree(num_chunks + 1, num_trees_);
    for (int t = num_trees_ - 1; t >= 0; --t) chunk_first_tree[tb.tree_chunk[t]] = t;
    for (int chunk = num_chunks - 1; chunk >= 0; --chunk) {
      chunk_first_tree[chunk] = std::min(chunk_first_tree[chunk], chunk_first_tree[chunk + 1]);
    }
    num_chunks_ = num_chunks;

    auto upload = [&](auto& device, const auto& host, const char* what) {
      if (!device.Upload(host)) {
        *error = std::string("cannot upload ") + what + " to the device";
        return false;
      }
      return true;
    };
    if (!upload(symbol_, tb.symbol, "nodes") || !upload(left_, tb.left, "nodes") ||
        !upload(right_, tb.right, "nodes") || !upload(rule_, tb.rule, "nodes") ||
        !upload(token_, tb.token, "nodes") || !upload(node_tree_, node_tree, "nodes") ||
        !upload(roots_, roots, "trees") || !upload(level_nodes_, level_nodes, "levels") ||
        !upload(chunk_first_tree_, chunk_first_tree, "chunks") ||
        !upload(unary_child_, tb.unary_child, "rules") ||
        !upload(binary_left_, tb.binary_left, "rules") ||
        !upload(binary_right_, tb.binary_right, "rules")) {
      return false;
    }
    // Count groups: occurrences per entity in treebank order, cut at chunk boundaries.
    auto build = [&](CountGroup& group, int num_entities, auto entity_of,
                     const std::vector<int32_t>& symbols) {
      group.num_entities = num_entities;
      std::vector<std::vector<int32_t>> per_entity(num_entities);
      for (int i = 0; i < num_nodes_; ++i) {
        const int e = entity_of(i);
        if (e >= 0) per_entity[e].push_back(i);
      }
      std::vector<int32_t> occurrences;
      group.host_entity_first_segment.assign(1, 0);
      group.host_segment_entity.clear();
      group.host_segment_begin.clear();
      for (int e = 0; e < num_entities; ++e) {
        int current_chunk = -1;
        for (int node : per_entity[e]) {
          const int chunk = tb.tree_chunk[node_tree[node]];
          if (chunk != current_chunk) {
            group.host_segment_entity.push_back(e);
            group.host_segment_begin.push_back(int32_t(occurrences.size()));
            current_chunk = chunk;
          }
          occurrences.push_back(node);
        }
        group.host_entity_first_segment.push_back(int32_t(group.host_segment_entity.size()));
      }
      group.host_segment_begin.push_back(int32_t(occurrences.size()));
      group.num_occurrences = int(occurrences.size());
      return upload(group.occurrence_nodes, occurrences, "occurrences") &&
             upload(group.segment_entity, group.host_segment_entity, "segments") &&
             upload(group.segment_begin, group.host_segment_begin, "segments") &&
             upload(group.entity_first_segment, group.host_entity_first_segment, "segments") &&
             upload(group.entity_symbols, symbols, "rules") &&
             group.a.Reserve(occurrences.size()) && group.b.Reserve(occurrences.size()) &&
             group.c.Reserve(occurrences.size()) && group.factor.Reserve(occurrences.size());
    };
    std::vector<int32_t> binary_symbols, unary_symbols;
    for (size_t r = 0; r < tb.binary_parent.size(); ++r) {
      binary_symbols.insert(binary_symbols.end(),
                            {tb.binary_parent[r], tb.binary_left[r], tb.binary_right[r]});
    }
    for (size_t r = 0; r < tb.unary_parent.size(); ++r) {
      unary_symbols.insert(unary_symbols.end(), {tb.unary_parent[r], tb.unary_child[r]});
    }
    const bool built =
        build(
            groups_[kBinary], int(tb.binary_parent.size()),
            [&](int i) { return tb.token[i] < 0 && tb.right[i] >= 0 ? tb.rule[i] : -1; },
            binary_symbols) &&
        build(
            groups_[kUnary], int(tb.unary_parent.size()),
            [&](int i) { return tb.token[i] < 0 && tb.right[i] < 0 ? tb.rule[i] : -1; },
            unary_symbols) &&
        build(
            groups_[kToken], int(tb.token_tag.size()), [&](int i) { return tb.token[i]; },
            tb.token_tag);
    if (!built) {
      *error = "cannot hold the treebank's occurrence lists on the device";
      return false;
    }
    if (!tree_ll_.Reserve(num_trees_) || !scalars_.Reserve(1) || !chunk_sum_.Reserve(num_chunks) ||
        !int_scalars_.Reserve(num_chunks + 1) || !in_scale_.Reserve(num_nodes_) ||
        !out_scale_.Reserve(num_nodes_)) {
      *error = "cannot allocate per-tree arrays on the device";
      return false;
    }
    return true;
  }

  bool Run(const SplitMergeParameters& params, SplitMergeCounts* counts,
           std::string* error) override {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<int64_t> node_offset(num_nodes_ + 1, 0);
    for (int i = 0; i < num_nodes_; ++i) {
      node_offset[i + 1] = node_offset[i] + params.num_substates[host_symbol_[i]];
    }
    const int64_t* host_offsets[3] = {params.binary_offset, params.unary_offset,
                                      params.token_offset};
    const double* host_values[3] = {params.binary_probs, params.unary_probs, params.lexical};
    const int64_t sizes[3] = {params.binary_offset[groups_[kBinary].num_entities],
                              params.unary_offset[groups_[kUnary].num_entities],
                              params.token_offset[groups_[kToken].num_entities]};
    std::vector<int32_t> num_substates(params.num_substates, params.num_substates + num_symbols_);
    if (!num_substates_.Upload(num_substates) || !node_offset_.Upload(node_offset) ||
        !in_.Reserve(node_offset.back()) || !out_.Reserve(node_offset.back())) {
      *error = "out of device memory for the inside and outside vectors";
      return false;
    }
    int64_t partial_entries = 0;
    for (int kind = 0; kind < 3; ++kind) {
      CountGroup& g = groups_[kind];
      std::vector<int64_t> offsets(host_offsets[kind], host_offsets[kind] + g.num_entities + 1);
      // Segment partial offsets and the (segment, first entry) work list.
      const size_t num_segments = g.host_segment_entity.size();
      std::vector<int64_t> segment_partial(num_segments + 1, 0);
      std::vector<int2> work;
      for (size_t s = 0; s < num_segments; ++s) {
        const int e = g.host_segment_entity[s];
        const int64_t size = offsets[e + 1] - offsets[e];
        segment_partial[s + 1] = segment_partial[s] + size;
        for (int64_t first = 0; first < size; first += kCountBlock) {
          work.push_back(make_int2(int(s), int(first)));
        }
      }
      if (!g.offsets.Upload(offsets) || !g.segment_partial.Upload(segment_partial) ||
          !g.work.Upload(work) || !g.partial.Reserve(segment_partial.back()) ||
          !g.counts.Reserve(sizes[kind]) || !values_[kind].Reserve(sizes[kind])) {
        *error = "out of device memory for the counts (" +
                 std::to_string(segment_partial.back() * 8 >> 20) + " MiB of chunk partials)";
        return false;
      }
      partial_entries += segment_partial.back();
      work_size_[kind] = int(work.size());
      sizes_[kind] = sizes[kind];
      if (sizes[kind] > 0) {
        ESTEP_CUDA(cudaMemcpy(values_[kind].get(), host_values[kind], sizes[kind] * sizeof(double),
                              cudaMemcpyHostToDevice));
      }
    }
    ESTEP_CUDA(cudaDeviceSynchronize());
    const auto t1 = std::chrono::steady_clock::now();

    NodeArrays nodes{symbol_.get(),      left_.get(),        right_.get(),
                     rule_.get(),        token_.get(),       node_offset_.get(),
                     unary_child_.get(), binary_left_.get(), binary_right_.get()};
    ParameterArrays p{num_substates_.get(),          groups_[kBinary].offsets.get(),
                      groups_[kUnary].offsets.get(), groups_[kToken].offsets.get(),
                      values_[kBinary].get(),        values_[kUnary].get(),
                      values_[kToken].get()};
    const int levels = int(level_first_.size()) - 1;
    const int nodes_per_block = kNodeBlock / kWarp;
    for (int h = 0; h < levels; ++h) {
      const int count = level_first_[h + 1] - level_first_[h];
      if (count == 0) continue;
      InsideKernel<<<(count + nodes_per_block - 1) / nodes_per_block, kNodeBlock>>>(
          level_nodes_.get() + level_first_[h], count, nodes, p, in_.get(), in_scale_.get());
    }
    RootKernel<<<(num_trees_ + 127) / 128, 128>>>(roots_.get(), num_trees_, nodes, p, in_.get(),
                                                  in_scale_.get(), out_.get(), out_scale_.get(),
                                                  tree_ll_.get());
    for (int h = levels - 1; h >= 1; --h) {
      const int count = level_first_[h + 1] - level_first_[h];
      if (count == 0) continue;
      OutsideKernel<<<(count + nodes_per_block - 1) / nodes_per_block, kNodeBlock>>>(
          level_nodes_.get() + level_first_[h], count, nodes, p, in_.get(), in_scale_.get(),
          out_.get(), out_scale_.get());
    }
    ESTEP_CUDA(cudaGetLastError());
    ESTEP_CUDA(cudaDeviceSynchronize());
    const auto t2 = std::chrono::steady_clock::now();

    LaunchCounts<kBinary>(nodes, p);
    LaunchCounts<kUnary>(nodes, p);
    LaunchCounts<kToken>(nodes, p);
    LikelihoodKernel<<<1, 256>>>(tree_ll_.get(), chunk_first_tree_.get(), num_chunks_,
                                 chunk_sum_.get(), int_scalars_.get() + 1, scalars_.get(),
                                 int_scalars_.get());
    ESTEP_CUDA(cudaGetLastError());
    ESTEP_CUDA(cudaDeviceSynchronize());
    const auto t3 = std::chrono::steady_clock::now();

    std::vector<double>* outs[3] = {&counts->binary, &counts->unary, &counts->token};
    for (int kind = 0; kind < 3; ++kind) {
      outs[kind]->resize(sizes[kind]);
      if (sizes[kind] > 0) {
        ESTEP_CUDA(cudaMemcpy(outs[kind]->data(), groups_[kind].counts.get(),
                              sizes[kind] * sizeof(double), cudaMemcpyDeviceToHost));
      }
    }
    ESTEP_CUDA(cudaMemcpy(&counts->log_likelihood, scalars_.get(), sizeof(double),
                          cudaMemcpyDeviceToHost));
    int unparsable = 0;
    ESTEP_CUDA(cudaMemcpy(&unparsable, int_scalars_.get(), sizeof(int), cudaMemcpyDeviceToHost));
    counts->unparsable = unparsable;
    const auto t4 = std::chrono::steady_clock::now();
    auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    char text[300];
    std::snprintf(text, sizeof(text),
                  "upload %.4f s, inside-outside %.4f s (%d heights), counts %.4f s (%lld MiB of "
                  "chunk partials), download %.4f s",
                  seconds(t0, t1), seconds(t1, t2), levels, seconds(t2, t3),
                  static_cast<long long>(partial_entries * 8 >> 20), seconds(t3, t4));
    profile_ = text;
    return true;
  }

  std::string LastRunProfile() const override { return profile_; }

 private:
  template <int kKind>
  void LaunchCounts(const NodeArrays& nodes, const ParameterArrays& p) {
    CountGroup& g = groups_[kKind];
    if (g.num_occurrences > 0) {
      OccurrenceKernel<kKind><<<(g.num_occurrences + 255) / 256, 256>>>(
          g.occurrence_nodes.get(), g.num_occurrences, node_tree_.get(), nodes, in_scale_.get(),
          out_scale_.get(), tree_ll_.get(), g.a.get(), g.b.get(), g.c.get(), g.factor.get());
    }
    if (work_size_[kKind] > 0) {
      SegmentCountsKernel<kKind><<<work_size_[kKind], kCountBlock>>>(
          g.work.get(), g.segment_entity.get(), g.segment_begin.get(), g.segment_partial.get(),
          g.entity_symbols.get(), p, g.a.get(), g.b.get(), g.c.get(), g.factor.get(), in_.get(),
          out_.get(), g.partial.get());
    }
    const int64_t size = sizes_[kKind];
    if (size > 0) {
      ReduceSegmentsKernel<<<int((size + 255) / 256), 256>>>(
          size, g.num_entities, g.offsets.get(), g.entity_first_segment.get(),
          g.segment_partial.get(), g.partial.get(), g.counts.get());
    }
  }

  int num_nodes_ = 0, num_trees_ = 0, num_symbols_ = 0, num_chunks_ = 1;
  std::vector<int32_t> host_symbol_, level_first_;
  DeviceArray<int32_t> symbol_, left_, right_, rule_, token_, node_tree_, roots_, level_nodes_,
      chunk_first_tree_, unary_child_, binary_left_, binary_right_, num_substates_;
  DeviceArray<int64_t> node_offset_;
  DeviceArray<double> in_, out_, in_scale_, out_scale_, tree_ll_, scalars_, chunk_sum_;
  DeviceArray<int> int_scalars_;
  DeviceArray<double> values_[3];
  CountGroup groups_[3];
  int work_size_[3] = {0, 0, 0};
  int64_t sizes_[3] = {0, 0, 0};  // entries of each kind of counts in this Run
  std::string profile_;
};

}  // namespace

std::unique_ptr<DeviceSplitMergeEStep> DeviceSplitMergeEStep::Create(
    const SplitMergeTreebank& treebank, std::string* error) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    *error = "no CUDA device";
    return nullptr;
  }
  auto estep = std::make_unique<DeviceSplitMergeEStepImpl>();
  if (!estep->Init(treebank, error)) return nullptr;
  return estep;
}

}  // namespace cky::cuda
