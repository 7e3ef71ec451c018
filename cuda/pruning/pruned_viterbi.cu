// Coarse-to-fine pruned Viterbi on the device (cuda/pruning/pruned_viterbi.h): public API, then the
// batch dispatch (levels, spans, launch shapes), then the kernels.
//
// Kernels (one launch per span length and pass, every sentence of the batch in it; one block of
// kThreads per chart cell):
//   1. InsideSpan: the masked max-plus inside pass of one span length. One warp per parent state
//      allowed in the cell, taken most rules first from a shared counter (a state the previous
//      level pruned costs one byte read, its rules are never touched: the per-cell bitmask of Hall
//      et al. 2014 at the granularity of one parent's rule tile); its lanes take the parent's
//      rules, each over every split point, skipping a rule whose left or right child is absent from
//      every left or right child cell (bitmasks of the states present, built first in shared
//      memory; each split point's child cells as pointers there too). Then the cell's unary layer,
//      one thread per state, a warp per state of many unary rules.
//   2. OutsideSpan: the max-marginal pass of one span length, from the root down. One warp per item
//      present in the cell pulls its outside score (post-unary) from the parent cells it can be a
//      left or a right child in (rules indexed by left and by right child; bitmasks of the parents
//      with an outside score and the siblings present skip the rules that cannot apply; each
//      parent and sibling cell as a pointer in shared memory), into shared memory; then one
//      thread per state: the outside score below the unary layer (unaries indexed by
//      child), the max-marginal and the threshold, i.e. the level's survivors.
//   3. Refine: the next level's allowed items, each state allowed where its coarser state survived.
//   4. CompactFinite: the fine chart's finite entries, for a copy back of only those; or, with
//      device_trees, cuda/viterbi's tree search over the fine chart (extract.cuh) and RootScores.
// Pruning kernels 4 (the pre-parse levels, and the fine level of pruned Viterbi): the binary maxima
// of kernels 1 and 2 come from the max-plus pair kernels over work lists
// (cuda/inside_outside/pair_sum.cuh with kMax) into a chart filled with -infinity first
// (FillNegInf); kernels 1 and 2 then run the rest of each cell's work (the unary layer; the outside
// unary layer, max-marginals and threshold), and PresenceKernel records each span's symbols present
// for the next spans' work lists. A level given PruningLevel::pair_groups has its tiles, work lists
// and presence flags by those groups of states (an earlier level's states) instead of symbols.
// Pruning kernels 5: as 4, and at the levels that run kernels 1 and 2, a span of few cells gets
// several blocks a cell (blockIdx.y takes a share of the states; the rest of each cell's work then
// runs as the pair kernels' levels run it). Pruning kernels 6 (the default): as 5, and the first
// level's kernels 1 and 2 (no mask, few states) take their binary maxima dense (DensePhase: staged
// rows, every thread an equal share of the rules).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <sstream>

#include "cuda/common/device_helpers.cuh"
#include "cuda/common/host_parallel.h"
#include "cuda/inside_outside/charts.cuh"
#include "cuda/inside_outside/pair_sum.cuh"
#include "cuda/inside_outside/sum_layouts.h"
#include "cuda/pruning/pruned_viterbi.h"
#include "cuda/viterbi/extract.cuh"

namespace cky::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRootState = 0;  // ROOT_0 (grammar_io/grammar.h)

// One level's grammar on the device.
struct LevelView {
  int num_states;
  // Binary rules by parent.
  const int* parent_begin;
  const int* left;
  const int* right;
  const double* log_prob;
  // The same rules by left child: parent and right child; and by right child: parent, left child.
  const int* by_left_begin;
  const int* by_left_parent;
  const int* by_left_right;
  const double* by_left_log_prob;
  const int* by_right_begin;
  const int* by_right_parent;
  const int* by_right_left;
  const double* by_right_log_prob;
  // Closed unaries by parent, and by child.
  const int* unary_begin;
  const int* unary_child;
  const double* unary_log_prob;
  const int* unary_by_child_begin;
  const int* unary_by_child_parent;
  const double* unary_by_child_log_prob;
  const int* to_coarser;
  double threshold;
  // Kernels 1 and 2 hand the states to their warps in these orders (most binary rules first: by
  // parent for the inside pass, by either child for the outside).
  const int* inside_order;
  const int* outside_order;
};

// Host memory for n values, kept and reused by later calls that need no more (left uninitialized:
// the caller writes every value it uses).
template <typename T>
class HostArray {
 public:
  T* Get(size_t n) {
    if (n > capacity_) {
      data_.reset(new T[n]);
      capacity_ = n;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<T[]> data_;
  size_t capacity_ = 0;
};

// The batch's sentences: length, first cell and first word in the batch's arrays.
struct BatchView {
  const int* length;
  const long long* cell_offset;
  const long long* word_offset;
};

__device__ __forceinline__ double WarpMax(double v) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const double other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = other > v ? other : v;
  }
  return v;
}

__device__ __forceinline__ bool Has(const unsigned* bits, int s) {
  return (bits[s >> 5] >> (s & 31)) & 1u;
}

// Sets in `bits` (words of 32 states) the states with a finite score in any of the `count` cells
// cell_of(0 .. count - 1) (chart offsets), one warp per (cell, word) job; with `per_cell` (pruning
// kernels 2) also each cell's own: per_cell[k * words + w] = word w of cell k (every word
// written). The caller zeroes `bits` and syncs before and after.
template <typename CellOf>
__device__ __forceinline__ void OrPresent(const double* chart, int states, int count,
                                          CellOf cell_of, unsigned* bits,
                                          unsigned* per_cell = nullptr) {
  const int words = (states + 31) / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int job = warp; job < count * words; job += kWarps) {
    const int w = job % words, s = w * 32 + lane;
    const bool present = s < states && chart[cell_of(job / words) * states + s] > -INFINITY;
    const unsigned votes = __ballot_sync(0xffffffffu, present);
    if (lane == 0 && per_cell) per_cell[job] = votes;
    if (lane == 0 && votes) atomicOr(&bits[w], votes);
  }
}

// One rule of a state in kernels 1 and 2: its other two states (inside: left and right child;
// outside: parent and sibling), log-probability, and whether both are present in some cell.
struct RuleOfState {
  int a, b;
  double log_prob;
  bool usable;
};

// Kernels 1 and 2: a lane's best candidate of one state over its `rules` rules (rule_of(r)) and
// `cells` cell pairs c (a_cells[c] and b_cells[c], the cells whose scores of the rule's states a
// and b it adds; usable_at(rule, c) false where one of them is absent there). Each candidate is
// log_prob + (a + b) with pair_first, else (log_prob + a) + b, as the CPU pruner adds. The lanes
// take the (rule, cell) pairs j = r * cells + c in turn when the state has fewer rules than a warp
// has lanes (the coarse levels), else a rule each over every cell. Their chart reads are issued
// kInFlight at a time before any is used: one after another, kernels 1 and 2 waited on each.
// Kernel 1 takes 4, kernel 2 2 (with 4, its registers cost it blocks an SM and it was slower:
// bench/RESULTS-LOG.md). Skipped candidates count as -infinity, so the maximum is the same in any
// order.
template <int kInFlight, typename RuleOf, typename UsableAt>
__device__ __forceinline__ double LaneBest(int lane, int rules, int cells, bool pair_first,
                                           RuleOf rule_of, UsableAt usable_at,
                                           const double* const* a_cells,
                                           const double* const* b_cells) {
  double best = -INFINITY;
  if (cells == 0 || rules == 0) return best;
  const auto take = [&](double w, double a, double b) {
    const double score = pair_first ? w + (a + b) : (w + a) + b;
    if (score > best) best = score;
  };
  if (rules < 32) {
    // Stepping by 32 pairs without a division a step; past the last rule, loads of the last
    // rule's (valid) addresses whose values are not used.
    const int step_rules = 32 / cells, step_c = 32 % cells;
    int r = lane / cells, c = lane % cells;
    while (r < rules) {
      double w[kInFlight], a[kInFlight], b[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const RuleOfState rule = rule_of(min(r, rules - 1));
        const bool live = r < rules && rule.usable && usable_at(rule, c);
        w[u] = rule.log_prob;
        a[u] = live ? a_cells[c][rule.a] : -INFINITY;
        b[u] = live ? b_cells[c][rule.b] : -INFINITY;
        r += step_rules;
        c += step_c;
        if (c >= cells) c -= cells, ++r;
      }
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) take(w[u], a[u], b[u]);
    }
  } else {
    for (int r = lane; r < rules; r += 32) {
      const RuleOfState rule = rule_of(r);
      if (!rule.usable) continue;
      for (int c0 = 0; c0 < cells; c0 += kInFlight) {
        double a[kInFlight], b[kInFlight];
#pragma unroll
        for (int u = 0; u < kInFlight; ++u) {
          const int c = min(c0 + u, cells - 1);
          const bool live = c0 + u < cells && usable_at(rule, c);
          a[u] = live ? a_cells[c][rule.a] : -INFINITY;
          b[u] = live ? b_cells[c][rule.b] : -INFINITY;
        }
#pragma unroll
        for (int u = 0; u < kInFlight; ++u) take(rule.log_prob, a[u], b[u]);
      }
    }
  }
  return best;
}

// Pruning kernels 6's dense binary phase of kernels 1 and 2 (at the first level, without a mask,
// when it runs them and has at most kThreads states): instead of a warp per state walking its rules
// and testing which children are present, the block stages the rows of a chunk of split points
// (inside: left and right child cells; outside: parent and sibling cells) in shared memory, and
// each thread takes an equal share of the rules of the cell's live states (inside: allowed parents;
// outside: children with a score here), every rule over every staged split point, -infinity rows
// included: a candidate is a few instructions, where kernels 1 and 2 spent tens on each (their
// loads, the presence tests, the (rule, split point) stepping), and no warp waits for another's
// larger state. A thread's running maximum per state goes into the block's maxima by a 64-bit
// atomicMax on an order-preserving key. Candidates are formed as kernels 1 and 2 form them; maxima
// are the same in any order, so the results are theirs bit for bit.

// An order-preserving map of doubles (no NaN) to unsigned keys, and back.
__device__ __forceinline__ unsigned long long OrderedKey(double v) {
  const unsigned long long bits = static_cast<unsigned long long>(__double_as_longlong(v));
  return bits >> 63 ? ~bits : bits | (1ull << 63);
}
__device__ __forceinline__ double FromOrderedKey(unsigned long long key) {
  return __longlong_as_double(static_cast<long long>(key >> 63 ? key & ~(1ull << 63) : ~key));
}

// Block-wide exclusive prefix sum of one value a thread (blockDim.x == kThreads); *total gets the
// sum. Ends behind a barrier.
__device__ __forceinline__ int BlockExclusiveSum(int value, int* total) {
  __shared__ int warp_sums[kWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int inclusive = value;
  for (int offset = 1; offset < 32; offset <<= 1) {
    const int other = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += other;
  }
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  int before = 0, all = 0;
  for (int w = 0; w < kWarps; ++w) {
    before += w < warp ? warp_sums[w] : 0;
    all += warp_sums[w];
  }
  *total = all;
  __syncthreads();  // warp_sums free for the next call
  return before + inclusive - value;
}

// Kernels 1 and 2: the states of `order` that the block takes (positions y, y + gridDim.y, ... for
// blockIdx.y = y) and keep(state) holds for, into list[0 ..] in that order; drop(state) for the
// others. Returns how many were listed; the list is visible to the block when it returns. (The
// warps then take turns at the listed states only: a turn at a state the previous level pruned,
// most states of a masked level, cost a warp a chain of loads and a counter's atomic.)
template <typename Keep, typename Drop>
__device__ __forceinline__ int ListStates(int states, const int* order, Keep keep, Drop drop,
                                          int* list) {
  const int mine = (states - int(blockIdx.y) + int(gridDim.y) - 1) / int(gridDim.y);
  int listed = 0;
  for (int i0 = 0; i0 < mine; i0 += blockDim.x) {  // uniform over the block
    const int i = i0 + threadIdx.x;
    bool in = false;
    int state = 0;
    if (i < mine) {
      state = __ldg(order + blockIdx.y + i * gridDim.y);
      in = keep(state);
      if (!in) drop(state);
    }
    int count = 0;
    const int before = BlockExclusiveSum(in ? 1 : 0, &count);
    if (in) list[listed + before] = state;
    listed += count;
  }
  __syncthreads();
  return listed;
}

// A warp's turns at the `listed` states of list: fn(state), the warp's next turn taken from the
// block's shared counter *next (set to kWarps before a barrier: each warp's first turn is its own
// index), so that no warp is left with the largest states while the others wait at the block's
// next barrier. Warp-uniform.
template <typename Fn>
__device__ __forceinline__ void ForEachListedState(int listed, const int* list, int* next, Fn fn) {
  const int lane = threadIdx.x % 32;
  for (int turn = threadIdx.x / 32; turn < listed;) {
    fn(list[turn]);
    if (lane == 0) turn = atomicAdd(next, 1);
    turn = __shfl_sync(0xffffffffu, turn, 0);
  }
}

// Kernel 2's dynamic shared memory starts with the outside scores and four presence masks.
__host__ __device__ constexpr size_t OutsideScoresBytes(int states) {
  return size_t(states) * sizeof(double) + 4 * size_t((states + 31) / 32) * sizeof(unsigned);
}

// Dynamic shared bytes of the dense phase: the states' keys, two rows a staged split point, the
// rule prefix sums; kernel 2's outside scores (OutsideShared's first part) before them. At most
// 24 KB, so that more blocks share an SM (44 KB took 18% longer: bench/RESULTS.md).
constexpr size_t kDenseSharedBytes = 24 * 1024;
__host__ __device__ constexpr size_t DenseFixedBytes(int states) {
  return size_t(states) * sizeof(unsigned long long) + size_t(states + 1) * sizeof(int);
}
// Split points (parent cells) staged at a time.
inline int DenseChunk(int states) {
  return std::max<int>(
      1, int((kDenseSharedBytes - size_t(states) * sizeof(double) - DenseFixedBytes(states)) /
             (2 * size_t(states) * sizeof(double))));
}
inline size_t DenseShared(int states, int chunk) {
  return DenseFixedBytes(states) + 2 * size_t(chunk) * states * sizeof(double);
}

// The dense phase over `cells` split points (or parent cells) of one role: per live state x
// (count_of(x) rules, the first at first_rule(x)), the maximum over its rules r and the cells i
// of candidate(r, a_rows[i], b_rows[i]) with rule_of(r) = {a, b, log_prob}: into best[x] (keys,
// set by the caller). row_a(i), row_b(i): cell i's rows (chart pointers). rows: 2 * chunk * states
// doubles of shared memory (a chunk's a rows, then its b rows); prefix: states + 1 ints.
template <typename CountOf, typename FirstRule, typename RuleOf, typename RowA, typename RowB>
__device__ __forceinline__ void DensePhase(int states, int cells, int chunk, bool pair_first,
                                           CountOf count_of, FirstRule first_rule, RuleOf rule_of,
                                           RowA row_a, RowB row_b, unsigned long long* best,
                                           double* rows, int* prefix) {
  if (cells == 0) return;  // uniform over the block
  int total = 0;
  const int x_here = threadIdx.x;
  const int before = BlockExclusiveSum(x_here < states ? count_of(x_here) : 0, &total);
  if (x_here < states) prefix[x_here] = before;
  if (threadIdx.x == 0) prefix[states] = total;
  // This thread's share [p0, p1) of the live states' rules, in state order, and the state of p0:
  // the last one whose rules start at or before it.
  const int p0 = int(static_cast<long long>(total) * threadIdx.x / blockDim.x);
  const int p1 = int(static_cast<long long>(total) * (threadIdx.x + 1) / blockDim.x);
  __syncthreads();
  int first = 0;
  for (int hi = states - 1; first < hi;) {
    const int mid = (first + hi + 1) / 2;
    if (prefix[mid] <= p0) {
      first = mid;
    } else {
      hi = mid - 1;
    }
  }
  double* a_rows = rows;
  double* b_rows = rows + size_t(chunk) * states;
  for (int i0 = 0; i0 < cells; i0 += chunk) {
    const int staged = min(chunk, cells - i0);
    for (int j = threadIdx.x; j < staged * states; j += blockDim.x) {
      const int i = j / states, x = j - i * states;
      a_rows[j] = row_a(i0 + i)[x];
      b_rows[j] = row_b(i0 + i)[x];
    }
    __syncthreads();
    int x = first, next = prefix[first + 1];
    double m = -INFINITY;
    for (int pos = p0; pos < p1; ++pos) {
      while (pos >= next) {
        if (m > -INFINITY) atomicMax(best + x, OrderedKey(m));
        m = -INFINITY;
        ++x;
        next = prefix[x + 1];
      }
      const RuleOfState rule = rule_of(first_rule(x) + pos - prefix[x]);
      const double w = rule.log_prob;
      for (int i = 0; i < staged; ++i) {
        const double a = a_rows[i * states + rule.a], b = b_rows[i * states + rule.b];
        const double score = pair_first ? w + (a + b) : (w + a) + b;
        if (score > m) m = score;
      }
    }
    if (m > -INFINITY) atomicMax(best + x, OrderedKey(m));
    __syncthreads();  // the rows are staged again
  }
}

// Kernel 1's unary layer of one cell: post_cell[a] = the maximum of pre_cell[a] and, over a's unary
// rules u, log_prob(u) + pre_cell[child(u)], for the allowed states a (-infinity for the others).
// The block takes kThreads states at a time: a state of few rules is its thread's; the states of
// more than kUnaryWarpRules are then shared out to the warps, whose lanes take each one's rules (a
// thread walking a fine S or ROOT state's 400 rules in turn held its whole block). A unary_only
// launch of few cells may spread a cell's states over gridDim.y blocks (the other launches have
// one block a cell here). Every candidate is formed as before, and the maximum is the same in any
// order. Called by the whole block.
constexpr int kUnaryWarpRules = 32;
__device__ __forceinline__ void UnaryLayer(const LevelView& g, const uint8_t* ok,
                                           const double* pre_cell, double* post_cell) {
  __shared__ int warp_states[kThreads];
  __shared__ int warp_state_count;
  const int states = g.num_states, lane = threadIdx.x % 32;
  for (int first_state = blockIdx.y * blockDim.x; first_state < states;
       first_state += blockDim.x * gridDim.y) {
    if (threadIdx.x == 0) warp_state_count = 0;
    __syncthreads();
    const int a = first_state + threadIdx.x;
    if (a < states && ok && !ok[a]) {
      post_cell[a] = -INFINITY;
    } else if (a < states) {
      const int first = g.unary_begin[a], last = g.unary_begin[a + 1];
      if (last - first > kUnaryWarpRules) {
        warp_states[atomicAdd(&warp_state_count, 1)] = a;
      } else {
        double best = pre_cell[a];
        for (int u = first; u < last; ++u) {
          const double score = g.unary_log_prob[u] + pre_cell[g.unary_child[u]];
          if (score > best) best = score;
        }
        post_cell[a] = best;
      }
    }
    __syncthreads();
    const int count = warp_state_count;
    for (int i = threadIdx.x / 32; i < count; i += blockDim.x / 32) {
      const int h = warp_states[i];
      const int last = g.unary_begin[h + 1];
      double best = lane == 0 ? pre_cell[h] : -INFINITY;
      for (int u = g.unary_begin[h] + lane; u < last; u += 32) {
        const double score = g.unary_log_prob[u] + pre_cell[g.unary_child[u]];
        if (score > best) best = score;
      }
      best = WarpMax(best);
      if (lane == 0) post_cell[h] = best;
    }
    __syncthreads();  // the list and its count are made again
  }
}

// The chart cell a block of kernels 1 and 2 works on: items[blockIdx.x] = (sentence, start).
struct BlockCell {
  int start, end, n;
  long long base, cell;  // the sentence's first cell in the batch, this cell
};
__device__ __forceinline__ BlockCell ThisBlocksCell(const BatchView& batch, const int2* items,
                                                    int span) {
  const int2 item = items[blockIdx.x];
  BlockCell c;
  c.start = item.y;
  c.end = item.y + span;
  c.n = batch.length[item.x];
  c.base = batch.cell_offset[item.x];
  c.cell = c.base + ChartCellIndex(c.n, c.start, c.end);
  return c;
}

// Kernel 1. Block (one cell) = items[blockIdx.x] = (sentence, start) at this span length.
// split_bits (pruning kernels 2): dynamic shared memory also holds each split point's left and
// right child cell's present states (InsideShared).
// kDense (pruning kernels 6): the binary maxima by DensePhase, `chunk` split points staged at a
// time (dynamic shared memory: DenseShared).
template <bool kDense>
__global__ void __launch_bounds__(kThreads)
    InsideSpan(LevelView g, BatchView batch, const int2* items, int span, const uint8_t* allowed,
               const double* lexical, double* post, double* pre, bool split_bits, bool unary_only,
               bool pair_first, bool binary_only, int chunk) {
  const BlockCell here = ThisBlocksCell(batch, items, span);
  const int start = here.start, end = here.end, n = here.n, states = g.num_states;
  const long long base = here.base, cell = here.cell;
  const uint8_t* ok = allowed ? allowed + cell * states : nullptr;
  double* pre_cell = pre + cell * states;
  double* post_cell = post + cell * states;
  const double neg_inf = -INFINITY;
  if (ok) {
    // A cell the previous level pruned whole (most cells of long spans) costs one read of its mask.
    bool any = false;
    for (int s = threadIdx.x; s < states; s += blockDim.x) any = any || ok[s];
    if (!__syncthreads_or(any)) {
      for (int s = threadIdx.x; s < states; s += blockDim.x) pre_cell[s] = post_cell[s] = neg_inf;
      return;
    }
  }
  if (unary_only) {
    // Pruning kernels 4: `pre` holds the binary maxima of the allowed states (-infinity others).
  } else if (span == 1) {
    const double* word = lexical + (batch.word_offset[items[blockIdx.x].x] + start) * states;
    for (int s = threadIdx.x; s < states; s += blockDim.x) {
      pre_cell[s] = (!ok || ok[s]) ? word[s] : neg_inf;
    }
  } else if constexpr (kDense) {
    extern __shared__ double dense_shared[];
    unsigned long long* best = reinterpret_cast<unsigned long long*>(dense_shared);
    double* rows = dense_shared + states;
    int* prefix = reinterpret_cast<int*>(rows + 2 * size_t(chunk) * states);
    for (int x = threadIdx.x; x < states; x += blockDim.x) best[x] = OrderedKey(neg_inf);
    const auto left_cell = [&](int k) { return base + ChartCellIndex(n, start, start + 1 + k); };
    const auto right_cell = [&](int k) { return base + ChartCellIndex(n, start + 1 + k, end); };
    // (DensePhase's first barrier orders the keys before its atomics.)
    DensePhase(
        states, span - 1, chunk, pair_first,
        [&](int p) { return ok && !ok[p] ? 0 : g.parent_begin[p + 1] - g.parent_begin[p]; },
        [&](int p) { return g.parent_begin[p]; },
        [&](int r) {
          return RuleOfState{__ldg(g.left + r), __ldg(g.right + r), __ldg(g.log_prob + r), true};
        },
        [&](int k) { return post + left_cell(k) * states; },
        [&](int k) { return post + right_cell(k) * states; }, best, rows, prefix);
    for (int p = threadIdx.x; p < states; p += blockDim.x) {
      pre_cell[p] = ok && !ok[p] ? neg_inf : FromOrderedKey(best[p]);
    }
  } else {
    // The states present in some left child cell and in some right child cell: a rule whose
    // children are absent from every split point is skipped without reading the chart (most
    // states are absent once the coarser levels pruned).
    // Dynamic shared memory: each split point's left and right child cell (pointers into
    // `post`, so that a candidate's reads need no cell arithmetic), then the presence masks.
    extern __shared__ double inside_shared[];
    const double** left_cells = reinterpret_cast<const double**>(inside_shared);
    const double** right_cells = left_cells + (span - 1);
    unsigned* present = reinterpret_cast<unsigned*>(right_cells + (span - 1));
    const int words = (states + 31) / 32;
    unsigned* left_any = present;
    unsigned* right_any = present + words;
    // Pruning kernels 2: per split point k, left_split[k * words ..] and right_split[..].
    unsigned* left_split = present + 2 * words;
    unsigned* right_split = left_split + size_t(span - 1) * words;
    for (int w = threadIdx.x; w < 2 * words; w += blockDim.x) present[w] = 0;
    __shared__ int next_turn;
    if (threadIdx.x == 0) next_turn = kWarps;
    const auto left_cell = [&](int k) { return base + ChartCellIndex(n, start, start + 1 + k); };
    const auto right_cell = [&](int k) { return base + ChartCellIndex(n, start + 1 + k, end); };
    for (int k = threadIdx.x; k < span - 1; k += blockDim.x) {
      left_cells[k] = post + left_cell(k) * states;
      right_cells[k] = post + right_cell(k) * states;
    }
    __syncthreads();
    OrPresent(post, states, span - 1, left_cell, left_any, split_bits ? left_split : nullptr);
    OrPresent(post, states, span - 1, right_cell, right_any, split_bits ? right_split : nullptr);
    __syncthreads();
    const int lane = threadIdx.x % 32;
    const int splits = span - 1;
    // With more than one block a cell (gridDim.y, pruning kernels 5), block y takes every
    // gridDim.y-th state of g.inside_order from y: those allowed, listed after the masks.
    int* list = reinterpret_cast<int*>(present + (split_bits ? 2 * words * span : 2 * words));
    const int listed = ListStates(
        states, g.inside_order, [&](int p) { return !ok || ok[p]; },
        [&](int p) { pre_cell[p] = neg_inf; }, list);
    ForEachListedState(listed, list, &next_turn, [&](int p) {
      const int first = g.parent_begin[p], rules = g.parent_begin[p + 1] - first;
      // Rule r's children at split point start + 1 + k: left_cells[k][left], right_cells[k][right].
      const auto rule_of = [&](int r) {
        const int rule = first + r;
        RuleOfState x{g.left[rule], g.right[rule], g.log_prob[rule], false};
        x.usable = Has(left_any, x.a) && Has(right_any, x.b);
        return x;
      };
      const auto usable_at = [&](const RuleOfState& x, int k) {
        return !split_bits || (Has(left_split + size_t(k) * words, x.a) &&
                               Has(right_split + size_t(k) * words, x.b));
      };
      const double best = WarpMax(LaneBest<4>(lane, rules, splits, pair_first, rule_of, usable_at,
                                              left_cells, right_cells));
      if (lane == 0) pre_cell[p] = best;
    });
  }
  // Pruning kernels 5's binary launch: the unary layer is a launch of its own (unary_only).
  if (binary_only) return;
  UnaryLayer(g, ok, pre_cell, post_cell);  // (its first barrier orders the maxima above first)
}

// Kernel 2. Block = one cell, as kernel 1; dynamic shared memory: the cell's outside scores above
// its unary layer (num_states doubles). Writes the cell's outside scores below the unary layer
// (read by its children, later launches) and its survivors; counts them into *kept.
// split_bits (pruning kernels 2, OutsideShared): the presence masks of each parent and sibling cell
// too, so that a (rule, parent cell) whose parent or sibling is absent there is skipped without
// reading the chart.
// kDense (pruning kernels 6): the binary maxima by DensePhase, `chunk` parent cells staged at a
// time (dynamic shared memory: OutsideShared(states) and DenseShared).
template <bool kDense>
__global__ void __launch_bounds__(kThreads)
    OutsideSpan(LevelView g, BatchView batch, const int2* items, int span, const double* post,
                const double* pre, double* out_pre, uint8_t* survivors, unsigned long long* kept,
                bool split_bits, const double* binary_out_post, bool pair_first, double* binary_out,
                int chunk) {
  extern __shared__ double out_post[];  // num_states, then the presence bits below
  const BlockCell here = ThisBlocksCell(batch, items, span);
  const int start = here.start, end = here.end, n = here.n, states = g.num_states;
  const long long base = here.base, cell = here.cell;
  const double* post_cell = post + cell * states;
  const double* pre_cell = pre + cell * states;
  const double neg_inf = -INFINITY;
  {
    // A cell without any item (pruned whole, or underivable) has no outside scores, no survivors.
    bool any = false;
    for (int s = threadIdx.x; s < states; s += blockDim.x) any = any || post_cell[s] > neg_inf;
    if (!__syncthreads_or(any)) {
      for (int s = threadIdx.x; s < states; s += blockDim.x) {
        out_pre[cell * states + s] = neg_inf;
        survivors[cell * states + s] = 0;
      }
      return;
    }
  }
  if (span == n) {
    if (binary_out) return;  // no binary outside scores: the next launch starts at the root
    for (int x = threadIdx.x; x < states; x += blockDim.x) {
      out_post[x] = x == kRootState ? 0.0 : neg_inf;
    }
  } else if (binary_out_post) {
    // Pruning kernels 4: the outside scores above the unary layer, from the pair kernels.
    for (int x = threadIdx.x; x < states; x += blockDim.x) {
      out_post[x] = binary_out_post[cell * states + x];
    }
  } else if constexpr (kDense) {
    unsigned long long* best = reinterpret_cast<unsigned long long*>(
        out_post + OutsideScoresBytes(states) / sizeof(double));
    double* rows = reinterpret_cast<double*>(best + states);
    int* prefix = reinterpret_cast<int*>(rows + 2 * size_t(chunk) * states);
    for (int x = threadIdx.x; x < states; x += blockDim.x) best[x] = OrderedKey(neg_inf);
    const auto live = [&](int x) { return post_cell[x] > neg_inf; };
    // This cell as the left child of (start, end + 1 + i), beside (end, end + 1 + i), i < n - end;
    // as the right child of (i, end), beside (i, start), i < start.
    const auto left_parent = [&](int i) { return base + ChartCellIndex(n, start, end + 1 + i); };
    const auto right_of = [&](int i) { return base + ChartCellIndex(n, end, end + 1 + i); };
    const auto right_parent = [&](int i) { return base + ChartCellIndex(n, i, end); };
    const auto left_of = [&](int i) { return base + ChartCellIndex(n, i, start); };
    // (DensePhase's first barrier orders the keys before its atomics.)
    DensePhase(
        states, n - end, chunk, pair_first,
        [&](int x) { return live(x) ? g.by_left_begin[x + 1] - g.by_left_begin[x] : 0; },
        [&](int x) { return g.by_left_begin[x]; },
        [&](int r) {
          return RuleOfState{__ldg(g.by_left_parent + r), __ldg(g.by_left_right + r),
                             __ldg(g.by_left_log_prob + r), true};
        },
        [&](int i) { return out_pre + left_parent(i) * states; },
        [&](int i) { return post + right_of(i) * states; }, best, rows, prefix);
    DensePhase(
        states, start, chunk, pair_first,
        [&](int x) { return live(x) ? g.by_right_begin[x + 1] - g.by_right_begin[x] : 0; },
        [&](int x) { return g.by_right_begin[x]; },
        [&](int r) {
          return RuleOfState{__ldg(g.by_right_parent + r), __ldg(g.by_right_left + r),
                             __ldg(g.by_right_log_prob + r), true};
        },
        [&](int i) { return out_pre + right_parent(i) * states; },
        [&](int i) { return post + left_of(i) * states; }, best, rows, prefix);
    for (int x = threadIdx.x; x < states; x += blockDim.x) {
      out_post[x] = live(x) ? FromOrderedKey(best[x]) : neg_inf;
    }
  } else {
    // Parents with an outside score and siblings with an inside score in some parent cell where
    // this cell is the left child (cells (start, k), (end, k), k > end) and the right child (cells
    // (k, end), (k, start), k < start): rules absent from all are skipped.
    const int words = (states + 31) / 32;
    const int above_left = n - end, above_right = start;  // parent cells of each kind
    // Each parent cell's outside scores and its sibling's inside scores as pointers (for this
    // cell as a left child: parents (start, end + 1 + i), siblings (end, end + 1 + i); as a right
    // child: parents (i, end), siblings (i, start)), so that a candidate's reads need no cell
    // arithmetic; then the presence masks.
    const double** left_parents = reinterpret_cast<const double**>(out_post + states);
    const double** right_siblings = left_parents + above_left;
    const double** right_parents = right_siblings + above_left;
    const double** left_siblings = right_parents + above_right;
    unsigned* parent_of_left = reinterpret_cast<unsigned*>(left_siblings + above_right);
    unsigned* right_sibling = parent_of_left + words;
    unsigned* parent_of_right = right_sibling + words;
    unsigned* left_sibling = parent_of_right + words;
    // With split_bits, per parent cell i: parent_of_left_at[i * words ..] (cell (start, end + 1 +
    // i)), right_sibling_at (cell (end, end + 1 + i)), parent_of_right_at (cell (i, end)),
    // left_sibling_at (cell (i, start)).
    unsigned* parent_of_left_at = left_sibling + words;
    unsigned* right_sibling_at = parent_of_left_at + size_t(n - end) * words;
    unsigned* parent_of_right_at = right_sibling_at + size_t(n - end) * words;
    unsigned* left_sibling_at = parent_of_right_at + size_t(start) * words;
    for (int w = threadIdx.x; w < 4 * words; w += blockDim.x) parent_of_left[w] = 0;
    __shared__ int next_turn;
    if (threadIdx.x == 0) next_turn = kWarps;
    const auto left_parent = [&](int k) { return base + ChartCellIndex(n, start, end + 1 + k); };
    const auto right_of = [&](int k) { return base + ChartCellIndex(n, end, end + 1 + k); };
    const auto right_parent = [&](int k) { return base + ChartCellIndex(n, k, end); };
    const auto left_of = [&](int k) { return base + ChartCellIndex(n, k, start); };
    for (int i = threadIdx.x; i < above_left; i += blockDim.x) {
      left_parents[i] = out_pre + left_parent(i) * states;
      right_siblings[i] = post + right_of(i) * states;
    }
    for (int i = threadIdx.x; i < above_right; i += blockDim.x) {
      right_parents[i] = out_pre + right_parent(i) * states;
      left_siblings[i] = post + left_of(i) * states;
    }
    __syncthreads();
    const auto at = [&](unsigned* masks) { return split_bits ? masks : nullptr; };
    OrPresent(out_pre, states, n - end, left_parent, parent_of_left, at(parent_of_left_at));
    OrPresent(post, states, n - end, right_of, right_sibling, at(right_sibling_at));
    OrPresent(out_pre, states, start, right_parent, parent_of_right, at(parent_of_right_at));
    OrPresent(post, states, start, left_of, left_sibling, at(left_sibling_at));
    __syncthreads();
    const int lane = threadIdx.x % 32;
    // With more than one block a cell (gridDim.y, pruning kernels 5), block y takes every
    // gridDim.y-th state of g.outside_order from y (those with an inside score here, listed after
    // the masks), and writes their maxima to binary_out.
    double* to = binary_out ? binary_out + cell * states : out_post;
    int* list = reinterpret_cast<int*>(split_bits ? left_sibling_at + size_t(start) * words
                                                  : left_sibling + words);
    const int listed = ListStates(
        states, g.outside_order, [&](int x) { return post_cell[x] > neg_inf; },
        [&](int x) { to[x] = neg_inf; }, list);
    ForEachListedState(listed, list, &next_turn, [&](int x) {
      // x as one child of the parent cells i < cells, whose pointers and per-cell masks are
      // given; its rules there are [first, first + rules) of the parent / sibling / log_prob
      // arrays (by left child or by right child), skipped when the parent or the sibling is absent
      // from every such cell (parent_any, sibling_any) or, with split_bits, from that cell. The
      // CPU's order of additions, (outside_pre(parent) + rule) + sibling, or rule +
      // (outside_pre(parent) + sibling) with pair_first.
      auto as_child = [&](int first, int rules, const int* parents, const int* siblings,
                          const double* log_probs, int cells, const double** parent_cells,
                          const double** sibling_cells, const unsigned* parent_any,
                          const unsigned* sibling_any, const unsigned* parent_at,
                          const unsigned* sibling_at) {
        const auto rule_of = [&](int r) {
          const int rule = first + r;
          RuleOfState y{parents[rule], siblings[rule], log_probs[rule], false};
          y.usable = Has(parent_any, y.a) && Has(sibling_any, y.b);
          return y;
        };
        const auto usable_at = [&](const RuleOfState& y, int i) {
          return !split_bits || (Has(parent_at + size_t(i) * words, y.a) &&
                                 Has(sibling_at + size_t(i) * words, y.b));
        };
        return LaneBest<2>(lane, rules, cells, pair_first, rule_of, usable_at, parent_cells,
                           sibling_cells);
      };
      // x as the left child of (start, end + 1 + i), beside (end, end + 1 + i), i < above_left;
      // as the right child of (i, end), beside (i, start), i < above_right.
      const double as_left = as_child(
          g.by_left_begin[x], g.by_left_begin[x + 1] - g.by_left_begin[x], g.by_left_parent,
          g.by_left_right, g.by_left_log_prob, above_left, left_parents, right_siblings,
          parent_of_left, right_sibling, parent_of_left_at, right_sibling_at);
      const double as_right = as_child(
          g.by_right_begin[x], g.by_right_begin[x + 1] - g.by_right_begin[x], g.by_right_parent,
          g.by_right_left, g.by_right_log_prob, above_right, right_parents, left_siblings,
          parent_of_right, left_sibling, parent_of_right_at, left_sibling_at);
      const double best = WarpMax(as_left > as_right ? as_left : as_right);
      if (lane == 0) to[x] = best;
    });
  }
  // Pruning kernels 5's binary launch: the rest is a launch of its own (binary_out_post).
  if (binary_out) return;
  __syncthreads();
  const double best_root = post[(base + ChartCellIndex(n, 0, n)) * states + kRootState];
  double* out_pre_cell = out_pre + cell * states;
  uint8_t* kept_cell = survivors + cell * states;
  const int lane = threadIdx.x % 32;
  for (int c0 = 0; c0 < states; c0 += blockDim.x) {
    const int c = c0 + threadIdx.x;
    bool keep = false;
    if (c < states) {
      const double in_pre = pre_cell[c];
      double below = in_pre > neg_inf ? out_post[c] : neg_inf;
      if (in_pre > neg_inf) {
        for (int u = g.unary_by_child_begin[c]; u < g.unary_by_child_begin[c + 1]; ++u) {
          const int a = g.unary_by_child_parent[u];
          if (out_post[a] == neg_inf || post_cell[a] == neg_inf) continue;
          const double score = out_post[a] + g.unary_by_child_log_prob[u];
          if (score > below) below = score;
        }
      }
      out_pre_cell[c] = below;
      const double through_post = post_cell[c] + out_post[c];
      const double through_pre = in_pre + below;
      const double m = through_post < through_pre ? through_pre : through_post;  // std::max
      keep = m > neg_inf && m - best_root > g.threshold;
      kept_cell[c] = keep ? 1 : 0;
    }
    const unsigned votes = __ballot_sync(0xffffffffu, keep);
    if (lane == 0 && votes) atomicAdd(kept, static_cast<unsigned long long>(__popc(votes)));
  }
}

// Pruning kernels 4: per cell of one span length (a block each, items[0 ..]), present[cell][symbol]
// = 1 where some state of the symbol (or state group: the level's pair_group) has a finite score
// in `chart` (zeroed before the level).
__global__ void PresenceKernel(const double* chart, const io::CellItem* items, int span, int states,
                               const int* state_symbol, int num_symbols, unsigned char* present) {
  const io::CellItem it = items[blockIdx.x];
  const long long cell = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  for (int s = threadIdx.x; s < states; s += blockDim.x) {
    if (chart[cell * states + s] > -INFINITY) present[cell * num_symbols + state_symbol[s]] = 1;
  }
}

// Pruning kernels 4: the `states` entries of each cell of one span length set to -infinity.
__global__ void FillNegInf(double* chart, const io::CellItem* items, int span, int states) {
  const io::CellItem it = items[blockIdx.x];
  const long long cell = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  for (int s = threadIdx.x; s < states; s += blockDim.x) chart[cell * states + s] = -INFINITY;
}

// Kernel 3. allowed[cell][s] = survivors[cell][to_coarser[s]], every cell of the batch.
__global__ void Refine(const uint8_t* survivors, int coarse_states, const int* to_coarser,
                       int states, long long cells, uint8_t* allowed,
                       unsigned long long* allowed_count) {
  const long long total = cells * states;
  unsigned long long count = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long cell = i / states;
    const int s = static_cast<int>(i - cell * states);
    const uint8_t a = survivors[cell * coarse_states + to_coarser[s]];
    allowed[i] = a;
    count += a;
  }
  for (int offset = 16; offset > 0; offset >>= 1)
    count += __shfl_xor_sync(0xffffffffu, count, offset);
  if (threadIdx.x % 32 == 0 && count) atomicAdd(allowed_count, count);
}

// Kernel 4. The finite entries of the batch's fine chart, as (index, score) pairs in no
// particular order (the host scatters them into -infinity charts): pruned charts are mostly
// -infinity, and copying them whole dominated the batch.
__global__ void CompactFinite(const double* chart, long long total, unsigned long long* count,
                              long long* index, double* score) {
  const int lane = threadIdx.x % 32;
  for (long long base = blockIdx.x * (long long)blockDim.x; base < total;
       base += (long long)gridDim.x * blockDim.x) {
    const long long i = base + threadIdx.x;
    const double value = i < total ? chart[i] : -INFINITY;
    const bool finite = value > -INFINITY;
    const unsigned votes = __ballot_sync(0xffffffffu, finite);
    unsigned long long first = 0;
    if (lane == 0 && votes)
      first = atomicAdd(count, static_cast<unsigned long long>(__popc(votes)));
    first = __shfl_sync(0xffffffffu, first, 0);
    if (finite) {
      const unsigned long long slot = first + __popc(votes & ((1u << lane) - 1));
      index[slot] = i;
      score[slot] = value;
    }
  }
}

// The fine chart's ROOT score over each sentence (device_trees: the outcomes' log-scores).
__global__ void RootScores(const double* chart, int states, const int* length,
                           const long long* cell_offset, int sentences, double* root) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= sentences) return;
  const int n = length[b];
  root[b] = chart[(cell_offset[b] + ChartCellIndex(n, 0, n)) * states + kRootState];
}

// Host side ---------------------------------------------------------------------------------------

// Dynamic shared memory: kernel 1's two presence masks, and with *split_bits (pruning kernels 2,
// when they fit in the 48 KB a launch gets without opt-in) two more per split point; kernel 2's
// outside scores and four masks.
size_t InsideShared(int states, int span, int kernels, bool* split_bits) {
  const size_t words = (states + 31) / 32;
  const size_t cells = 2 * size_t(std::max(span - 1, 0)) * sizeof(const double*);
  const size_t with_splits = 2 * words * size_t(span) * sizeof(unsigned);  // 2 + 2 (span - 1)
  *split_bits = kernels == 2 && span > 1 && with_splits <= 40 * 1024;
  // (Then the list of the block's allowed states: ListStates.)
  return cells + (*split_bits ? with_splits : 2 * words * sizeof(unsigned)) +
         size_t(states) * sizeof(int);
}
size_t OutsideShared(int states) { return OutsideScoresBytes(states); }
// The most dynamic shared bytes kernel 2 takes with per-cell masks (split_bits: two masks per
// parent cell, longest - span of them at most), above OutsideShared; `limit` (0 or
// kOutsideSplitBytes) is what Init could opt in to.
constexpr size_t kOutsideSplitBytes = 48 * 1024;
// What a launch's dynamic shared memory may take without opting in: 48 KB less the kernels' static
// shared memory (UnaryLayer's list, a few counters), which shares that limit.
constexpr size_t kDefaultDynamicShared = 46 * 1024;
constexpr size_t kSplitMaskRulesPerState = 100;  // pruning kernels 2: the levels that use them
// Pruning kernels 4: the pair kernels run at pre-parse levels of at least this many states per
// symbol on average; the others run kernels 2 (bench/RESULTS.md, issue 36).
constexpr int kPairKernelMinSubstates = 4;

// Target cells a pair-kernel group at a level (DevicePrunedViterbiOptions::pair_cells' default):
// 16 at a level tiled by symbols with fewer than 6 substates a symbol, else 8. A group's fixed
// work (its partners, barriers) outweighs small tiles' rules, so more cells share it there; at
// finer levels the larger S arrays leave fewer blocks an SM (bench/RESULTS-LOG.md).
int PairCellsOf(const PruningLevel& level) {
  const GrammarView& g = level.grammar;
  return !level.pair_groups && g.num_states < 6 * g.num_symbols ? 16 : 8;
}
// Kernel 2's per-cell pointers (two per parent cell, longest - span parent cells at most) count
// against `limit` too.
size_t OutsideShared(int states, int span, int longest, size_t limit, bool* split_bits) {
  const size_t with_splits =
      2 * size_t((states + 31) / 32) * size_t(longest - span) * sizeof(unsigned);
  const size_t cells = 2 * size_t(longest - span) * sizeof(const double*);
  *split_bits = span < longest && with_splits + cells <= limit;
  // (Then the list of the block's states with an inside score: ListStates.)
  return OutsideShared(states) + cells + (*split_bits ? with_splits : 0) +
         size_t(states) * sizeof(int);
}

// One level's arrays, uploaded.
struct DeviceLevel {
  int num_states = 0;
  double threshold = 0;
  DeviceArray<int> parent_begin, left, right;
  DeviceArray<double> log_prob;
  DeviceArray<int> by_left_begin, by_left_parent, by_left_right;
  DeviceArray<double> by_left_log_prob;
  DeviceArray<int> by_right_begin, by_right_parent, by_right_left;
  DeviceArray<double> by_right_log_prob;
  DeviceArray<int> unary_begin, unary_child;
  DeviceArray<double> unary_log_prob;
  DeviceArray<int> unary_by_child_begin, unary_by_child_parent;
  DeviceArray<double> unary_by_child_log_prob;
  DeviceArray<int> to_coarser;
  DeviceArray<int> inside_order, outside_order;  // LevelView's
  // Pruning kernels 4: the rules tiled by child symbol (or state group) pairs for the inside pass
  // and both outside directions (log-probabilities), their work-list views, each state's symbol
  // or group (PruningLevel::pair_groups) and how many there are.
  std::array<io::PairLayout, 3> pairs;
  std::array<io::LiveLayout, 3> live;
  DeviceArray<int> pair_group;
  int num_pair_groups = 0;
  bool pair_kernels = false;  // the layouts above are there
  int pair_cells = 8;         // target cells a pair-kernel group (PairCellsOf)
  // device_trees (fine level): each state's symbol, and per symbol 1 when phrasal.
  DeviceArray<int> state_symbol;
  DeviceArray<unsigned char> phrasal;

  LevelView View() const {
    return {num_states,
            parent_begin.get(),
            left.get(),
            right.get(),
            log_prob.get(),
            by_left_begin.get(),
            by_left_parent.get(),
            by_left_right.get(),
            by_left_log_prob.get(),
            by_right_begin.get(),
            by_right_parent.get(),
            by_right_left.get(),
            by_right_log_prob.get(),
            unary_begin.get(),
            unary_child.get(),
            unary_log_prob.get(),
            unary_by_child_begin.get(),
            unary_by_child_parent.get(),
            unary_by_child_log_prob.get(),
            to_coarser.get(),
            threshold,
            inside_order.get(),
            outside_order.get()};
  }
};

template <typename T>
std::vector<T> Copy(const T* data, int64_t count) {
  return count > 0 ? std::vector<T>(data, data + count) : std::vector<T>();
}

// Rules regrouped by `key` (stable: within a key, the parent order), with begin offsets.
void GroupBy(const std::vector<int>& key, int states, std::vector<int>* begin,
             std::vector<int>* order) {
  begin->assign(states + 1, 0);
  for (int k : key) ++(*begin)[k + 1];
  std::partial_sum(begin->begin(), begin->end(), begin->begin());
  order->resize(key.size());
  std::vector<int> next(begin->begin(), begin->end() - 1);
  for (size_t r = 0; r < key.size(); ++r) (*order)[next[key[r]]++] = static_cast<int>(r);
}

template <typename T>
std::vector<T> Gather(const std::vector<T>& values, const std::vector<int>& order) {
  std::vector<T> out(order.size());
  for (size_t i = 0; i < order.size(); ++i) out[i] = values[order[i]];
  return out;
}

// A level's rules by parent, its unaries and its map to the previous level; with `outside` (a
// pre-parse level: the fine grammar runs no outside pass) also the rules by either child and the
// unaries by child that the outside kernels read.
bool UploadLevel(const PruningLevel& level, bool outside, DeviceLevel* d) {
  const GrammarView& a = level.grammar;
  const int states = a.num_states;
  d->num_states = states;
  d->threshold = level.threshold;
  const auto left = Copy(a.binary_left, a.num_binary);
  const auto right = Copy(a.binary_right, a.num_binary);
  const auto log_prob = Copy(a.binary_log_prob, a.num_binary);
  std::vector<int> begin, order;
  bool ok = d->parent_begin.Upload(Copy(a.binary_parent_begin, states + 1)) &&
            d->left.Upload(left) && d->right.Upload(right) && d->log_prob.Upload(log_prob);
  const auto unary_begin = Copy(a.unary_parent_begin, states + 1);
  const auto unary_child = Copy(a.unary_child, a.num_unary);
  const auto unary_log_prob = Copy(a.unary_log_prob, a.num_unary);
  ok = ok && d->unary_begin.Upload(unary_begin) && d->unary_child.Upload(unary_child) &&
       d->unary_log_prob.Upload(unary_log_prob);
  if (level.to_coarser) ok = ok && d->to_coarser.Upload(Copy(level.to_coarser, states));
  const auto& parent_begin = a.binary_parent_begin;
  // The states by their binary rules (as parent; as either child), most first.
  const auto most_first = [&](const auto& count) {
    std::vector<int> order(states);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return count(x) > count(y); });
    return order;
  };
  ok = ok && d->inside_order.Upload(
                 most_first([&](int p) { return parent_begin[p + 1] - parent_begin[p]; }));
  if (!outside) return ok;
  const auto parent = Copy(a.binary_parent, a.num_binary);
  GroupBy(left, states, &begin, &order);
  ok = ok && d->by_left_begin.Upload(begin) && d->by_left_parent.Upload(Gather(parent, order)) &&
       d->by_left_right.Upload(Gather(right, order)) &&
       d->by_left_log_prob.Upload(Gather(log_prob, order));
  GroupBy(right, states, &begin, &order);
  ok = ok && d->by_right_begin.Upload(begin) && d->by_right_parent.Upload(Gather(parent, order)) &&
       d->by_right_left.Upload(Gather(left, order)) &&
       d->by_right_log_prob.Upload(Gather(log_prob, order));
  std::vector<int> unary_parent(a.num_unary);
  for (int p = 0; p < states; ++p) {
    for (int u = unary_begin[p]; u < unary_begin[p + 1]; ++u) unary_parent[u] = p;
  }
  GroupBy(unary_child, states, &begin, &order);
  ok = ok && d->unary_by_child_begin.Upload(begin) &&
       d->unary_by_child_parent.Upload(Gather(unary_parent, order)) &&
       d->unary_by_child_log_prob.Upload(Gather(unary_log_prob, order));
  std::vector<int> as_child(states, 0);
  for (int r = 0; r < a.num_binary; ++r) ++as_child[left[r]], ++as_child[right[r]];
  ok = ok && d->outside_order.Upload(most_first([&](int x) { return as_child[x]; }));
  return ok;
}

// Pruning kernels 4's layouts of a level (needs its symbols): the inside pass's and, for a
// pre-parse level (`outside`), both outside directions'; the fine grammar runs the inside only.
bool UploadPairLayouts(const PruningLevel& level, bool outside, double sparse_below,
                       DeviceLevel* d) {
  const GrammarView view =
      level.pair_groups ? level.pair_groups->AsSymbols(level.grammar) : level.grammar;
  const PairSumPass passes[3] = {PairSumPass::kInside, PairSumPass::kOutLeft,
                                 PairSumPass::kOutRight};
  const int count = outside ? 3 : 1;
  d->num_pair_groups = view.num_symbols;
  bool ok = d->pair_group.Upload(Copy(view.state_symbol, view.num_states));
  // The layouts side by side (each sorts every rule of the level), but the inside's if given.
  std::array<PairSumLayout, 3> layouts;
  ForEachOnHostThreads(count, size_t(count) * kValuesPerThread, [&](int k) {
    if (k > 0 || !level.inside_pairs)
      layouts[k] =
          BuildPairSumLayout(view, passes[k], PairWeights::kLogProbabilities, sparse_below);
  });
  for (int k = 0; k < count && ok; ++k) {
    const PairSumLayout& layout = k == 0 && level.inside_pairs ? *level.inside_pairs : layouts[k];
    ok = io::UploadPairLayout(layout, &d->pairs[k]) &&
         io::UploadLiveLayout(layout, view.state_symbol, view.num_symbols, &d->live[k]);
  }
  return ok;
}

// Adds the host milliseconds since the last switch to *total (when not null); Switch starts the
// next interval.
class HostClock {
 public:
  explicit HostClock(double* total) : total_(total), begun_(std::chrono::steady_clock::now()) {}
  ~HostClock() { Switch(nullptr); }
  void Switch(double* next) {
    const auto now = std::chrono::steady_clock::now();
    if (total_) *total_ += std::chrono::duration<double, std::milli>(now - begun_).count();
    total_ = next;
    begun_ = now;
  }

 private:
  double* total_;
  std::chrono::steady_clock::time_point begun_;
};

class DevicePrunedViterbiImpl : public DevicePrunedViterbi {
 public:
  explicit DevicePrunedViterbiImpl(const DevicePrunedViterbiOptions& options) : options_(options) {}
  ~DevicePrunedViterbiImpl() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    if (mask_ready_) cudaEventDestroy(mask_ready_);
    if (counters_) cudaFree(counters_);
  }

  bool Init(const std::vector<PruningLevel>& levels, std::string* error) {
    if (levels.empty()) {
      *error = "no grammar";
      return false;
    }
    if (!stream_.Create(error)) return false;
    if (options_.fine_mask_only &&
        cudaEventCreateWithFlags(&mask_ready_, cudaEventDisableTiming) != cudaSuccess) {
      *error = "cudaEventCreate failed";
      return false;
    }
    const int count = static_cast<int>(levels.size());
    for (int k = 0; k < count; ++k) {
      levels_.push_back(std::make_unique<DeviceLevel>());
      if (k > 0 && !levels[k].to_coarser) {
        *error = "level " + std::to_string(k) + " has no map to the previous level";
        return false;
      }
    }
    // Which levels run the pair kernels (the fine grammar's pass too, when it is parsed here).
    std::vector<char> mask_only(count), pairs(count);
    for (int k = 0; k < count; ++k) {
      mask_only[k] = options_.fine_mask_only && k + 1 == count;
      pairs[k] = !mask_only[k] && LevelRunsPairKernels(levels[k].grammar, options_.pruning_kernels);
    }
    // The levels' rule layouts are built and uploaded side by side (host sorts of every rule):
    // each level's rules (task 2j) beside its pair layouts (task 2j + 1), the fine level's first
    // (j = 0; with en_sm6s they are most of the load).
    std::vector<char> uploaded(2 * count, 0);
    ForEachOnHostThreads(2 * count, size_t(2 * count) * kValuesPerThread, [&](int task) {
      const int k = count - 1 - task / 2;
      DeviceLevel& d = *levels_[k];
      if (task % 2) {
        uploaded[task] =
            !pairs[k] || UploadPairLayouts(levels[k], k + 1 < count, options_.sparse_below, &d);
      } else if (mask_only[k]) {
        // The fine grammar is not parsed here: only its map to the last pre-parse level.
        d.num_states = levels[k].grammar.num_states;
        uploaded[task] =
            !levels[k].to_coarser ||
            d.to_coarser.Upload(Copy(levels[k].to_coarser, levels[k].grammar.num_states));
      } else {
        uploaded[task] = UploadLevel(levels[k], k + 1 < count, &d);
      }
    });
    if (std::find(uploaded.begin(), uploaded.end(), 0) != uploaded.end()) {
      *error = "the grammars do not fit in device memory";
      return false;
    }
    for (int k = 0; k < count; ++k) {
      if (pairs[k]) {
        max_pair_groups_ = std::max(max_pair_groups_, levels_[k]->num_pair_groups);
        max_live_pairs_ = std::max(max_live_pairs_, io::MaxLivePairs(levels_[k]->live));
        max_pair_tiles_ = std::max(max_pair_tiles_, io::MaxTiles(levels_[k]->pairs));
        levels_[k]->pair_kernels = true;
        levels_[k]->pair_cells = options_.pair_cells > 0 ? options_.pair_cells
                                                          : PairCellsOf(levels[k]);
        pair_levels_ = true;
      }
      if (!mask_only[k]) max_states_ = std::max(max_states_, levels[k].grammar.num_states);
      if (k + 1 < count) max_pre_states_ = std::max(max_pre_states_, levels[k].grammar.num_states);
    }
    trees_ = options_.device_trees && !options_.fine_mask_only;
    if (trees_) {
      // Loaded now: its first launch comes behind a whole batch's kernels.
      viterbi::PrepareExtractTrees();
      cudaFuncAttributes attributes;
      cudaFuncGetAttributes(&attributes, RootScores);
      // The tree search reads the fine grammar's rules by parent (uploaded), its state symbols
      // and phrasal flags.
      const GrammarView& fine = levels.back().grammar;
      DeviceLevel& d = *levels_.back();
      if (!fine.symbol_is_phrasal || !fine.state_symbol) {
        *error = "reading trees on the device needs the grammar's symbols";
        return false;
      }
      if (!d.state_symbol.Upload(Copy(fine.state_symbol, fine.num_states)) ||
          !d.phrasal.Upload(Copy(fine.symbol_is_phrasal, fine.num_symbols))) {
        *error = "the grammars do not fit in device memory";
        return false;
      }
    }
    spread_ = options_.pruning_kernels >= 5;
    fine_states_ = levels.back().grammar.num_states;
    for (const PruningLevel& level : levels) total_states_ += level.grammar.num_states;
    // Fine-mask mode: no fine lexical rows, no fine chart; the allowed array holds fine states.
    if (options_.fine_mask_only) total_states_ -= fine_states_;
    allowed_states_ = std::max(max_states_, fine_states_);
    const size_t shared = OutsideShared(max_pre_states_);
    int device = 0, max_optin = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&max_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    max_optin_ = max_optin;
    cudaDeviceGetAttribute(&num_sms_, cudaDevAttrMultiProcessorCount, device);
    // Pruning kernels 2: room for the per-cell masks too, where the device has it.
    std::string no_room;
    outside_split_limit_ =
        options_.pruning_kernels >= 2 && max_pre_states_ > 0 &&
                AllowDynamicShared(OutsideSpan<false>, shared + kOutsideSplitBytes, max_optin,
                                   "pruning outside", &no_room)
            ? kOutsideSplitBytes
            : 0;
    if (max_pre_states_ > 0 &&
        !AllowDynamicShared(OutsideSpan<false>, shared, max_optin, "pruning outside", error)) {
      return false;
    }
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    budget_ = options_.max_batch_bytes
                  ? options_.max_batch_bytes
                  : static_cast<size_t>(options_.free_memory_share * double(free_bytes));
    if (cudaMalloc(&counters_, (2 * levels_.size() + 1) * sizeof(unsigned long long)) !=
        cudaSuccess) {
      cudaGetLastError();
      *error = "cannot allocate device counters";
      return false;
    }
    return true;
  }
  size_t BytesForSentence(int32_t length) const override {
    const size_t cells = size_t(length) * (length + 1) / 2;
    // post and pre (doubles), allowed and survivors (bytes), the fine chart's compacted indices,
    // out_pre (pre-parse levels), the cell list; lexical rows.
    // Fine-mask mode: no fine chart (max_states_ counts the pre-parse levels only), no indices.
    const size_t fine_index =
        options_.fine_mask_only || trees_ ? 0 : size_t(fine_states_) * sizeof(long long);
    // device_trees: the tree's node slots and a few numbers.
    const size_t tree_bytes =
        trees_ ? size_t(viterbi::TreeNodeSlots(length)) * sizeof(int4) + 32 : 0;
    // Pruning kernels 4: the outside scores above the unary layer, two presence arrays, the cell
    // list of the pair kernels and their work lists.
    const size_t pair_kernels =
        pair_levels_ ? cells * (2 * size_t(max_pair_groups_) + sizeof(io::CellItem)) +
                           size_t(length) * max_live_pairs_ * sizeof(int)
                     : 0;
    // Pruning kernels 4 and 5: the binary outside scores of a pre-parse level (out_post_).
    const size_t binary_out = UsesOutPost() ? cells * size_t(max_pre_states_) * sizeof(double) : 0;
    return cells * (size_t(max_states_) * (2 * sizeof(double) + 1) + size_t(allowed_states_) +
                    fine_index + size_t(max_pre_states_) * sizeof(double) + sizeof(int2)) +
           size_t(length) * total_states_ * sizeof(double) + pair_kernels + binary_out +
           tree_bytes + 64;
  }
  size_t BatchBudget() const override { return budget_; }
  const uint8_t* FineMask() const override {
    return options_.fine_mask_only ? allowed_.get() : nullptr;
  }
  const void* FineMaskReady() const override { return mask_ready_; }

  void SetProfiling(bool on) override {
    profiling_ = on;
    profile_ms_.assign(2 * levels_.size() + 1, 0.0);
    host_ms_.fill(0.0);
    profile_batches_ = 0;
  }
  std::string ProfileReport() const override {
    std::ostringstream out;
    out << profile_batches_ << " batches, device ms:";
    for (size_t k = 0; k < levels_.size(); ++k) {
      out << " L" << k << " inside " << profile_ms_[2 * k];
      if (k + 1 < levels_.size()) out << " outside " << profile_ms_[2 * k + 1];
      out << ";";
    }
    out << " copy back " << profile_ms_.back();
    out << "; host ms: cell lists " << host_ms_[0] << ", device memory " << host_ms_[1]
        << ", lexical rows " << host_ms_[2] << ", waiting for the device " << host_ms_[3];
    return out.str();
  }

  PrunedBatchResult ParseBatch(const std::vector<PrunedSentenceRef>& batch,
                               PrunedBatchCharts* charts, std::string* error,
                               const std::function<void(size_t)>& before_level) override {
    // A batch that failed part way may have left work queued (the lexical rows' copy from the
    // pinned buffer this batch writes again): let it finish first.
    cudaStreamSynchronize(stream_.get());
    cudaGetLastError();
    HostClock clock(profiling_ ? &host_ms_[0] : nullptr);
    const int sentences = static_cast<int>(batch.size());
    const size_t num_levels = levels_.size();
    std::vector<int> lengths(sentences);
    std::vector<long long> cell_offset(sentences), word_offset(sentences);
    long long cells = 0, words = 0;
    int longest = 0;
    for (int b = 0; b < sentences; ++b) {
      const int n = batch[b].length;
      if (n < 1 || batch[b].lexical.size() != num_levels) {
        *error = "bad sentence in batch";
        return PrunedBatchResult::kFailed;
      }
      lengths[b] = n;
      cell_offset[b] = cells;
      word_offset[b] = words;
      cells += (long long)n * (n + 1) / 2;
      words += n;
      longest = std::max(longest, n);
    }
    // The cells of each span length: (sentence, start), the spans in turn, each span's sentences
    // in batch order. A span's first cell from the lengths: span s has sum over sentences of
    // length n >= s of n - s + 1 cells.
    std::vector<size_t> span_begin(longest + 2, 0);
    {
      std::vector<long long> of_length(longest + 1, 0);
      for (int b = 0; b < sentences; ++b) ++of_length[lengths[b]];
      std::vector<long long> span_cells(longest + 1, 0);
      long long at_least = 0, their_words = 0;  // sentences of length >= s, their lengths summed
      for (int span = longest; span >= 1; --span) {
        at_least += of_length[span];
        their_words += of_length[span] * span;
        span_cells[span] = their_words - (span - 1) * at_least;
      }
      for (int span = 1; span <= longest; ++span)
        span_begin[span + 1] = span_begin[span] + size_t(span_cells[span]);
    }
    // Written span by span on the host threads (hundreds of thousands of cells: the first batch's
    // arrays are fresh memory, faulted in by the threads that write them). Pruning kernels 4: the
    // same cells as the sum-product kernels' items too.
    int2* items = host_items_.Get(cells);
    io::CellItem* cell_items = pair_levels_ ? host_cell_items_.Get(cells) : nullptr;
    ForEachOnHostThreads(longest, size_t(cells) * 4, [&](int j) {
      const int span = j + 1;
      size_t at = span_begin[span];
      for (int b = 0; b < sentences; ++b) {
        const int first_cell = static_cast<int>(cell_offset[b]);
        const int first_word = static_cast<int>(word_offset[b]);
        for (int start = 0; start + span <= lengths[b]; ++start, ++at) {
          items[at] = {b, start};
          if (cell_items) cell_items[at] = {first_cell, lengths[b], start, first_word, b, 0};
        }
      }
    });
    size_t widest = 0;  // the most cells of one span length
    for (int span = 1; span <= longest; ++span)
      widest = std::max(widest, span_begin[span + 1] - span_begin[span]);
    clock.Switch(profiling_ ? &host_ms_[1] : nullptr);
    const size_t chart_entries = std::max<size_t>(1, size_t(cells) * max_states_);
    const bool mask_only = options_.fine_mask_only;
    if (!post_.Reserve(chart_entries) || !pre_.Reserve(chart_entries) ||
        !out_pre_.Reserve(std::max<size_t>(1, size_t(cells) * max_pre_states_)) ||
        !allowed_.Reserve(size_t(cells) * allowed_states_) || !survivors_.Reserve(chart_entries) ||
        !lengths_.Upload(lengths, stream_.get()) ||
        !cell_offset_.Upload(cell_offset, stream_.get()) ||
        !word_offset_.Upload(word_offset, stream_.get()) ||
        !items_.Upload(items, size_t(cells), stream_.get()) ||
        !fine_index_.Reserve(mask_only || trees_ ? 1 : size_t(cells) * fine_states_)) {
      return PrunedBatchResult::kOutOfMemory;
    }
    if (UsesOutPost() && !out_post_.Reserve(std::max<size_t>(1, size_t(cells) * max_pre_states_))) {
      return PrunedBatchResult::kOutOfMemory;
    }
    if (trees_ && !ReserveTreeBuffers(lengths)) return PrunedBatchResult::kOutOfMemory;
    if (pair_levels_ &&
        (cells >= std::numeric_limits<int>::max() / 2 ||
         !cell_items_.Upload(cell_items, size_t(cells), stream_.get()) ||
         !present_post_.Reserve(size_t(cells) * max_pair_groups_) ||
         !present_out_.Reserve(size_t(cells) * max_pair_groups_) ||
         !live_buffers_.Reserve(max_live_pairs_, max_pair_tiles_, static_cast<int>(widest)))) {
      return PrunedBatchResult::kOutOfMemory;
    }
    const BatchView view{lengths_.get(), cell_offset_.get(), word_offset_.get()};
    cudaMemsetAsync(counters_, 0, (2 * num_levels + 1) * sizeof(unsigned long long), stream_.get());
    if (profiling_) events_used_ = 0;
    // Every level's lexical rows (level by level, each sentence's words in order), each level's
    // gathered on the host threads and uploaded through the pinned ring before its kernels
    // (upload_rows below).
    std::vector<size_t> lexical_offset(num_levels + 1, 0);
    for (size_t k = 0; k < num_levels; ++k) {
      const bool skipped = mask_only && k + 1 == num_levels;  // the fine rows are not read
      lexical_offset[k + 1] =
          lexical_offset[k] + (skipped ? 0 : size_t(words) * levels_[k]->num_states);
    }
    if (!lexical_.Reserve(lexical_offset.back())) return PrunedBatchResult::kOutOfMemory;
    // Level k's rows: asked of the caller (before_level), gathered on the host threads and copied
    // through the ring (its own stream) just before the level's kernels, so that the host's part
    // of level k + 1 runs, and its copies, while the device computes level k. (Pinned buffers of
    // a level's size cost their allocation at the first batch and their release at the end:
    // bench/RESULTS-LOG.md.)
    std::vector<size_t> row_begin(sentences + 1, 0);
    const auto upload_rows = [&](size_t k) {
      clock.Switch(nullptr);  // the caller's time is its own
      if (before_level) before_level(k);
      clock.Switch(profiling_ ? &host_ms_[2] : nullptr);
      const size_t states = levels_[k]->num_states;
      for (int b = 0; b < sentences; ++b) row_begin[b] = size_t(word_offset[b]) * states;
      row_begin[sentences] = size_t(words) * states;
      const bool queued = row_upload_.UploadRows(
          lexical_.get() + lexical_offset[k], lexical_offset[k + 1] - lexical_offset[k], row_begin,
          [&](int b) { return batch[b].lexical[k]; }, stream_.get());
      clock.Switch(nullptr);  // the launches' time is the device's
      return queued ? PrunedBatchResult::kOk : Fail("lexical upload", error);
    };
    for (size_t k = 0; k < num_levels; ++k) {
      const DeviceLevel& level = *levels_[k];
      const int states = level.num_states;
      const bool fine = k + 1 == num_levels;
      if (!(fine && mask_only)) {
        const PrunedBatchResult rows = upload_rows(k);
        if (rows != PrunedBatchResult::kOk) return rows;
      }
      if (k > 0) {
        const int blocks =
            static_cast<int>(std::min<long long>(4096, (cells * states + kThreads - 1) / kThreads));
        Refine<<<blocks, kThreads, 0, stream_.get()>>>(survivors_.get(), levels_[k - 1]->num_states,
                                                       level.to_coarser.get(), states, cells,
                                                       allowed_.get(), counters_ + 2 * k);
      }
      if (fine && mask_only) {
        // The fine grammar's allowed items stay on the device (FineMask); with no pre-parse
        // level every item is allowed.
        if (k == 0) cudaMemsetAsync(allowed_.get(), 1, size_t(cells) * states, stream_.get());
        break;
      }
      const uint8_t* allowed = k > 0 ? allowed_.get() : nullptr;
      // Pruning kernels 2 use the per-cell masks only at levels of many rules a state: en_sm6s's
      // level 0 (40 rules a state) ran 25% slower with them, level 1 (52) the same, levels 2-5
      // (173-1,830) 6-20% faster (bench/RESULTS.md). Kernels 3 use them at every level.
      const bool many_rules = level.left.size() >= kSplitMaskRulesPerState * size_t(states);
      const bool family4 = options_.pruning_kernels >= 4;
      const int kernels = options_.pruning_kernels == 3 ||
                                  ((options_.pruning_kernels == 2 || family4) && many_rules)
                              ? 2
                              : 1;
      // Kernels 4 add as the CPU pruner then does at every level, also at the levels that run
      // kernels 1 or 2 (few substates a symbol), and so does the fine grammar's pass (the CPU's
      // pruned fine pass adds in its pruner's order).
      const bool pair_first = family4;
      // Pruning kernels 4 at this level: the charts as the pair kernels read them.
      const bool pairs = level.pair_kernels;
      // Pruning kernels 6: kernels 1 and 2 with the dense binary phase at the first level (no mask:
      // at gum_all_sm6's level 2, masked by level 0, it took 304 + 213 ms against 143 + 172).
      const bool dense = options_.pruning_kernels >= 6 && !pairs && states <= kThreads && k == 0;
      const int dense_chunk = !dense                     ? 0
                              : options_.dense_chunk > 0 ? options_.dense_chunk
                                                         : DenseChunk(states);
      io::Charts c{};
      c.in = post_.get();
      c.out = out_pre_.get();
      c.present_in = present_post_.get();
      c.present_out = present_out_.get();
      c.num_states = states;
      c.num_symbols = level.num_pair_groups;
      c.allowed = allowed;
      if (pairs)
        cudaMemsetAsync(present_post_.get(), 0, size_t(cells) * level.num_pair_groups,
                        stream_.get());
      Mark();
      for (int span = 1; span <= longest; ++span) {
        const int count = static_cast<int>(span_begin[span + 1] - span_begin[span]);
        bool split_bits = false;
        size_t shared = InsideShared(states, span, kernels, &split_bits);
        if (pairs && span > 1) {
          FillNegInf<<<count, kThreads, 0, stream_.get()>>>(
              pre_.get(), cell_items_.get() + span_begin[span], span, states);
          c.acc = pre_.get();
          if (!LaunchPairs<io::kInside>(c, level, 0, span_begin[span], count, span, span - 1,
                                        error)) {
            return PrunedBatchResult::kFailed;
          }
          split_bits = false;
          shared = 0;
        }
        // Very long sentences: the per-split pointers past the 48 KB a launch gets by default.
        if (shared > kDefaultDynamicShared &&
            !AllowDynamicShared(InsideSpan<false>, shared, max_optin_, "pruning inside", error)) {
          return PrunedBatchResult::kFailed;
        }
        const int2* span_items = items_.get() + span_begin[span];
        const double* rows = lexical_.get() + lexical_offset[k];
        const int chunks = pairs || span == 1 ? 1 : BlocksPerCell(count, states);
        // Pruning kernels 5 with chunks > 1: the binary maxima over `chunks` blocks a cell, then
        // the unary layer in a launch of its own.
        if (dense && span > 1) {
          InsideSpan<true><<<count, kThreads, DenseShared(states, dense_chunk), stream_.get()>>>(
              level.View(), view, span_items, span, allowed, rows, post_.get(), pre_.get(), false,
              false, pair_first, false, dense_chunk);
        } else {
          // After the pair kernels (unary_only), a span of few cells spreads each cell's states
          // over blocks: one block a cell ran each state's unary rules in turn, a long chain for
          // one thread (most of the fine pass's longer spans).
          const int blocks = pairs && span > 1 ? UnaryBlocksPerCell(count, states) : chunks;
          InsideSpan<false><<<dim3(count, blocks), kThreads, shared, stream_.get()>>>(
              level.View(), view, span_items, span, allowed, rows, post_.get(), pre_.get(),
              split_bits, pairs && span > 1, pair_first, chunks > 1, 0);
        }
        if (chunks > 1 && !dense) {
          InsideSpan<false><<<count, kThreads, 0, stream_.get()>>>(
              level.View(), view, span_items, span, allowed, rows, post_.get(), pre_.get(), false,
              true, pair_first, false, 0);
        }
        if (pairs) {
          PresenceKernel<<<count, kThreads, 0, stream_.get()>>>(
              post_.get(), cell_items_.get() + span_begin[span], span, states,
              level.pair_group.get(), level.num_pair_groups, present_post_.get());
        }
      }
      Mark();
      if (fine) break;
      if (pairs)
        cudaMemsetAsync(present_out_.get(), 0, size_t(cells) * level.num_pair_groups,
                        stream_.get());
      for (int span = longest; span >= 1; --span) {
        const int count = static_cast<int>(span_begin[span + 1] - span_begin[span]);
        bool split_bits = false;
        size_t shared = OutsideShared(
            states, span, longest, kernels == 2 && !pairs ? outside_split_limit_ : 0, &split_bits);
        if (pairs) {
          FillNegInf<<<count, kThreads, 0, stream_.get()>>>(
              out_post_.get(), cell_items_.get() + span_begin[span], span, states);
          c.acc = out_post_.get();
          if (span < longest && (!LaunchPairs<io::kOutLeft>(c, level, 1, span_begin[span], count,
                                                            span, longest - span, error) ||
                                 !LaunchPairs<io::kOutRight>(c, level, 2, span_begin[span], count,
                                                             span, longest - span, error))) {
            return PrunedBatchResult::kFailed;
          }
        }
        if (shared > kDefaultDynamicShared &&
            !AllowDynamicShared(OutsideSpan<false>, shared, max_optin_, "pruning outside", error)) {
          return PrunedBatchResult::kFailed;
        }
        const int2* span_items = items_.get() + span_begin[span];
        const int chunks = pairs ? 1 : BlocksPerCell(count, states);
        // Pruning kernels 5 with chunks > 1: the binary outside maxima over `chunks` blocks a
        // cell into out_post_, then the rest of each cell's work from there.
        if (dense) {
          OutsideSpan<true>
              <<<count, kThreads, OutsideShared(states) + DenseShared(states, dense_chunk),
                 stream_.get()>>>(level.View(), view, span_items, span, post_.get(), pre_.get(),
                                  out_pre_.get(), survivors_.get(), counters_ + 2 * k + 1, false,
                                  nullptr, pair_first, nullptr, dense_chunk);
        } else {
          OutsideSpan<false><<<dim3(count, chunks), kThreads, shared, stream_.get()>>>(
              level.View(), view, span_items, span, post_.get(), pre_.get(), out_pre_.get(),
              survivors_.get(), counters_ + 2 * k + 1, split_bits,
              pairs ? out_post_.get() : nullptr, pair_first, chunks > 1 ? out_post_.get() : nullptr,
              0);
        }
        if (chunks > 1 && !dense) {
          OutsideSpan<false><<<count, kThreads, OutsideShared(states), stream_.get()>>>(
              level.View(), view, span_items, span, post_.get(), pre_.get(), out_pre_.get(),
              survivors_.get(), counters_ + 2 * k + 1, false, out_post_.get(), pair_first, nullptr,
              0);
        }
        if (pairs) {
          PresenceKernel<<<count, kThreads, 0, stream_.get()>>>(
              out_pre_.get(), cell_items_.get() + span_begin[span], span, states,
              level.pair_group.get(), level.num_pair_groups, present_out_.get());
        }
      }
      Mark();
      if (cudaGetLastError() != cudaSuccess) return Fail("a pruning kernel launch", error);
      if (options_.keep_level_survivors) {
        if (host_survivors_.size() < num_levels) host_survivors_.resize(num_levels);
        host_survivors_[k].resize(size_t(cells) * states);
        if (!CopyBack(host_survivors_[k].data(), survivors_.get(), host_survivors_[k].size())) {
          return Fail("survivor copy", error);
        }
      }
    }
    if (cudaGetLastError() != cudaSuccess) return Fail("a pruning kernel launch", error);
    if (mask_ready_ && cudaEventRecord(mask_ready_, stream_.get()) != cudaSuccess) {
      return Fail("the fine mask's event", error);
    }
    // The fine chart's finite entries: scores into pre_ (free now), indices into fine_index_.
    const long long total = mask_only || trees_ ? 0 : cells * fine_states_;
    // The tree search or the compaction is queued before the caller's work, so that the device
    // need not wait for it; the copy back's profile includes them (and any wait for the caller's
    // work). Otherwise it starts after the caller's work (which may have queued and waited for
    // device work of its own: the pruned max-rule passes).
    const bool kernels_before_copy = trees_ || total > 0;
    if (kernels_before_copy) Mark();
    if (trees_ && !LaunchTreeSearch(lengths, cell_offset, error)) {
      return PrunedBatchResult::kOutOfMemory;
    }
    if (total > 0)
      CompactFinite<<<static_cast<int>(
                          std::min<long long>(8192, (total + kThreads - 1) / kThreads)),
                      kThreads, 0, stream_.get()>>>(post_.get(), total, counters_ + 2 * num_levels,
                                                    fine_index_.get(), pre_.get());
    clock.Switch(nullptr);
    if (before_level) before_level(num_levels);  // the caller's host work beside the device's
    clock.Switch(profiling_ ? &host_ms_[3] : nullptr);
    if (!kernels_before_copy) Mark();
    std::vector<unsigned long long> counters(2 * num_levels + 1);
    if (!CopyBack(counters.data(), counters_, counters.size() * sizeof(unsigned long long))) {
      return Fail("counter copy", error);
    }
    const size_t finite = counters.back();
    if (!host_index_.Reserve(finite) || !host_score_.Reserve(finite)) {
      return PrunedBatchResult::kOutOfMemory;
    }
    if (finite > 0 &&
        (!CopyBack(host_index_.get(), fine_index_.get(), finite * sizeof(long long)) ||
         !CopyBack(host_score_.get(), pre_.get(), finite * sizeof(double)))) {
      return Fail("chart copy back", error);
    }
    if (trees_ && !CopyTrees(lengths, charts, error)) return Fail("tree copy back", error);
    clock.Switch(nullptr);
    Mark();
    if (profiling_) CollectProfile();
    charts->fine_offset.resize(sentences);
    charts->fine_count = finite;
    charts->fine_index = host_index_.get();
    charts->fine_score = host_score_.get();
    charts->survivors.assign(options_.keep_level_survivors ? sentences : 0, {});
    for (int b = 0; b < sentences; ++b) {
      charts->fine_offset[b] = cell_offset[b] * fine_states_;
      if (!options_.keep_level_survivors) continue;
      for (size_t k = 0; k + 1 < num_levels; ++k) {
        charts->survivors[b].push_back(host_survivors_[k].data() +
                                       cell_offset[b] * levels_[k]->num_states);
      }
    }
    charts->items_before.assign(num_levels - 1, 0);
    charts->items_after.assign(num_levels - 1, 0);
    for (size_t k = 0; k + 1 < num_levels; ++k) {
      charts->items_before[k] =
          k == 0 ? cells * levels_[0]->num_states : static_cast<int64_t>(counters[2 * k]);
      charts->items_after[k] = static_cast<int64_t>(counters[2 * k + 1]);
    }
    return PrunedBatchResult::kOk;
  }

 private:
  PrunedBatchResult Fail(const char* what, std::string* error) {
    const cudaError_t err = cudaGetLastError();
    *error = std::string(what) + " failed: " + cudaGetErrorString(err);
    return err == cudaErrorMemoryAllocation ? PrunedBatchResult::kOutOfMemory
                                            : PrunedBatchResult::kFailed;
  }

  // Whether a pre-parse level writes its binary outside scores to out_post_ (pruning kernels 4's
  // pair kernels, or 5's spread kernel 2).
  bool UsesOutPost() const { return pair_levels_ || spread_; }

  // The blocks a cell of a launch of `count` cells, at most `most`: enough for kBlocksPerSm blocks
  // on every SM (the longer spans have few cells, each a long chain of work for one block: they
  // ran as one block's latency). More blocks than that cost more than they gained
  // (bench/RESULTS-LOG.md).
  int SpreadOverBlocks(int count, long long most) const {
    if (count <= 0) return 1;
    constexpr long long kBlocksPerSm = 4;
    const long long wanted = (kBlocksPerSm * num_sms_ + count - 1) / count;
    return static_cast<int>(std::clamp<long long>(wanted, 1, most));
  }

  // Pruning kernels 5: the blocks a cell of kernels 1 and 2, each taking kWarps of the level's
  // `states` in turn.
  int BlocksPerCell(int count, int states) const {
    return spread_ ? SpreadOverBlocks(count, (states + kWarps - 1) / kWarps) : 1;
  }

  // The blocks a cell of a unary_only launch: at most one state a thread.
  int UnaryBlocksPerCell(int count, int states) const {
    return SpreadOverBlocks(count, (states + kThreads - 1) / kThreads);
  }

  // A sentence's node slots: room for any tree (as cuda/viterbi's ParseTrees), or the tests'.
  int NodeSlots(int length) const {
    return options_.tree_node_slots > 0 ? options_.tree_node_slots : viterbi::TreeNodeSlots(length);
  }

  // device_trees: the tree search's buffers, reserved with the batch's others before any kernel is
  // queued (LaunchTreeSearch comes behind the batch's kernels, and the caller's work beside them
  // after it: an allocation there waited for the device).
  bool ReserveTreeBuffers(const std::vector<int>& lengths) {
    size_t slots = 0;
    for (int n : lengths) slots += size_t(NodeSlots(n));
    const size_t sentences = lengths.size();
    return tree_meta_.Reserve(3 * sentences + 1) && node_count_.Reserve(sentences) &&
           nodes_.Reserve(slots) && root_score_.Reserve(sentences);
  }

  // device_trees: the tree search over the batch's fine charts (cuda/viterbi/extract.cuh) and its
  // sentences' ROOT scores, queued on the object's stream. False when its buffers do not fit.
  bool LaunchTreeSearch(const std::vector<int>& lengths, const std::vector<long long>& cell_offset,
                        std::string* error) {
    const int sentences = static_cast<int>(lengths.size());
    std::vector<int> meta(3 * size_t(sentences) + 1, 0);  // first cell, length, node offsets
    int* offset = meta.data() + 2 * sentences;
    for (int b = 0; b < sentences; ++b) {
      meta[b] = static_cast<int>(cell_offset[b]);
      meta[sentences + b] = lengths[b];
      offset[b + 1] = offset[b] + NodeSlots(lengths[b]);
    }
    node_offset_.assign(offset, offset + sentences + 1);  // CopyTrees reads them
    if (cell_offset.back() >= std::numeric_limits<int>::max() / 2 ||
        !tree_meta_.Upload(meta, stream_.get()) || !node_count_.Reserve(sentences) ||
        !nodes_.Reserve(offset[sentences]) || !root_score_.Reserve(sentences)) {
      *error = "could not allocate the tree buffers";
      return false;
    }
    const DeviceLevel& fine = *levels_.back();
    // Slots past a tree's end are copied back too: zeroed, they read nothing uninitialized.
    cudaMemsetAsync(nodes_.get(), 0, size_t(offset[sentences]) * sizeof(int4), stream_.get());
    viterbi::ExtractArgs x{nullptr,
                           fine_states_,
                           tree_meta_.get(),
                           tree_meta_.get() + sentences,
                           tree_meta_.get() + 2 * sentences,
                           node_count_.get(),
                           nodes_.get(),
                           fine.parent_begin.get(),
                           fine.left.get(),
                           fine.right.get(),
                           fine.log_prob.get(),
                           fine.unary_begin.get(),
                           fine.unary_child.get(),
                           fine.unary_log_prob.get(),
                           fine.state_symbol.get(),
                           fine.phrasal.get(),
                           kTreeTolerance,
                           post_.get()};
    viterbi::LaunchExtractTrees(x, sentences, stream_.get());
    RootScores<<<(sentences + 127) / 128, 128, 0, stream_.get()>>>(
        post_.get(), fine_states_, lengths_.get(), cell_offset_.get(), sentences,
        root_score_.get());
    return true;
  }

  // The trees' nodes and ROOT scores into *charts (after LaunchTreeSearch).
  bool CopyTrees(const std::vector<int>& lengths, PrunedBatchCharts* charts, std::string* error) {
    const int sentences = static_cast<int>(lengths.size());
    std::vector<int> count(sentences);
    const std::vector<int>& offset = node_offset_;
    std::vector<int4> nodes(offset[sentences]);
    charts->root_score.resize(sentences);
    if (!CopyBack(count.data(), node_count_.get(), sentences * sizeof(int)) ||
        !CopyBack(nodes.data(), nodes_.get(), nodes.size() * sizeof(int4)) ||
        !CopyBack(charts->root_score.data(), root_score_.get(), sentences * sizeof(double))) {
      (void)error;
      return false;
    }
    charts->trees.assign(sentences, {});
    for (int b = 0; b < sentences; ++b) {
      DeviceTree& tree = charts->trees[b];
      if (count[b] == -1) {
        tree.status = DeviceTree::kNoParse;
      } else if (count[b] < 0) {
        tree.status = DeviceTree::kChart;  // the caller parses it on the host
      } else {
        tree.status = DeviceTree::kTree;
        tree.nodes.resize(count[b]);
        for (int k = 0; k < count[b]; ++k)
          tree.nodes[k] = viterbi::UnpackTreeNode(nodes[offset[b] + k]);
      }
    }
    return true;
  }

  // A device -> host copy after the work queued on this object's stream; true when it is done.
  bool CopyBack(void* host, const void* device, size_t bytes) {
    return cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_.get()) ==
               cudaSuccess &&
           cudaStreamSynchronize(stream_.get()) == cudaSuccess;
  }

  // Records the next profiling event (inside start, inside end, outside end per level, then the
  // copy back's start and end).
  void Mark() {
    if (!profiling_) return;
    if (events_used_ == events_.size()) {
      cudaEvent_t e;
      cudaEventCreate(&e);
      events_.push_back(e);
    }
    cudaEventRecord(events_[events_used_++], stream_.get());
  }
  void CollectProfile() {
    cudaEventSynchronize(events_[events_used_ - 1]);
    // Events: per pre-parse level 3 (start, after inside, after outside), fine 2, copy 2.
    size_t e = 0;
    float ms = 0;
    for (size_t k = 0; k < levels_.size(); ++k) {
      if (options_.fine_mask_only && k + 1 == levels_.size()) break;  // no fine pass
      cudaEventElapsedTime(&ms, events_[e], events_[e + 1]);
      profile_ms_[2 * k] += ms;
      if (k + 1 < levels_.size()) {
        cudaEventElapsedTime(&ms, events_[e + 1], events_[e + 2]);
        profile_ms_[2 * k + 1] += ms;
        e += 3;
      } else {
        e += 2;
      }
    }
    cudaEventElapsedTime(&ms, events_[e], events_[e + 1]);  // ParseBatch's last two marks
    profile_ms_.back() += ms;
    ++profile_batches_;
  }

  // Pruning kernels 4: one pair launch (mode kMode with the level's layout `pass`, the max-plus
  // kernels of pair_sum.cuh) over `count` target cells from items[first].
  template <int kMode>
  bool LaunchPairs(const io::Charts& c, const DeviceLevel& level, int pass, size_t first, int count,
                   int span, int max_partners, std::string* error) {
    return level.pair_cells == 16
               ? LaunchPairsOf<16, kMode>(c, level, pass, first, count, span, max_partners, error)
               : LaunchPairsOf<8, kMode>(c, level, pass, first, count, span, max_partners, error);
  }
  template <int kG, int kMode>
  bool LaunchPairsOf(const io::Charts& c, const DeviceLevel& level, int pass, size_t first,
                     int count, int span, int max_partners, std::string* error) {
    constexpr int kRules = 3;
    const size_t shared =
        size_t(kG + 1) * level.pairs[pass].max_bc * sizeof(double) + size_t(kG) * max_partners * 16;
    return io::LaunchPairList<kG, kMode, kRules, true>(
        c, cell_items_.get(), static_cast<int>(first), count, span, max_partners, shared,
        level.pairs[pass], level.live[pass], level.pair_group.get(), num_sms_, stream_.get(),
        &live_buffers_, error);
  }

  DevicePrunedViterbiOptions options_;
  // Every batch's work (an own stream, so that another object's passes on the same device run
  // beside it: the legacy default stream would wait for them).
  CudaStream stream_;
  // device_trees (and not fine_mask_only): the tree search's buffers.
  static constexpr double kTreeTolerance = 1e-5;  // parser/tree_extraction.h's default
  bool trees_ = false;
  // A batch's cell lists on the host (kept: the next batch reuses their memory).
  HostArray<int2> host_items_;
  HostArray<io::CellItem> host_cell_items_;
  DeviceArray<int> tree_meta_, node_count_;
  std::vector<int> node_offset_;  // the batch's node slots: sentence b's from node_offset_[b]
  DeviceArray<int4> nodes_;
  DeviceArray<double> root_score_;
  size_t outside_split_limit_ = 0;  // OutsideShared's limit for the per-cell masks
  int max_optin_ = 48 * 1024;       // the device's opt-in shared memory a block
  bool spread_ = false;             // pruning kernels 5: kernels 1 and 2 over several blocks a cell
  // Pruning kernels 4.
  bool pair_levels_ = false;  // some level runs them
  int max_pair_groups_ = 0, max_live_pairs_ = 0, max_pair_tiles_ = 0, num_sms_ = 132;
  DeviceArray<io::CellItem> cell_items_;
  DeviceArray<double> out_post_;
  DeviceArray<unsigned char> present_post_, present_out_;
  io::LiveBuffers live_buffers_;
  std::vector<std::unique_ptr<DeviceLevel>> levels_;
  int max_states_ = 0, max_pre_states_ = 0, fine_states_ = 0;
  int allowed_states_ = 0;  // the allowed array's states a cell (the fine grammar's at least)
  int total_states_ = 0;    // summed over the levels (the lexical rows of every level)
  size_t budget_ = 0;
  DeviceArray<double> post_, pre_, out_pre_, lexical_;
  // The batch's lexical rows on their way to lexical_, level by level.
  RingUpload<double> row_upload_;
  DeviceArray<uint8_t> allowed_, survivors_;
  DeviceArray<int> lengths_;
  DeviceArray<long long> cell_offset_, word_offset_;
  DeviceArray<int2> items_;
  DeviceArray<long long> fine_index_;
  PinnedArray<long long> host_index_;
  PinnedArray<double> host_score_;
  std::vector<std::vector<uint8_t>> host_survivors_;
  unsigned long long* counters_ = nullptr;
  cudaEvent_t mask_ready_ = nullptr;  // fine_mask_only: FineMaskReady
  bool profiling_ = false;
  // Profiling: host ms before the first launch (cell lists, device memory and uploads), gathering
  // and queueing the lexical rows, waiting for the device at the end.
  std::array<double, 4> host_ms_{};
  std::vector<cudaEvent_t> events_;
  size_t events_used_ = 0;
  std::vector<double> profile_ms_;
  int profile_batches_ = 0;
};

}  // namespace

// The pair kernels' tiles are substate blocks of a child symbol pair: at coarse levels (a few
// substates a symbol) they hold too little work per pair, and kernels 2 are faster.
bool LevelRunsPairKernels(const GrammarView& g, int pruning_kernels) {
  return pruning_kernels >= 4 && g.num_states >= kPairKernelMinSubstates * g.num_symbols &&
         g.state_symbol && (g.num_symbols + 31) / 32 <= io::kMaxSymbolWords;
}

std::unique_ptr<DevicePrunedViterbi> DevicePrunedViterbi::Create(
    const std::vector<PruningLevel>& levels, const DevicePrunedViterbiOptions& options,
    std::string* error) {
  if (options.pair_cells != 0 && options.pair_cells != 8 && options.pair_cells != 16) {
    *error = "pair_cells must be 0, 8 or 16, not " + std::to_string(options.pair_cells);
    return nullptr;
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    *error = "no CUDA device";
    return nullptr;
  }
  auto device = std::make_unique<DevicePrunedViterbiImpl>(options);
  if (!device->Init(levels, error)) return nullptr;
  return device;
}

}  // namespace cky::cuda
