// The product's max-rule pass on the device (product_max_rule.h describes the quantities and the
// mapping): the stores of the grammars' charts, the kernels, the batch dispatch.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cuda/common/device_helpers.cuh"
#include "cuda/inside_outside/max_rule_kernels.cuh"
#include "cuda/inside_outside/product_max_rule.h"
#include "cuda/inside_outside/sum_layouts.h"

namespace cky::cuda {
namespace {

using namespace io;  // NOLINT: CellItem, Candidate, Better, StoreBlockBest, the entries kernel

constexpr int kChunkRules = 16;  // product rules a binary block takes at most

// One grammar of the product on the device: its max-rule rules (DeviceMaxRuleRules) and its
// stored charts (the batch's cells in position order).
struct ProductMember {
  int num_states;
  const int* first_state;
  const int* num_substates;
  const int* entry_begin;
  const int* entry_bc;
  const int* entry_rule_begin;
  const int* entry_a;
  const double* entry_w;
  const int* pair_rule_begin;
  const int* pu_parent;
  const int* pu_child;
  const double* pu_w;
  const double* in;         // [cell][state]
  const double* out;        // [cell][state] outpre
  const double* in_scale;   // [cell]
  const double* out_scale;  // [cell]
  const double* log_pw;     // [position]
  const double* lexical;    // [word][state]
};

struct ProductArrays {
  int num_members;
  int num_symbols;               // the product's (grammar 0's)
  const ProductMember* members;  // [k]
  const int* member_symbol;      // [k * num_symbols + s]
  const unsigned char* is_tag;   // [s]
  const int4* rule;  // product base rules {B, C, A, 0} (as MaxRuleArrays::base), grammar 0's order
  const int* rule_member;         // [rule * num_members + k]: grammar k's base rule
  const int4* chunk;              // {A, first rule, end rule, 0}
  const int* symbol_chunk_begin;  // [s], num_symbols + 1
  const int2* pair;               // product unary pairs {A, C}, (A, C) order
  const int* pair_member;         // [pair * num_members + k]: grammar k's pair
  const int* pair_begin;          // [s], num_symbols + 1
  const unsigned char* live;      // [position]: every grammar has a finite log P(w)
};

// live[position] = every grammar's log P(w) is finite.
__global__ void ProductLiveKernel(ProductArrays p, int positions, unsigned char* live) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= positions) return;
  bool all = true;
  for (int k = 0; k < p.num_members; ++k) all = all && p.members[k].log_pw[i] > kNegInfD;
  live[i] = all;
}

// Span 1: score(T) = sum_k log sum_t outpre_k(T_t) P_k(word | T_t) / P_k(w) for tags (as
// parser/max_rule.h's LogTagPosterior); -infinity for the other symbols. A block per cell, a warp
// per symbol.
__global__ void ProductTagKernel(ProductArrays p, MaxcChart m, const CellItem* items,
                                 int item_offset) {
  const CellItem it = items[item_offset + blockIdx.x];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + 1);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool live = p.live[it.sentence];
  for (int a = warp; a < p.num_symbols; a += blockDim.x / 32) {
    double total = kNegInfD;
    if (live && p.is_tag[a]) {
      total = 0;
      for (int k = 0; k < p.num_members && total > kNegInfD; ++k) {
        const ProductMember& g = p.members[k];
        const int t = p.member_symbol[k * p.num_symbols + a];
        const double out_scale = g.out_scale[cell];
        if (!(out_scale > kNegInfD)) {
          total = kNegInfD;
          break;
        }
        const int first = g.first_state[t], count = g.num_substates[t];
        const double* out = g.out + size_t(cell) * g.num_states + first;
        const double* word = g.lexical + size_t(it.word + it.start) * g.num_states + first;
        const double log_pw = g.log_pw[it.sentence];
        double sum = 0;
        for (int j = lane; j < count; j += 32) {
          if (out[j] != 0 && word[j] > kNegInfD) sum += out[j] * exp(word[j] + out_scale - log_pw);
        }
        for (int offset = 16; offset > 0; offset >>= 1)
          sum += __shfl_xor_sync(0xffffffffu, sum, offset);
        total = sum > 0 ? total + log(sum) : kNegInfD;
      }
    }
    if (lane == 0) {
      m.score[size_t(cell) * p.num_symbols + a] = total;
      m.info[size_t(cell) * p.num_symbols + a] = make_int4(-1, -1, -1, -1);
    }
  }
}

// present[cell][s]: the cell's sentence has a finite log P(w) in every grammar, and every grammar
// has an outpre of product symbol s in the cell (else no product rule of parent s is used there).
// A block per cell of one span, a thread per symbol.
__global__ void ProductPresenceKernel(ProductArrays p, const CellItem* items, int item_offset,
                                      int span, unsigned char* present) {
  const CellItem it = items[item_offset + blockIdx.x];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  const bool live = p.live[it.sentence];
  for (int s = threadIdx.x; s < p.num_symbols; s += blockDim.x) {
    bool all = live;
    for (int k = 0; k < p.num_members && all; ++k) {
      const ProductMember& g = p.members[k];
      const int a = p.member_symbol[k * p.num_symbols + s];
      const double* out = g.out + size_t(cell) * g.num_states + g.first_state[a];
      bool any = false;
      for (int t = 0; t < g.num_substates[a] && !any; ++t) any = out[t] != 0;
      all = any;
    }
    present[size_t(cell) * p.num_symbols + s] = all;
  }
}

// The binary work list of one span's launch: the (cell, chunk) pairs whose parent symbol is
// present (ProductPresenceKernel), as (item, chunk) pairs; the others' candidates are stored as
// none. A thread per pair.
__global__ void ListProductBlocksKernel(ProductArrays p, const CellItem* items, int item_offset,
                                        int span, int count, int num_chunks,
                                        const unsigned char* present, Candidate* candidates,
                                        int2* list, int* list_count) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (long long)count * num_chunks) return;
  const int item = static_cast<int>(t / num_chunks), j = static_cast<int>(t % num_chunks);
  const CellItem it = items[item_offset + item];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  if (present[size_t(cell) * p.num_symbols + p.chunk[j].x]) {
    list[atomicAdd(list_count, 1)] = make_int2(item, j);
  } else {
    candidates[size_t(item) * num_chunks + j] = Candidate{kNegInfD, -1, -1};
  }
}

// Binary: a block per listed (cell, chunk of one parent symbol's product rules); each warp takes
// the chunk's next rule; per group of 32 splits a lane per split (usable when both children have a
// product score), then grammar after grammar its r_k, summed over the grammar's entries of the
// rule as MaxcBinaryEntryBlock sums them (WarpEntrySums), its log added to the lane's total; a
// lane whose r_k is 0 is out. The block keeps the first best (rule, split).
__device__ __forceinline__ void ProductBinaryBlock(const ProductArrays& p, const MaxcChart& m,
                                                   const CellItem* items, int item_offset, int span,
                                                   Candidate* candidates, int num_chunks, int item,
                                                   int j) {
  constexpr int kR = 4;
  constexpr unsigned kAll = 0xffffffffu;
  __shared__ int sh_next;
  const CellItem it = items[item_offset + item];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  const int4 chunk = p.chunk[j];
  Candidate* slot = candidates + size_t(item) * num_chunks + j;
  if (threadIdx.x == 0) sh_next = chunk.y;
  __syncthreads();
  const int splits = span - 1;
  const int lane = threadIdx.x % 32;
  Candidate best{kNegInfD, -1, -1};
  for (;;) {
    int br = 0;
    if (lane == 0) br = atomicAdd(&sh_next, 1);
    br = __shfl_sync(kAll, br, 0);
    if (br >= chunk.z) break;
    const int4 rule = p.rule[br];
    for (int k0 = 0; k0 < splits; k0 += 32) {
      const int k = k0 + lane;
      const auto [lc, rc, ml, mr] =
          SplitChildren(it, span, k, m.score, p.num_symbols, rule.x, rule.y);
      bool alive = ml > kNegInfD && mr > kNegInfD;
      double total = 0;
      for (int g_index = 0; g_index < p.num_members; ++g_index) {
        const unsigned live_lanes = __ballot_sync(kAll, alive);
        if (live_lanes == 0) break;
        const ProductMember& g = p.members[g_index];
        const int mb = p.rule_member[br * p.num_members + g_index];
        const int* sym = p.member_symbol + g_index * p.num_symbols;
        const int a_first = g.first_state[sym[rule.z]];
        const int b_first = g.first_state[sym[rule.x]];
        const int c_first = g.first_state[sym[rule.y]];
        const double* out = g.out + size_t(cell) * g.num_states + a_first;
        const int e_begin = g.entry_begin[mb], e_end = g.entry_begin[mb + 1];
        const double acc =
            WarpEntrySums<kR>(g.entry_bc, g.entry_rule_begin, g.entry_a, g.entry_w, e_begin, e_end,
                              out, g.in, g.num_states, b_first, c_first, lc, rc, live_lanes);
        if (alive && acc > 0) {
          total += log(acc) + g.out_scale[cell] - g.log_pw[it.sentence] + g.in_scale[lc] +
                   g.in_scale[rc];
        } else {
          alive = false;
        }
      }
      if (alive) {
        const Candidate cand{total + ml + mr, br, it.start + 1 + k};
        if (Better(cand, best)) best = cand;
      }
    }
  }
  StoreBlockBest(best, slot);
}

// The listed blocks, taken one after another by the launch's blocks (ForEachMaxcBlock).
__global__ void __launch_bounds__(kThreads)
    ProductBinaryKernel(ProductArrays p, MaxcChart m, const CellItem* items, int item_offset,
                        int span, Candidate* candidates, int num_chunks, MaxcWork work) {
  ForEachMaxcBlock(work, [&](int item, int j) {
    ProductBinaryBlock(p, m, items, item_offset, span, candidates, num_chunks, item, j);
  });
}

// The unary layer of one cell: per product pair A -> C, sum_k log u_k + score(C) before the
// layer; score(A) takes the first pair that beats it. A block per cell, a warp per pair; dynamic
// shared: num_symbols + num_pairs doubles.
__global__ void ProductUnaryKernel(ProductArrays p, MaxcChart m, const CellItem* items,
                                   int item_offset, int span, int num_pairs) {
  extern __shared__ double shared[];
  double* sh_pre = shared;
  double* sh_pair = shared + p.num_symbols;
  const CellItem it = items[item_offset + blockIdx.x];
  const int cell = it.base + ChartCellIndex(it.n, it.start, it.start + span);
  for (int a = threadIdx.x; a < p.num_symbols; a += blockDim.x)
    sh_pre[a] = m.score[size_t(cell) * p.num_symbols + a];
  __syncthreads();
  const bool live = p.live[it.sentence];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int q = warp; q < num_pairs; q += blockDim.x / 32) {
    const int2 pair = p.pair[q];
    double g_score = kNegInfD;
    if (live && sh_pre[pair.y] > kNegInfD) {
      double total = 0;
      bool alive = true;
      for (int k = 0; k < p.num_members && alive; ++k) {
        const ProductMember& g = p.members[k];
        const int mp = p.pair_member[q * p.num_members + k];
        const double sum = WarpUnaryPairSum(g.pair_rule_begin, g.pu_parent, g.pu_child, g.pu_w, mp,
                                            g.out + size_t(cell) * g.num_states,
                                            g.in + size_t(cell) * g.num_states);
        if (sum > 0) {
          total += log(sum) + g.out_scale[cell] + g.in_scale[cell] - g.log_pw[it.sentence];
        } else {
          alive = false;
        }
      }
      if (alive) g_score = total + sh_pre[pair.y];
    }
    if (lane == 0) sh_pair[q] = g_score;
  }
  __syncthreads();
  TakeUnaryPairs(p.num_symbols, p.pair_begin, p.pair, sh_pre, sh_pair, m, cell);
}

// Keep's copy: run r moves rows [src_first, src_first + rows) of `src` to rows from dst_first of
// `dst`, row_len values a row. kCopySlices blocks per run (a long sentence's charts are megabytes).
constexpr int kCopySlices = 16;
struct CopyRun {
  long long src_first, dst_first, rows;
};
__global__ void CopyRunsKernel(const double* src, double* dst, int row_len, const CopyRun* runs) {
  const CopyRun run = runs[blockIdx.x];
  const long long values = run.rows * row_len;
  const double* from = src + run.src_first * row_len;
  double* to = dst + run.dst_first * row_len;
  for (long long v = (long long)blockIdx.y * blockDim.x + threadIdx.x; v < values;
       v += (long long)blockDim.x * gridDim.y)
    to[v] = from[v];
}

__global__ void FillKernel(double* values, long long count, double value) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) values[i] = value;
}

int64_t NumCells(int32_t n) { return int64_t(n) * (n + 1) / 2; }

class DeviceProductMaxRuleImpl : public DeviceProductMaxRule {
 public:
  bool Init(const std::vector<const DeviceInsideOutside*>& members,
            const std::vector<std::vector<int32_t>>& member_symbol,
            const std::vector<uint8_t>& is_tag, size_t max_batch_bytes, std::string* error) {
    if (!RequireDevice(error)) return false;
    const int num_members = static_cast<int>(members.size());
    if (num_members < 1 || num_members > kMaxProductMembers ||
        static_cast<int>(member_symbol.size()) != num_members) {
      *error = "a device product takes 1 to " + std::to_string(kMaxProductMembers) +
               " grammars, with a symbol map each";
      return false;
    }
    members_ = members;
    std::vector<const DeviceMaxRuleRules*> rules;
    for (int k = 0; k < num_members; ++k) {
      rules.push_back(members[k]->MaxRuleRules());
      if (!rules.back()) {
        *error = "grammar " + std::to_string(k + 1) + "'s device object has no device rules";
        return false;
      }
      num_states_.push_back(rules.back()->num_states);
    }
    num_symbols_ = rules[0]->num_symbols;
    if (static_cast<int>(is_tag.size()) != num_symbols_) {
      *error = "a device product needs a tag flag per symbol";
      return false;
    }
    for (int k = 0; k < num_members; ++k) {
      if (static_cast<int>(member_symbol[k].size()) != num_symbols_) {
        *error = "grammar " + std::to_string(k + 1) + "'s symbol map has the wrong size";
        return false;
      }
    }
    // The product's rules: grammar 0's base rules and pairs that every grammar has.
    std::vector<const std::vector<int32_t>*> base_symbols, pair_symbols;
    for (const DeviceMaxRuleRules* r : rules) {
      base_symbols.push_back(&r->base_symbols);
      pair_symbols.push_back(&r->pair_symbols);
    }
    ProductLayout layout;
    if (!BuildProductLayout(base_symbols, pair_symbols, member_symbol, num_symbols_, kChunkRules,
                            &layout, error)) {
      return false;
    }
    num_chunks_ = static_cast<int>(layout.chunks.size());
    num_pairs_ = static_cast<int>(layout.pairs.size());
    if (num_chunks_ > 65535) {  // the binary kernel's grid has a block row per chunk
      *error = "the product has too many base rules for the device kernels";
      return false;
    }
    std::vector<int> symbols_flat;
    for (const auto& map : member_symbol)
      symbols_flat.insert(symbols_flat.end(), map.begin(), map.end());
    const std::vector<unsigned char> tags(is_tag.begin(), is_tag.end());
    if (!member_symbol_.Upload(symbols_flat) || !is_tag_.Upload(tags) ||
        !rule_.Upload(AsDevice<int4>(layout.rules)) || !rule_member_.Upload(layout.rule_member) ||
        !chunk_.Upload(AsDevice<int4>(layout.chunks)) ||
        !symbol_chunk_begin_.Upload(layout.chunk_begin) ||
        !pair_.Upload(AsDevice<int2>(layout.pairs)) || !pair_member_.Upload(layout.pair_member) ||
        !pair_begin_.Upload(layout.pair_begin) || !members_dev_.Reserve(num_members)) {
      *error = "could not upload the product's rules to the device";
      return false;
    }
    num_members_ = num_members;
    member_views_.resize(num_members);
    for (int k = 0; k < num_members; ++k) {
      const DeviceMaxRuleRules& r = *rules[k];
      member_views_[k] = ProductMember{r.num_states,
                                       r.symbol_first_state,
                                       r.symbol_num_substates,
                                       r.entry_begin,
                                       r.entry_bc,
                                       r.entry_rule_begin,
                                       r.entry_a,
                                       r.entry_w,
                                       r.pair_rule_begin,
                                       r.pu_parent,
                                       r.pu_child,
                                       r.pu_w};
    }
    int optin = 48 * 1024;
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
    const size_t unary_shared = size_t(num_symbols_ + num_pairs_) * sizeof(double);
    if (!AllowDynamicShared(ProductUnaryKernel, unary_shared, optin, "product unary", error))
      return false;
    cudaDeviceGetAttribute(&num_sms_, cudaDevAttrMultiProcessorCount, 0);
    budget_ = DefaultBatchBudget(max_batch_bytes);
    return stream_.Create(error);
  }

  size_t BytesForSentence(int32_t n) const override {
    const size_t cells = size_t(NumCells(n));
    // Per cell: its item, per symbol the score, info, presence flag and (at most) an entry; per
    // cell of one span (at most n), per chunk a candidate and a work list entry.
    const size_t per_symbol =
        sizeof(double) + sizeof(int4) + 1 + (sizeof(int) + sizeof(double) + sizeof(int4));
    size_t bytes = cells * (sizeof(CellItem) + size_t(num_symbols_) * per_symbol) +
                   size_t(n) * num_chunks_ * (sizeof(Candidate) + sizeof(int2)) + 64;
    for (int states : num_states_) {
      bytes += cells * (2 * size_t(states) + 2) * sizeof(double) +
               size_t(n) * states * sizeof(double) + sizeof(double);
    }
    return bytes;
  }
  size_t BatchBudget() const override { return budget_; }

  IoBatchResult Begin(const std::vector<int32_t>& lengths, std::string* error) override {
    const int positions = static_cast<int>(lengths.size());
    first_cell_.assign(positions, 0);
    first_word_.assign(positions, 0);
    lengths_ = lengths;
    int64_t cells = 0, words = 0;
    int max_n = 0;
    size_t bytes = 0;
    for (int i = 0; i < positions; ++i) {
      first_cell_[i] = cells;
      first_word_[i] = words;
      cells += NumCells(lengths[i]);
      words += lengths[i];
      max_n = std::max(max_n, lengths[i]);
      bytes += BytesForSentence(lengths[i]);
    }
    if (bytes > budget_) {
      *error = "product batch needs " + std::to_string(bytes) + " device bytes, over the budget";
      return IoBatchResult::kOutOfMemory;
    }
    if (cells >= std::numeric_limits<int>::max() / 2 ||
        cells * num_symbols_ >= std::numeric_limits<int>::max()) {
      *error = "product batch has too many cells";
      return IoBatchResult::kOutOfMemory;
    }
    cells_ = cells;
    items_host_.clear();
    level_begin_.assign(max_n + 2, 0);
    max_level_ = 0;
    for (int span = 1; span <= max_n; ++span) {
      level_begin_[span] = static_cast<int>(items_host_.size());
      for (int start = 0; start + span <= max_n; ++start)
        for (int i = 0; i < positions; ++i)
          if (start + span <= lengths[i])
            items_host_.push_back({static_cast<int>(first_cell_[i]), lengths[i], start,
                                   static_cast<int>(first_word_[i]), i, 0});
      max_level_ = std::max(max_level_, static_cast<int>(items_host_.size()) - level_begin_[span]);
    }
    level_begin_[max_n + 1] = static_cast<int>(items_host_.size());
    const size_t maxc = size_t(cells) * num_symbols_;
    bool ok = items_.Reserve(std::max<size_t>(1, items_host_.size())) && score_.Reserve(maxc) &&
              info_.Reserve(maxc) && live_.Reserve(std::max(1, positions)) &&
              candidates_.Reserve(size_t(std::max(1, max_level_)) * std::max(1, num_chunks_)) &&
              list_.Reserve(size_t(std::max(1, max_level_)) * std::max(1, num_chunks_)) &&
              list_counters_.Reserve(2) && present_.Reserve(maxc) &&
              sentence_base_.Reserve(std::max(1, positions));
    for (int k = 0; k < num_members_ && ok; ++k) {
      Store& s = stores_[k];
      const size_t chart = size_t(cells) * num_states_[k];
      ok = s.in.Reserve(chart) && s.out.Reserve(chart) && s.scales.Reserve(2 * size_t(cells)) &&
           s.log_pw.Reserve(std::max(1, positions)) &&
           s.lexical.Reserve(size_t(words) * num_states_[k]);
    }
    if (!ok) {
      FreeBatchBuffers();
      *error =
          "cudaMalloc failed for a product batch of " + std::to_string(positions) + " sentences";
      return IoBatchResult::kOutOfMemory;
    }
    if (!items_host_.empty()) {
      cudaMemcpyAsync(items_.get(), items_host_.data(), items_host_.size() * sizeof(CellItem),
                      cudaMemcpyHostToDevice, stream_.get());
    }
    std::vector<int> base(first_cell_.begin(), first_cell_.end());
    if (positions > 0) {
      cudaMemcpyAsync(sentence_base_.get(), base.data(), base.size() * sizeof(int),
                      cudaMemcpyHostToDevice, stream_.get());
      for (int k = 0; k < num_members_; ++k) {
        FillKernel<<<(positions + 255) / 256, 256, 0, stream_.get()>>>(stores_[k].log_pw.get(),
                                                                       positions, kNegInfD);
      }
    }
    return WaitForStream(stream_.get(), error) ? IoBatchResult::kOk : IoBatchResult::kFailed;
  }

  IoBatchResult Keep(int k, const std::vector<size_t>& positions, std::string* error) override {
    if (positions.empty()) return IoBatchResult::kOk;
    DeviceBatchCharts from;
    if (k < 0 || k >= num_members_ || !members_[k]->LastBatchCharts(&from) ||
        from.first_cell.size() != positions.size()) {
      *error = "grammar " + std::to_string(k + 1) + " has no device charts of this batch to keep";
      return IoBatchResult::kFailed;
    }
    std::vector<CopyRun> cell_runs, word_runs, sentence_runs;
    for (size_t j = 0; j < positions.size(); ++j) {
      const size_t i = positions[j];
      if (i >= lengths_.size()) {
        *error = "product batch position out of range";
        return IoBatchResult::kFailed;
      }
      cell_runs.push_back({from.first_cell[j], first_cell_[i], NumCells(lengths_[i])});
      word_runs.push_back({from.first_word[j], first_word_[i], lengths_[i]});
      sentence_runs.push_back({static_cast<long long>(j), static_cast<long long>(i), 1});
    }
    const size_t runs = positions.size();
    if (!runs_.Reserve(3 * runs)) {
      *error = "cudaMalloc failed for the product's copy lists";
      return IoBatchResult::kOutOfMemory;
    }
    cell_runs.insert(cell_runs.end(), word_runs.begin(), word_runs.end());
    cell_runs.insert(cell_runs.end(), sentence_runs.begin(), sentence_runs.end());
    cudaStream_t stream = stream_.get();
    cudaMemcpyAsync(runs_.get(), cell_runs.data(), cell_runs.size() * sizeof(CopyRun),
                    cudaMemcpyHostToDevice, stream);
    Store& s = stores_[k];
    const int states = num_states_[k];
    const dim3 blocks(static_cast<unsigned>(runs), kCopySlices);
    CopyRunsKernel<<<blocks, 256, 0, stream>>>(from.inside, s.in.get(), states, runs_.get());
    CopyRunsKernel<<<blocks, 256, 0, stream>>>(from.outside, s.out.get(), states, runs_.get());
    CopyRunsKernel<<<blocks, 256, 0, stream>>>(from.inside_scale, s.scales.get(), 1, runs_.get());
    CopyRunsKernel<<<blocks, 256, 0, stream>>>(from.outside_scale, s.scales.get() + cells_, 1,
                                               runs_.get());
    CopyRunsKernel<<<blocks, 256, 0, stream>>>(from.lexical, s.lexical.get(), states,
                                               runs_.get() + runs);
    CopyRunsKernel<<<blocks, 256, 0, stream>>>(from.log_likelihood, s.log_pw.get(), 1,
                                               runs_.get() + 2 * runs);
    // The member's next batch overwrites what was read: finish first.
    return WaitForStream(stream, error) ? IoBatchResult::kOk : IoBatchResult::kFailed;
  }

  IoBatchResult Run(std::vector<IoResult>* results, std::string* error) override {
    const int positions = static_cast<int>(lengths_.size());
    results->assign(positions, IoResult{});
    for (IoResult& r : *results) r.log_likelihood = kNegInfD;
    if (positions == 0) return IoBatchResult::kOk;
    cudaStream_t stream = stream_.get();
    const int num_members = num_members_;
    for (int k = 0; k < num_members; ++k) {
      ProductMember& v = member_views_[k];
      Store& s = stores_[k];
      v.in = s.in.get();
      v.out = s.out.get();
      v.in_scale = s.scales.get();
      v.out_scale = s.scales.get() + cells_;
      v.log_pw = s.log_pw.get();
      v.lexical = s.lexical.get();
    }
    cudaMemcpyAsync(members_dev_.get(), member_views_.data(), num_members * sizeof(ProductMember),
                    cudaMemcpyHostToDevice, stream);
    const ProductArrays p{num_members,          num_symbols_,       members_dev_.get(),
                          member_symbol_.get(), is_tag_.get(),      rule_.get(),
                          rule_member_.get(),   chunk_.get(),       symbol_chunk_begin_.get(),
                          pair_.get(),          pair_member_.get(), pair_begin_.get(),
                          live_.get()};
    ProductLiveKernel<<<(positions + 127) / 128, 128, 0, stream>>>(p, positions, live_.get());
    const MaxcChart m{score_.get(), info_.get()};
    const int max_n = static_cast<int>(level_begin_.size()) - 2;
    const size_t unary_shared = size_t(num_symbols_ + num_pairs_) * sizeof(double);
    for (int span = 1; span <= max_n; ++span) {
      const int offset = level_begin_[span], count = level_begin_[span + 1] - offset;
      if (count == 0) continue;
      if (span == 1) {
        ProductTagKernel<<<count, kThreads, 0, stream>>>(p, m, items_.get(), offset);
      } else {
        if (num_chunks_ > 0) {
          // Only the (cell, chunk) blocks whose parent every grammar has: a work list.
          ProductPresenceKernel<<<count, kThreads, 0, stream>>>(p, items_.get(), offset, span,
                                                                present_.get());
          cudaMemsetAsync(list_counters_.get(), 0, 2 * sizeof(int), stream);
          const long long pairs = (long long)count * num_chunks_;
          ListProductBlocksKernel<<<static_cast<int>((pairs + 255) / 256), 256, 0, stream>>>(
              p, items_.get(), offset, span, count, num_chunks_, present_.get(), candidates_.get(),
              list_.get(), list_counters_.get());
          const MaxcWork work{list_.get(), list_counters_.get(), list_counters_.get() + 1};
          const int grid = static_cast<int>(std::min<long long>(pairs, (long long)num_sms_ * 8));
          ProductBinaryKernel<<<grid, kThreads, 0, stream>>>(p, m, items_.get(), offset, span,
                                                             candidates_.get(), num_chunks_, work);
        }
        const int threads = count * num_symbols_;
        MaxcMergeKernel<<<(threads + 255) / 256, 256, 0, stream>>>(
            num_symbols_, m, rule_.get(), items_.get(), offset, count, span, candidates_.get(),
            num_chunks_, symbol_chunk_begin_.get());
      }
      ProductUnaryKernel<<<count, kThreads, unary_shared, stream>>>(p, m, items_.get(), offset,
                                                                    span, num_pairs_);
    }
    // The finite entries back, as DeviceInsideOutside's max-rule pass returns its own.
    MaxcHostEntries& host = host_[next_host_];
    next_host_ = 1 - next_host_;
    bool out_of_memory = false;
    if (!CopyMaxcEntries(m, (long long)cells_ * num_symbols_, num_symbols_, sentence_base_.get(),
                         positions, stream, &entries_, &host, error, &out_of_memory)) {
      return out_of_memory ? IoBatchResult::kOutOfMemory : IoBatchResult::kFailed;
    }
    if (!WaitForStream(stream, error)) return IoBatchResult::kFailed;
    for (int i = 0; i < positions; ++i) host.View(i, &(*results)[i]);
    return IoBatchResult::kOk;
  }

 private:
  void FreeBatchBuffers() {
    items_.Free(), score_.Free(), info_.Free(), candidates_.Free(), list_.Free(), present_.Free();
    for (Store& s : stores_) s.in.Free(), s.out.Free(), s.scales.Free(), s.lexical.Free();
  }

  // One grammar's kept charts, the batch's cells in position order.
  struct Store {
    DeviceArray<double> in, out, scales, log_pw, lexical;  // scales: inside's, then outside's
  };

  std::vector<const DeviceInsideOutside*> members_;
  std::vector<int> num_states_;
  int num_symbols_ = 0, num_chunks_ = 0, num_pairs_ = 0;
  size_t budget_ = 0;
  int num_sms_ = 132;
  CudaStream stream_;
  // The product's rules (product_max_rule.h).
  DeviceArray<int> member_symbol_, rule_member_, symbol_chunk_begin_, pair_member_, pair_begin_;
  DeviceArray<unsigned char> is_tag_;
  DeviceArray<int4> rule_, chunk_;
  DeviceArray<int2> pair_;
  std::vector<ProductMember> member_views_;
  DeviceArray<ProductMember> members_dev_;
  // The batch.
  std::vector<int32_t> lengths_;
  std::vector<int64_t> first_cell_, first_word_;
  int64_t cells_ = 0;
  std::vector<CellItem> items_host_;
  std::vector<int> level_begin_;
  int max_level_ = 0;
  int num_members_ = 0;
  std::array<Store, kMaxProductMembers> stores_;
  DeviceArray<CellItem> items_;
  DeviceArray<double> score_;
  DeviceArray<int4> info_;
  DeviceArray<unsigned char> live_;
  DeviceArray<Candidate> candidates_;
  DeviceArray<int2> list_;              // one span's binary work list
  DeviceArray<int> list_counters_;      // its length and next entry
  DeviceArray<unsigned char> present_;  // [cell][symbol]: ProductPresenceKernel
  DeviceArray<CopyRun> runs_;
  DeviceArray<int> sentence_base_;
  MaxcDeviceEntries entries_;
  MaxcHostEntries host_[2];  // alternating: the views of a Run stay valid through the next
  int next_host_ = 0;
};

}  // namespace

std::unique_ptr<DeviceProductMaxRule> DeviceProductMaxRule::Create(
    const std::vector<const DeviceInsideOutside*>& members,
    const std::vector<std::vector<int32_t>>& member_symbol, const std::vector<uint8_t>& is_tag,
    size_t max_batch_bytes, std::string* error) {
  error->clear();
  auto impl = std::make_unique<DeviceProductMaxRuleImpl>();
  if (!impl->Init(members, member_symbol, is_tag, max_batch_bytes, error)) {
    if (error->empty()) *error = "could not set up the device product";
    return nullptr;
  }
  return impl;
}

}  // namespace cky::cuda
