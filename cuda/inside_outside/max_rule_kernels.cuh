// The max-rule (maxc) pass's kernels: per cell and base symbol the best binary or lexical
// max-rule score, then the unary layer (cuda/inside_outside/inside_outside.h describes the
// mapping). For cuda/inside_outside/'s .cu files (inside_outside.cu; product_max_rule.cu shares
// its candidates, block reduction and entries kernel).
#pragma once

#include <string>
#include <vector>

#include "cuda/inside_outside/charts.cuh"

namespace cky::cuda::io {
// Each .cu file that includes this gets its own copy of the kernels (internal linkage).
namespace {

// Max-rule (maxc) pass.

struct MaxRuleArrays {
  // Base binary rules, grouped by parent symbol in grammar order; per base rule: B, C, its
  // substate rules: dense (w < 0: p[a][b * sC + c] at dense[z ..]) or sparse ([z, w) in
  // mr_key/mr_w).
  const int4* base;     // {B, C, begin, end}
  const int* mr_key;    // per substate rule: (a << 16) | (b * q_stride + c)
  const double* mr_w;   // probability
  const double* dense;  // dense base rules' probabilities, [a][b][c] (0 where no rule)
  const int4* chunk;    // {parent symbol A, first base rule, end base rule, unused}
  // Base unary pairs (A, C) in grammar order, grouped by A: [pair_begin[A], pair_begin[A + 1]).
  const int* pair_begin;       // num_symbols + 1
  const int2* pair_symbols;    // {A, C}
  const int* pair_rule_begin;  // per pair: its substate rules [.., ..) in pu_*
  const int* pu_parent;        // state
  const int* pu_child;         // state
  const double* pu_w;          // probability
  const int* symbol_first_state;
  const int* symbol_num_substates;
  // Max-rule binary kernels 7, 9, 11, 13, 14: per base rule its distinct (b, c) substate pairs
  // ("entries") [entry_begin[rule], entry_begin[rule + 1]), sorted by (b, c); per entry (b << 16) |
  // c and its parent substates [entry_rule_begin[e], entry_rule_begin[e + 1]) in entry_a / entry_w.
  const int* entry_begin;
  const int* entry_bc;
  const int* entry_rule_begin;
  const int* entry_a;
  const double* entry_w;
  // Variants 13 and 14: the order in which a warp chunk's warps take its base rules (a permutation
  // of each chunk's range, most entries first); null: grammar order.
  const int* warp_order;
};

struct MaxcChart {
  double* score;  // [cell][symbol]
  int4* info;     // [cell][symbol]: split, left, right, unary child
};

// Span 1: score(T) = log sum_t outpre(T_t) P(word | T_t) / P(w). A block per cell, a warp per
// symbol.
__global__ void MaxcLexicalKernel(Charts c, MaxcChart m, MaxRuleArrays r, const CellItem* items,
                                  int item_offset, const double* lexical) {
  const CellItem it = items[item_offset + blockIdx.x];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + 1);
  const double* row = lexical + size_t(it.word + it.start) * c.num_states;
  const double* out = c.out + size_t(cell) * c.num_states;
  const double log_pw = c.log_likelihood[it.sentence];
  const double out_scale = c.out_scale[cell];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int a = warp; a < c.num_symbols; a += blockDim.x / 32) {
    const int first = __ldg(r.symbol_first_state + a), count = __ldg(r.symbol_num_substates + a);
    double mx = kNegInfD;
    for (int t = lane; t < count; t += 32)
      if (out[first + t] > 0) mx = fmax(mx, row[first + t]);
    for (int offset = 16; offset > 0; offset >>= 1)
      mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, offset));
    double sum = 0;
    if (mx > kNegInfD)
      for (int t = lane; t < count; t += 32)
        if (out[first + t] > 0) sum += out[first + t] * exp(row[first + t] - mx);
    for (int offset = 16; offset > 0; offset >>= 1)
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) {
      const bool ok = sum > 0 && log_pw > kNegInfD;
      m.score[size_t(cell) * c.num_symbols + a] =
          ok ? log(sum) + mx + out_scale - log_pw : kNegInfD;
      m.info[size_t(cell) * c.num_symbols + a] = make_int4(-1, -1, -1, -1);
    }
  }
}

struct Candidate {
  double score;
  int rule;   // base rule index
  int split;  // split point (absolute position)
};

// Does candidate x come before y: the larger score; ties to the smaller rule, then the smaller
// split (the first best in grammar order, as parser/max_rule.cpp).
__device__ __forceinline__ bool Better(const Candidate& x, const Candidate& y) {
  return x.score > y.score ||
         (x.score == y.score && x.rule >= 0 &&
          (y.rule < 0 || x.rule < y.rule || (x.rule == y.rule && x.split < y.split)));
}

// Block reduction of the threads' candidates into *out: the largest score; ties to the smaller
// rule, then the smaller split. Warp shuffles first, then the warp winners. Every thread calls it.
__device__ void StoreBlockBest(Candidate best, Candidate* out) {
  const auto better = [](const Candidate& x, const Candidate& y) { return Better(x, y); };
  for (int offset = 16; offset > 0; offset >>= 1) {
    Candidate other;
    other.score = __shfl_xor_sync(0xffffffffu, best.score, offset);
    other.rule = __shfl_xor_sync(0xffffffffu, best.rule, offset);
    other.split = __shfl_xor_sync(0xffffffffu, best.split, offset);
    if (better(other, best)) best = other;
  }
  __shared__ Candidate sh_best[kThreads / 32];
  if (threadIdx.x % 32 == 0) sh_best[threadIdx.x / 32] = best;
  __syncthreads();
  if (threadIdx.x == 0) {
    Candidate top = sh_best[0];
    for (int w = 1; w < blockDim.x / 32; ++w)
      if (better(sh_best[w], top)) top = sh_best[w];
    *out = top;
  }
}

// A max-rule binary block: a cell of the launch's span and a chunk of one parent symbol's base
// rules ({parent symbol, first base rule, end base rule}), and where its best candidate goes.
struct MaxcBlock {
  CellItem it;
  int cell;
  int4 chunk;
  Candidate* slot;
};

// The start of a max-rule binary block (the launch's cell `item`, chunk index `j`): false, with the
// block's candidate stored as none, when the parent symbol has no outpre in the cell or the
// sentence no parse (uniform over the block); else the parent's outpre values are copied to sh_out
// (the caller synchronizes before reading them). The block's chunk is chunk_list[j] (variants 9,
// 11, 13 and 14: the launch's share of the chunks), or j when chunk_list is null.
__device__ bool MaxcBlockStart(const Charts& c, const MaxRuleArrays& r, const CellItem* items,
                               int item_offset, int span, Candidate* candidates, int num_chunks,
                               const int* chunk_list, int item, int j, double* sh_out,
                               MaxcBlock* b) {
  const int chunk = chunk_list ? __ldg(chunk_list + j) : j;
  b->it = items[item_offset + item];
  b->cell = b->it.base + ChartCellIndex(b->it.n, b->it.start, b->it.start + span);
  b->chunk = __ldg(r.chunk + chunk);
  b->slot = candidates + size_t(item) * num_chunks + chunk;
  const int a_sym = b->chunk.x;
  if (!c.present_out[size_t(b->cell) * c.num_symbols + a_sym] ||
      !(c.log_likelihood[b->it.sentence] > kNegInfD)) {
    if (threadIdx.x == 0) *b->slot = Candidate{kNegInfD, -1, -1};
    return false;
  }
  const int a_first = __ldg(r.symbol_first_state + a_sym);
  const int s_a = __ldg(r.symbol_num_substates + a_sym);
  const double* out = c.out + size_t(b->cell) * c.num_states + a_first;
  for (int a = threadIdx.x; a < s_a; a += blockDim.x) sh_out[a] = out[a];
  return true;
}

// Masked dispatch 3's max-rule binary work list: the (cell, chunk) blocks of one launch whose
// parent symbol has an outpre in the cell, as (item, chunk index) pairs; `next` hands them out to
// the launch's blocks (both counters zeroed before the list is built). list null: a block per
// (blockIdx.x, blockIdx.y), every pair of the launch.
struct MaxcWork {
  const int2* list = nullptr;
  const int* count = nullptr;
  int* next = nullptr;
};

// Runs block(item, j) for the block's (cell, chunk) pair, or, with a work list, for list entries
// taken one after another until none is left. block() ends with a barrier-free exit or a block
// reduction; the two barriers here keep its shared memory from being reused too early.
template <typename Block>
__device__ __forceinline__ void ForEachMaxcBlock(const MaxcWork& work, Block&& block) {
  if (!work.list) {
    block(int(blockIdx.x), int(blockIdx.y));
    return;
  }
  __shared__ int sh_entry;
  const int count = *work.count;
  for (;;) {
    if (threadIdx.x == 0) sh_entry = atomicAdd(work.next, 1);
    __syncthreads();
    const int e = sh_entry;
    __syncthreads();
    if (e >= count) return;  // uniform over the block
    const int2 entry = work.list[e];
    block(entry.x, entry.y);
  }
}

// Masked dispatch 3: lists the launch's (cell, chunk) pairs (count cells from item_offset, the
// chunks chunk_list[0 .. list_chunks)) whose parent symbol has an outpre in the cell and whose
// sentence has a parse, and stores the others' candidates as none (the blocks that would have
// returned at once). A thread per pair.
__global__ void ListMaxcBlocksKernel(Charts c, MaxRuleArrays r, const CellItem* items,
                                     int item_offset, int span, int count, const int* chunk_list,
                                     int list_chunks, int num_chunks, Candidate* candidates,
                                     int2* list, int* list_count) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (long long)count * list_chunks) return;
  const int item = static_cast<int>(t / list_chunks), j = static_cast<int>(t % list_chunks);
  const int chunk = chunk_list ? __ldg(chunk_list + j) : j;
  const CellItem it = items[item_offset + item];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  const int a_sym = __ldg(r.chunk + chunk).x;
  if (c.present_out[size_t(cell) * c.num_symbols + a_sym] &&
      c.log_likelihood[it.sentence] > kNegInfD) {
    list[atomicAdd(list_count, 1)] = make_int2(item, j);
  } else {
    candidates[size_t(item) * num_chunks + chunk] = Candidate{kNegInfD, -1, -1};
  }
}

// A block per (cell, chunk of one parent symbol's base rules). Dynamic shared: max_q doubles (Q),
// span doubles (per-split candidates), the parent symbol's outpre values.
// kEntryQ (variants 9, 11, 13 and 14, the chunks of big base rules): a sparse base rule's Q is
// built from its entries (a thread per distinct (b, c), summing its parent substates in registers)
// instead of shared-memory atomics per substate rule (compare-and-swap loops for doubles).
template <bool kEntryQ>
__device__ __forceinline__ void MaxcBinaryBlock(const Charts& c, const MaxcChart& m,
                                                const MaxRuleArrays& r, const CellItem* items,
                                                int item_offset, int span, int max_q,
                                                int max_substates, Candidate* candidates,
                                                int num_chunks, const int* chunk_list, int item,
                                                int j) {
  extern __shared__ double shared[];
  double* sh_q = shared;                     // Q[b][c], rows of stride s_c | 1
  double* sh_out = sh_q + max_q;             // the parent symbol's outpre values
  double* sh_rows = sh_out + max_substates;  // [split][b]: in_L(b) sum_c Q[b][c] in_R(c)
  int* sh_valid = reinterpret_cast<int*>(sh_rows + size_t(span) * max_substates);  // [split]
  MaxcBlock block;
  if (!MaxcBlockStart(c, r, items, item_offset, span, candidates, num_chunks, chunk_list, item, j,
                      sh_out, &block))
    return;  // uniform over the block
  const CellItem& it = block.it;
  const int cell = block.cell;
  const int4 chunk = block.chunk;
  const int a_sym = chunk.x;
  // Each thread keeps the first best (rule, split) of the splits k = threadIdx.x (+ blockDim.x..),
  // visiting rules in order: the first maximum in (rule, split) order among its candidates.
  Candidate best{kNegInfD, -1, -1};
  {
    const int s_a = __ldg(r.symbol_num_substates + a_sym);
    const double cell_term = c.out_scale[cell] - c.log_likelihood[it.sentence];
    const int splits = span - 1;
    for (int br = chunk.y; br < chunk.z; ++br) {
      const int4 base = __ldg(r.base + br);
      const int b_first = __ldg(r.symbol_first_state + base.x);
      const int s_b = __ldg(r.symbol_num_substates + base.x);
      const int c_first = __ldg(r.symbol_first_state + base.y);
      const int s_c = __ldg(r.symbol_num_substates + base.y);
      const int stride = s_c | 1;
      // Usable splits: both children have a max-rule score.
      bool any = false;
      for (int k = threadIdx.x; k < splits; k += blockDim.x) {
        const int mid = it.start + 1 + k;
        const int lc = it.base + ChartCellIndex(it.n, it.start, mid);
        const int rc = it.base + ChartCellIndex(it.n, mid, it.start + span);
        const bool ok = m.score[size_t(lc) * c.num_symbols + base.x] > kNegInfD &&
                        m.score[size_t(rc) * c.num_symbols + base.y] > kNegInfD;
        sh_valid[k] = ok;
        any |= ok;
      }
      if (!__syncthreads_or(any)) continue;
      if (base.w < 0) {
        // Dense: a thread per (b, c), coalesced reads of p[a][b][c] over a.
        const int bc = s_b * s_c;
        const double* p = r.dense + base.z;
        for (int e = threadIdx.x; e < bc; e += blockDim.x) {
          double q = 0;
          for (int a = 0; a < s_a; ++a) q = fma(sh_out[a], __ldg(p + size_t(a) * bc + e), q);
          sh_q[(e / s_c) * stride + e % s_c] = q;
        }
      } else {
        for (int e = threadIdx.x; e < s_b * stride; e += blockDim.x) sh_q[e] = 0;
        __syncthreads();
        if (kEntryQ) {
          const int e_end = __ldg(r.entry_begin + br + 1);
          for (int e = __ldg(r.entry_begin + br) + threadIdx.x; e < e_end; e += blockDim.x) {
            const int key = __ldg(r.entry_bc + e);
            const int j_end = __ldg(r.entry_rule_begin + e + 1);
            double q = 0;
            for (int j = __ldg(r.entry_rule_begin + e); j < j_end; ++j)
              q = fma(sh_out[__ldg(r.entry_a + j)], __ldg(r.entry_w + j), q);
            sh_q[(key >> 16) * stride + (key & 0xffff)] = q;
          }
        } else {
          for (int u = base.z + threadIdx.x; u < base.w; u += blockDim.x) {
            const int key = __ldg(r.mr_key + u);
            const double o = sh_out[key >> 16];
            if (o > 0) atomicAdd(sh_q + (key & 0xffff), o * __ldg(r.mr_w + u));
          }
        }
      }
      __syncthreads();
      // A thread per (split, b): in_L(b) * sum_c Q[b][c] in_R(c).
      for (int e = threadIdx.x; e < splits * s_b; e += blockDim.x) {
        const int k = e / s_b, b = e - k * s_b;
        double v = 0;
        if (sh_valid[k]) {
          const int mid = it.start + 1 + k;
          const double l =
              c.in[size_t(it.base + ChartCellIndex(it.n, it.start, mid)) * c.num_states + b_first +
                   b];
          if (l != 0) {
            const double* right =
                c.in + size_t(it.base + ChartCellIndex(it.n, mid, it.start + span)) * c.num_states +
                c_first;
            const double* q = sh_q + b * stride;
            double row = 0;
            for (int cc = 0; cc < s_c; ++cc) row = fma(q[cc], right[cc], row);
            v = l * row;
          }
        }
        sh_rows[e] = v;
      }
      __syncthreads();
      // A thread per split: the sum over b, the candidate, the thread's running best.
      for (int k = threadIdx.x; k < splits; k += blockDim.x) {
        if (!sh_valid[k]) continue;
        double sum = 0;
        for (int b = 0; b < s_b; ++b) sum += sh_rows[k * s_b + b];
        if (!(sum > 0)) continue;
        const int mid = it.start + 1 + k;
        const int lc = it.base + ChartCellIndex(it.n, it.start, mid);
        const int rc = it.base + ChartCellIndex(it.n, mid, it.start + span);
        const double g = m.score[size_t(lc) * c.num_symbols + base.x] +
                         m.score[size_t(rc) * c.num_symbols + base.y] + log(sum) + cell_term +
                         c.in_scale[lc] + c.in_scale[rc];
        if (g > best.score) best = {g, br, mid};
      }
      // The next rule's first barrier (__syncthreads_or) orders these reads before new writes.
    }
  }
  StoreBlockBest(best, block.slot);
}

template <bool kEntryQ>
__global__ void __launch_bounds__(kThreads)
    MaxcBinaryKernel(Charts c, MaxcChart m, MaxRuleArrays r, const CellItem* items, int item_offset,
                     int span, int max_q, int max_substates, Candidate* candidates, int num_chunks,
                     const int* chunk_list, MaxcWork work = {}) {
  ForEachMaxcBlock(work, [&](int item, int j) {
    MaxcBinaryBlock<kEntryQ>(c, m, r, items, item_offset, span, max_q, max_substates, candidates,
                             num_chunks, chunk_list, item, j);
  });
}

// Split k of the span-`span` cell of `it` (k < span - 1; else none): its left and right child
// cells and their max-rule scores of symbols b and c (mr is left -infinity when ml is).
struct SplitCells {
  int lc, rc;
  double ml, mr;
};
__device__ __forceinline__ SplitCells SplitChildren(const CellItem& it, int span, int k,
                                                    const double* score, int num_symbols, int b,
                                                    int c) {
  SplitCells s{0, 0, kNegInfD, kNegInfD};
  if (k < span - 1) {
    const int mid = it.start + 1 + k;
    s.lc = it.base + ChartCellIndex(it.n, it.start, mid);
    s.rc = it.base + ChartCellIndex(it.n, mid, it.start + span);
    s.ml = score[size_t(s.lc) * num_symbols + b];
    if (s.ml > kNegInfD) s.mr = score[size_t(s.rc) * num_symbols + c];
  }
  return s;
}

// A warp's sums over a base rule's entries [e_begin, e_end) for its group of up to 32 splits: the
// lane of split k gets sum over the entries (b, c) of q(b, c) in_L(b) in_R(c), q(b, c) = sum_a
// out[a] p(a, b, c), for the splits whose lane's bit is set in `usable` (0 for the others). Each
// lane computes q for kR entries in registers per pass; a warp reduction per usable split. lc, rc:
// each lane's split's child cells in `in` (the inside chart, num_states values a cell; B's
// substates from b_first, C's from c_first). Every argument but lc and rc is warp-uniform.
template <int kR>
__device__ __forceinline__ double WarpEntrySums(const int* entry_bc, const int* entry_rule_begin,
                                                const int* entry_a, const double* entry_w,
                                                int e_begin, int e_end, const double* out,
                                                const double* in, int num_states, int b_first,
                                                int c_first, int lc, int rc, unsigned usable) {
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x % 32;
  double acc = 0;  // lane k % 32: split k's sum
  for (int e0 = e_begin; e0 < e_end; e0 += 32 * kR) {
    const int passes = min(kR, (e_end - e0 + 31) / 32);  // warp-uniform
    double q[kR];
    int ob[kR], oc[kR];
#pragma unroll
    for (int i = 0; i < kR; ++i) {
      q[i] = 0, ob[i] = 0, oc[i] = 0;
      const int e = e0 + i * 32 + lane;
      if (i < passes && e < e_end) {
        const int key = __ldg(entry_bc + e);
        ob[i] = key >> 16;
        oc[i] = key & 0xffff;
        const int j_end = __ldg(entry_rule_begin + e + 1);
        double sum = 0;
        for (int j = __ldg(entry_rule_begin + e); j < j_end; ++j)
          sum = fma(out[__ldg(entry_a + j)], __ldg(entry_w + j), sum);
        q[i] = sum;
      }
    }
    for (unsigned bits = usable; bits != 0; bits &= bits - 1) {
      const int kk = __ffs(bits) - 1;
      const int lck = __shfl_sync(kAll, lc, kk), rck = __shfl_sync(kAll, rc, kk);
      const double* left = in + size_t(lck) * num_states + b_first;
      const double* right = in + size_t(rck) * num_states + c_first;
      double s = 0;
#pragma unroll
      for (int i = 0; i < kR; ++i)
        if (i < passes) s = fma(q[i] * __ldg(left + ob[i]), __ldg(right + oc[i]), s);
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(kAll, s, offset);
      if (lane == kk) acc += s;
    }
  }
  return acc;
}

// Variant 7 (kR = 4): a warp per base rule, no block barrier between rules. Measured slower than
// variant 2 on en_sm6s (14.4 s against 11.1; kR = 8 21.2 s; 4 usable splits a step 14.5 s:
// bench/RESULTS.md), kept as the base of the next step named there (big rules over all warps).
// Variant 2 ran three block-wide phases of little work per (cell, base rule), each behind a
// barrier, and its per-split products ran over all s_B x s_C substate pairs of Q although on
// en_sm6s only 27% of them are a rule's (646,296 distinct (b, c) of 2,387,041). Here a block per
// (cell, chunk of one parent symbol's base rules) as before, and each warp takes the chunk's next
// base rule from a shared counter. Per rule and group of 32 splits: a lane per split flags the
// usable ones (both children with a max-rule score: a ballot); then per pass over kR x 32 of the
// rule's entries (distinct (b, c)), each lane computes q = sum_a outpre(A_a) p(a, b, c) for kR
// entries in registers and, for every usable split k, sums q in_L(b) in_R(c) over its entries; a
// warp reduction gives lane k % 32 its split's sum. The lane of a split keeps its candidate; the
// block reduction (StoreBlockBest) keeps the first best (rule, split) as the other variants.
// Dynamic shared: the parent symbol's outpre values.
// Variants 9, 11, 13 and 14 launch it over the chunks of small base rules only (chunk_list; 13 and
// 14 in r.warp_order, blocks of 64 threads for 13 and 14).
template <int kR>
__device__ __forceinline__ void MaxcBinaryEntryBlock(const Charts& c, const MaxcChart& m,
                                                     const MaxRuleArrays& r, const CellItem* items,
                                                     int item_offset, int span,
                                                     Candidate* candidates, int num_chunks,
                                                     const int* chunk_list, int item, int j) {
  extern __shared__ double sh_out[];
  __shared__ int sh_next;
  MaxcBlock block;
  if (!MaxcBlockStart(c, r, items, item_offset, span, candidates, num_chunks, chunk_list, item, j,
                      sh_out, &block))
    return;  // uniform over the block
  const CellItem& it = block.it;
  const int cell = block.cell;
  const int4 chunk = block.chunk;
  Candidate best{kNegInfD, -1, -1};
  {
    if (threadIdx.x == 0) sh_next = chunk.y;
    __syncthreads();
    const double cell_term = c.out_scale[cell] - c.log_likelihood[it.sentence];
    const int splits = span - 1;
    const int lane = threadIdx.x % 32;
    constexpr unsigned kAll = 0xffffffffu;
    for (;;) {
      int br = 0;
      if (lane == 0) br = atomicAdd(&sh_next, 1);
      br = __shfl_sync(kAll, br, 0);
      if (br >= chunk.z) break;
      if (r.warp_order) br = __ldg(r.warp_order + br);
      const int4 base = __ldg(r.base + br);
      const int b_first = __ldg(r.symbol_first_state + base.x);
      const int c_first = __ldg(r.symbol_first_state + base.y);
      const int e_begin = __ldg(r.entry_begin + br), e_end = __ldg(r.entry_begin + br + 1);
      for (int k0 = 0; k0 < splits; k0 += 32) {
        const int k = k0 + lane;
        const auto [lc, rc, ml, mr] =
            SplitChildren(it, span, k, m.score, c.num_symbols, base.x, base.y);
        const bool ok = ml > kNegInfD && mr > kNegInfD;
        const unsigned usable = __ballot_sync(kAll, ok);
        if (usable == 0) continue;
        const double acc =
            WarpEntrySums<kR>(r.entry_bc, r.entry_rule_begin, r.entry_a, r.entry_w, e_begin, e_end,
                              sh_out, c.in, c.num_states, b_first, c_first, lc, rc, usable);
        if (ok && acc > 0) {
          const Candidate cand{ml + mr + log(acc) + cell_term + c.in_scale[lc] + c.in_scale[rc], br,
                               it.start + 1 + k};
          if (Better(cand, best)) best = cand;
        }
      }
    }
  }
  StoreBlockBest(best, block.slot);
}

template <int kR>
__global__ void __launch_bounds__(kThreads)
    MaxcBinaryEntryKernel(Charts c, MaxcChart m, MaxRuleArrays r, const CellItem* items,
                          int item_offset, int span, Candidate* candidates, int num_chunks,
                          const int* chunk_list, MaxcWork work = {}) {
  ForEachMaxcBlock(work, [&](int item, int j) {
    MaxcBinaryEntryBlock<kR>(c, m, r, items, item_offset, span, candidates, num_chunks, chunk_list,
                             item, j);
  });
}

// The first version (option max_rule_kernel = 1): a warp per split point, lanes over b, and
// thread 0 scanning the splits of each rule in order.
// A block per (cell, chunk of one parent symbol's base rules). Dynamic shared: max_q doubles (Q),
// span doubles (per-split candidates), the parent symbol's outpre values.
__global__ void __launch_bounds__(kThreads)
    MaxcBinaryWarpKernel(Charts c, MaxcChart m, MaxRuleArrays r, const CellItem* items,
                         int item_offset, int span, int max_q, Candidate* candidates,
                         int num_chunks) {
  extern __shared__ double shared[];
  double* sh_q = shared;
  double* sh_cand = shared + max_q;
  double* sh_out = sh_cand + span;  // the parent symbol's outpre values
  const CellItem it = items[item_offset + blockIdx.x];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  const int4 chunk = __ldg(r.chunk + blockIdx.y);
  const int a_sym = chunk.x;
  Candidate best{kNegInfD, -1, -1};
  const double log_pw = c.log_likelihood[it.sentence];
  if (c.present_out[size_t(cell) * c.num_symbols + a_sym] && log_pw > kNegInfD) {
    const int a_first = __ldg(r.symbol_first_state + a_sym);
    const int s_a = __ldg(r.symbol_num_substates + a_sym);
    const double* out = c.out + size_t(cell) * c.num_states + a_first;
    for (int a = threadIdx.x; a < s_a; a += blockDim.x) sh_out[a] = out[a];
    const double cell_term = c.out_scale[cell] - log_pw;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int splits = span - 1;
    for (int br = chunk.y; br < chunk.z; ++br) {
      const int4 base = __ldg(r.base + br);
      const int b_first = __ldg(r.symbol_first_state + base.x);
      const int s_b = __ldg(r.symbol_num_substates + base.x);
      const int c_first = __ldg(r.symbol_first_state + base.y);
      const int s_c = __ldg(r.symbol_num_substates + base.y);
      const int stride = s_c | 1;
      // Is any split usable (both children with a max-rule score)?
      bool any = false;
      for (int k = threadIdx.x; k < splits; k += blockDim.x) {
        const int mid = it.start + 1 + k;
        const int lc = it.base + ChartCellIndex(it.n, it.start, mid);
        const int rc = it.base + ChartCellIndex(it.n, mid, it.start + span);
        any |= m.score[size_t(lc) * c.num_symbols + base.x] > kNegInfD &&
               m.score[size_t(rc) * c.num_symbols + base.y] > kNegInfD;
      }
      if (!__syncthreads_or(any)) continue;
      if (base.w < 0) {
        // Dense: a thread per (b, c), coalesced reads of p[a][b][c] over a.
        const int bc = s_b * s_c;
        const double* p = r.dense + base.z;
        for (int e = threadIdx.x; e < bc; e += blockDim.x) {
          double q = 0;
          for (int a = 0; a < s_a; ++a) q = fma(sh_out[a], __ldg(p + size_t(a) * bc + e), q);
          sh_q[(e / s_c) * stride + e % s_c] = q;
        }
      } else {
        for (int e = threadIdx.x; e < s_b * stride; e += blockDim.x) sh_q[e] = 0;
        __syncthreads();
        for (int u = base.z + threadIdx.x; u < base.w; u += blockDim.x) {
          const int key = __ldg(r.mr_key + u);
          const double o = sh_out[key >> 16];
          if (o > 0) atomicAdd(sh_q + (key & 0xffff), o * __ldg(r.mr_w + u));
        }
      }
      __syncthreads();
      for (int k = warp; k < splits; k += blockDim.x / 32) {
        const int mid = it.start + 1 + k;
        const int lc = it.base + ChartCellIndex(it.n, it.start, mid);
        const int rc = it.base + ChartCellIndex(it.n, mid, it.start + span);
        const double ml = m.score[size_t(lc) * c.num_symbols + base.x];
        const double mr = m.score[size_t(rc) * c.num_symbols + base.y];
        double g = kNegInfD;
        if (ml > kNegInfD && mr > kNegInfD) {
          const double* left = c.in + size_t(lc) * c.num_states + b_first;
          const double* right = c.in + size_t(rc) * c.num_states + c_first;
          double sum = 0;
          for (int b = lane; b < s_b; b += 32) {
            const double l = left[b];
            if (l == 0) continue;
            const double* q = sh_q + b * stride;
            double row = 0;
            for (int cc = 0; cc < s_c; ++cc) row = fma(q[cc], right[cc], row);
            sum = fma(l, row, sum);
          }
          for (int offset = 16; offset > 0; offset >>= 1)
            sum += __shfl_xor_sync(0xffffffffu, sum, offset);
          if (sum > 0) g = ml + mr + log(sum) + cell_term + c.in_scale[lc] + c.in_scale[rc];
        }
        if (lane == 0) sh_cand[k] = g;
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        for (int k = 0; k < splits; ++k) {
          if (sh_cand[k] > best.score) best = {sh_cand[k], br, it.start + 1 + k};
        }
      }
      __syncthreads();
    }
  }
  if (threadIdx.x == 0) candidates[size_t(blockIdx.x) * num_chunks + blockIdx.y] = best;
}

// Per (cell, symbol): the first best chunk of the symbol (chunks are in grammar order); its
// rule's children from base[rule] ({B, C, ..}: MaxRuleArrays::base, or the product's rules).
__global__ void MaxcMergeKernel(int num_symbols, MaxcChart m, const int4* base,
                                const CellItem* items, int item_offset, int count, int span,
                                const Candidate* candidates, int num_chunks,
                                const int* symbol_chunk_begin) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= count * num_symbols) return;
  const int item = e / num_symbols, a = e % num_symbols;
  const CellItem it = items[item_offset + item];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  Candidate best{kNegInfD, -1, -1};
  for (int k = symbol_chunk_begin[a]; k < symbol_chunk_begin[a + 1]; ++k) {
    const Candidate cand = candidates[size_t(item) * num_chunks + k];
    if (cand.score > best.score) best = cand;
  }
  m.score[size_t(cell) * num_symbols + a] = best.score;
  int4 info = make_int4(-1, -1, -1, -1);
  if (best.rule >= 0) {
    const int4 rule = __ldg(base + best.rule);
    info = make_int4(best.split, rule.x, rule.y, -1);
  }
  m.info[size_t(cell) * num_symbols + a] = info;
}

// The unary layer's pieces. A warp's sum_u out[parent_u] p_u in[child_u] over base unary pair
// p's substate rules [pair_rule_begin[p], pair_rule_begin[p + 1]) (states of one cell), reduced
// over the warp (every lane gets it).
__device__ __forceinline__ double WarpUnaryPairSum(const int* pair_rule_begin, const int* pu_parent,
                                                   const int* pu_child, const double* pu_w, int p,
                                                   const double* out, const double* in) {
  double sum = 0;
  const int end = __ldg(pair_rule_begin + p + 1);
  for (int u = __ldg(pair_rule_begin + p) + threadIdx.x % 32; u < end; u += 32)
    sum = fma(out[__ldg(pu_parent + u)] * __ldg(pu_w + u), in[__ldg(pu_child + u)], sum);
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  return sum;
}

// Then, the pairs' candidates in sh_pair (pairs {A, C} grouped by A from pair_begin[A], in (A, C)
// order) and the scores before the layer in sh_pre: score(A) takes the first pair that beats
// sh_pre[A], and its unary child. A thread per symbol.
__device__ __forceinline__ void TakeUnaryPairs(int num_symbols, const int* pair_begin,
                                               const int2* pair_symbols, const double* sh_pre,
                                               const double* sh_pair, MaxcChart m, int cell) {
  for (int a = threadIdx.x; a < num_symbols; a += blockDim.x) {
    double best = sh_pre[a];
    int child = -1;
    for (int p = __ldg(pair_begin + a); p < __ldg(pair_begin + a + 1); ++p) {
      if (sh_pair[p] > best) best = sh_pair[p], child = __ldg(pair_symbols + p).y;
    }
    if (child >= 0) {
      m.score[size_t(cell) * num_symbols + a] = best;
      m.info[size_t(cell) * num_symbols + a].w = child;
    }
  }
}

// The max-rule unary layer of one cell: score(A) = max(score(A), max_{A -> C} log sum_{a,c}
// outpre(A_a) p(A_a -> C_c) in(C_c) / P(w) + score(C)), children read before the layer. A block
// per cell; dynamic shared: num_symbols doubles (pre-unary scores) + num_pairs doubles.
__global__ void MaxcUnaryKernel(Charts c, MaxcChart m, MaxRuleArrays r, const CellItem* items,
                                int item_offset, int span, int num_pairs) {
  extern __shared__ double shared[];
  double* sh_pre = shared;
  double* sh_pair = shared + c.num_symbols;
  const CellItem it = items[item_offset + blockIdx.x];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  const double log_pw = c.log_likelihood[it.sentence];
  for (int a = threadIdx.x; a < c.num_symbols; a += blockDim.x)
    sh_pre[a] = m.score[size_t(cell) * c.num_symbols + a];
  __syncthreads();
  const double* out = c.out + size_t(cell) * c.num_states;
  const double* in = c.in + size_t(cell) * c.num_states;
  const double cell_term = c.out_scale[cell] + c.in_scale[cell] - log_pw;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int p = warp; p < num_pairs; p += blockDim.x / 32) {
    const int2 pair = __ldg(r.pair_symbols + p);
    double g = kNegInfD;
    if (sh_pre[pair.y] > kNegInfD && log_pw > kNegInfD &&
        c.present_out[size_t(cell) * c.num_symbols + pair.x]) {
      const double sum =
          WarpUnaryPairSum(r.pair_rule_begin, r.pu_parent, r.pu_child, r.pu_w, p, out, in);
      if (sum > 0) g = log(sum) + cell_term + sh_pre[pair.y];
    }
    if (lane == 0) sh_pair[p] = g;
  }
  __syncthreads();
  TakeUnaryPairs(c.num_symbols, r.pair_begin, r.pair_symbols, sh_pre, sh_pair, m, cell);
}
// The max-rule arrays' finite entries, for the copy back (most entries of a pruned chart are
// -infinity). A thread per (cell, symbol) entry of the batch; the entry's sentence is the last one
// whose first cell (sentence_base, ascending) is at most its cell. Counting (fill false): per
// sentence into slots[sentence]; filling: at slots[sentence]++ (each sentence's first slot), the
// entry's index within its sentence's arrays, its score and its info, in no particular order.
__global__ void MaxcEntriesKernel(MaxcChart m, long long entries, int num_symbols,
                                  const int* sentence_base, int num_sentences, int* slots,
                                  bool fill, int* out_index, double* out_score, int4* out_info) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= entries) return;
  const double score = m.score[e];
  if (!(score > kNegInfD)) return;
  const int cell = static_cast<int>(e / num_symbols);
  int lo = 0, hi = num_sentences - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (__ldg(sentence_base + mid) <= cell) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const int slot = atomicAdd(slots + lo, 1);
  if (fill) {
    out_index[slot] = static_cast<int>(e - (long long)__ldg(sentence_base + lo) * num_symbols);
    out_score[slot] = score;
    out_info[slot] = m.info[e];
  }
}

// The max-rule arrays' finite entries on their way back: the device's arrays, and a host set
// (pinned) that IoResult views point into.
struct MaxcDeviceEntries {
  DeviceArray<int> slots, index;  // slots: per sentence, its count, then its next slot
  DeviceArray<double> score;
  DeviceArray<int4> info;
};
struct MaxcHostEntries {
  PinnedArray<int> count, index;
  PinnedArray<double> score;
  PinnedArray<int4> info;
  std::vector<int> begin;  // per sentence, its first entry (+ the end)
  // Sentence i's entries as IoResult's entry fields (inside_outside.h; a template, so that this
  // file needs no include of it).
  template <typename Result>
  void View(int i, Result* result) const {
    result->entries = size_t(begin[i + 1] - begin[i]);
    result->entry_index = index.get() + begin[i];
    result->entry_score = score.get() + begin[i];
    result->entry_split_left_right_unary = reinterpret_cast<const int32_t*>(info.get() + begin[i]);
  }
};

// Only the max-rule arrays' finite entries come back (a pruned chart's are a few percent of them;
// the dense arrays were gigabytes of pinned memory and copies): counted per sentence (`maxc`
// entries, sentence i's cells from sentence_base[i]), then, once the counts are on the host,
// written sentence after sentence and their copies into *host queued on `stream` (the caller
// synchronizes before reading them). False, with *error, on a failure (*out_of_memory when an
// allocation failed).
bool CopyMaxcEntries(const MaxcChart& m, long long maxc, int num_symbols, const int* sentence_base,
                     int num_sentences, cudaStream_t stream, MaxcDeviceEntries* device,
                     MaxcHostEntries* host, std::string* error, bool* out_of_memory) {
  *out_of_memory = false;
  if (!device->slots.Reserve(std::max(1, num_sentences)) ||
      !host->count.Reserve(std::max(1, num_sentences))) {
    *error = "could not allocate the max-rule entry counts";
    *out_of_memory = true;
    return false;
  }
  const int blocks = static_cast<int>((maxc + 255) / 256);
  cudaMemsetAsync(device->slots.get(), 0, num_sentences * sizeof(int), stream);
  MaxcEntriesKernel<<<blocks, 256, 0, stream>>>(m, maxc, num_symbols, sentence_base, num_sentences,
                                                device->slots.get(), false, nullptr, nullptr,
                                                nullptr);
  cudaMemcpyAsync(host->count.get(), device->slots.get(), num_sentences * sizeof(int),
                  cudaMemcpyDeviceToHost, stream);
  if (!WaitForStream(stream, error)) return false;
  host->begin.assign(num_sentences + 1, 0);
  for (int i = 0; i < num_sentences; ++i)
    host->begin[i + 1] = host->begin[i] + host->count.get()[i];
  const size_t entries = host->begin[num_sentences];
  const size_t room = std::max<size_t>(1, entries);
  if (!device->index.Reserve(room) || !device->score.Reserve(room) || !device->info.Reserve(room) ||
      !host->index.Reserve(room) || !host->score.Reserve(room) || !host->info.Reserve(room)) {
    *error = "cudaMalloc failed for " + std::to_string(entries) + " max-rule entries";
    *out_of_memory = true;
    return false;
  }
  cudaMemcpyAsync(device->slots.get(), host->begin.data(), num_sentences * sizeof(int),
                  cudaMemcpyHostToDevice, stream);
  MaxcEntriesKernel<<<blocks, 256, 0, stream>>>(m, maxc, num_symbols, sentence_base, num_sentences,
                                                device->slots.get(), true, device->index.get(),
                                                device->score.get(), device->info.get());
  cudaMemcpyAsync(host->index.get(), device->index.get(), entries * sizeof(int),
                  cudaMemcpyDeviceToHost, stream);
  cudaMemcpyAsync(host->score.get(), device->score.get(), entries * sizeof(double),
                  cudaMemcpyDeviceToHost, stream);
  cudaMemcpyAsync(host->info.get(), device->info.get(), entries * sizeof(int4),
                  cudaMemcpyDeviceToHost, stream);
  return true;
}

}  // namespace
}  // namespace cky::cuda::io
