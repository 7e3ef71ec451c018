// Sum-product inside/outside and max-rule passes on a CUDA device: the batch dispatch
// (DeviceInsideOutsideImpl) over the kernels of charts.cuh, pair_sum.cuh and max_rule_kernels.cuh.
// cuda/inside_outside/inside_outside.h describes the mapping.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cuda/common/device_helpers.cuh"
#include "cuda/common/host_parallel.h"
#include "cuda/inside_outside/charts.cuh"
#include "cuda/inside_outside/inside_outside.h"
#include "cuda/inside_outside/max_rule_kernels.cuh"
#include "cuda/inside_outside/pair_sum.cuh"
#include "cuda/inside_outside/sum_layouts.h"

namespace cky::cuda {
namespace {

using namespace io;  // NOLINT: the kernels of this file's family

// ---------------------------------------------------------------------------------------------
// Host side.

int64_t NumCells(int32_t n) { return int64_t(n) * (n + 1) / 2; }

class DeviceInsideOutsideImpl : public DeviceInsideOutside {
 public:
  size_t BytesForSentence(int32_t n) const override {
    const size_t cells = size_t(NumCells(n));
    return cells * (size_t(num_states_) * sizeof(double) * 3 + 4 * sizeof(double) +
                    size_t(num_symbols_) * (2 + sizeof(double) + sizeof(int4)) + sizeof(CellItem)) +
           size_t(n) * (size_t(num_states_) * sizeof(double) +
                        num_chunks_ * (sizeof(Candidate) + sizeof(int2)) + 2 * num_symbols_ +
                        size_t(MaxLivePairs(live_)) * sizeof(int));
  }
  size_t BatchBudget() const override { return budget_; }
  int32_t MaxLength() const override {
    const int64_t optin = max_shared_optin_;
    // Max-rule binary kernel: Q, outpre, [split][b] rows, split flags.
    const int64_t maxc = (optin - int64_t(max_q_ + max_substates_) * 8) / (max_substates_ * 8 + 4);
    // Pair-sum kernel: kG cells' S tile, then 16 bytes per partner and cell.
    int64_t pair = std::numeric_limits<int32_t>::max();
    for (const PairLayout& l : layouts_) {
      pair = std::min<int64_t>(
          pair,
          (optin - int64_t(cells_per_group_ + 1) * l.max_bc * 8) / (cells_per_group_ * 16) + 1);
    }
    return static_cast<int32_t>(std::max<int64_t>(1, std::min(maxc, pair)));
  }

  bool Init(const GrammarView& g, const DeviceInsideOutsideOptions& options, std::string* error) {
    num_states_ = g.num_states;
    num_symbols_ = g.num_symbols;
    cells_per_group_ = options.cells_per_group == 16 ? 16 : 8;
    const int mk = options.max_rule_kernel;
    max_rule_kernel_ = mk == 1 || mk == 2 || mk == 7 || mk == 9 || mk == 11 || mk == 14 ? mk : 13;
    pair_sum_kernel_ =
        options.pair_sum_kernel >= 1 && options.pair_sum_kernel <= 3 ? options.pair_sum_kernel : 5;
    masked_dispatch_ =
        options.masked_dispatch == 1 || options.masked_dispatch == 2 ? options.masked_dispatch : 3;
    if (masked_dispatch_ == 3 && (num_symbols_ + 31) / 32 > kMaxSymbolWords) masked_dispatch_ = 2;
    for (int s = 0; s < num_symbols_; ++s) {
      if (g.symbol_num_substates[s] > kBandLimit) {
        *error = "a symbol has more substates than the sum-product kernels support";
        return false;
      }
    }
    // The host's work first (the rule layouts: most of the set-up), so that it runs while the
    // process's CUDA context is still being made on another thread (apps/parse_command.cpp).
    // Sum unaries by parent (inside) and by child (outside).
    std::vector<int> by_parent_begin(num_states_ + 1, 0), by_child_begin(num_states_ + 1, 0);
    std::vector<int> child(g.num_sum_unary), parent(g.num_sum_unary);
    std::vector<double> pw(g.num_sum_unary), cw(g.num_sum_unary);
    {
      for (int64_t u = 0; u < g.num_sum_unary; ++u) {
        ++by_parent_begin[g.sum_unary_parent[u] + 1];
        ++by_child_begin[g.sum_unary_child[u] + 1];
      }
      for (int s = 0; s < num_states_; ++s) {
        by_parent_begin[s + 1] += by_parent_begin[s];
        by_child_begin[s + 1] += by_child_begin[s];
      }
      std::vector<int> pos_p(by_parent_begin.begin(), by_parent_begin.end() - 1);
      std::vector<int> pos_c(by_child_begin.begin(), by_child_begin.end() - 1);
      for (int64_t u = 0; u < g.num_sum_unary; ++u) {
        const double p = std::exp(g.sum_unary_log_prob[u]);
        const int i = pos_p[g.sum_unary_parent[u]]++;
        child[i] = g.sum_unary_child[u];
        pw[i] = p;
        const int j = pos_c[g.sum_unary_child[u]]++;
        parent[j] = g.sum_unary_parent[u];
        cw[j] = p;
      }
    }
    // The three pair-sum layouts and the max-rule layout, built on host threads side by side
    // (1.3 s one after the other on en_sm6s on the development machine).
    std::array<PairSumLayout, 3> pair_sums;
    MaxRuleLayout max_rule;
    bool max_rule_fits = false;
    {
      std::vector<std::thread> builders;
      const PairSumPass passes[3] = {PairSumPass::kInside, PairSumPass::kOutLeft,
                                     PairSumPass::kOutRight};
      for (int k = 0; k < 3; ++k)
        builders.emplace_back([&, k] { pair_sums[k] = BuildPairSumLayout(g, passes[k]); });
      builders.emplace_back(
          [&] { max_rule_fits = BuildMaxRuleLayout(g, max_rule_kernel_, &max_rule); });
      for (std::thread& t : builders) t.join();
    }

    // Then the device.
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      cudaGetLastError();
      *error = "no CUDA device";
      return false;
    }
    cudaDeviceGetAttribute(&max_shared_optin_, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
    if (!AllowDynamicShared(UnaryNormalizeKernel, size_t(num_states_) * sizeof(double),
                            max_shared_optin_, "unary", error)) {
      return false;
    }
    cudaDeviceGetAttribute(&num_sms_, cudaDevAttrMultiProcessorCount, 0);
    auto ints = [](const int32_t* p, int64_t n) { return std::vector<int>(p, p + n); };
    bool ok = state_symbol_.Upload(ints(g.state_symbol, g.num_states)) &&
              first_state_.Upload(ints(g.symbol_first_state, g.num_symbols)) &&
              num_substates_.Upload(ints(g.symbol_num_substates, g.num_symbols));
    ok = ok && up_begin_.Upload(by_parent_begin) && up_child_.Upload(child) && up_w_.Upload(pw) &&
         uc_begin_.Upload(by_child_begin) && uc_parent_.Upload(parent) && uc_w_.Upload(cw);
    ok = ok && UploadPairLayout(pair_sums[0], &layouts_[kInside]) &&
         UploadPairLayout(pair_sums[1], &layouts_[kOutLeft]) &&
         UploadPairLayout(pair_sums[2], &layouts_[kOutRight]);
    for (int k = 0; k < 3 && masked_dispatch_ == 3; ++k)
      ok = ok && UploadLiveLayout(pair_sums[k], g.state_symbol, num_symbols_, &live_[k]);
    ok = ok && max_rule_fits && UploadMaxRule(max_rule);
    if (!ok) {
      *error = "could not upload the grammar to the device";
      return false;
    }
    if (options.max_batch_bytes > 0) {
      budget_ = options.max_batch_bytes;
    } else {
      size_t free_bytes = 0, total = 0;
      cudaMemGetInfo(&free_bytes, &total);
      budget_ = static_cast<size_t>(free_bytes * options.free_memory_share);
    }
    if (cudaStreamCreate(&stream_) != cudaSuccess) {
      *error = "cudaStreamCreate failed";
      return false;
    }
    return true;
  }

  ~DeviceInsideOutsideImpl() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    for (cudaEvent_t e : kind_events_) cudaEventDestroy(e);
    if (stream_) cudaStreamDestroy(stream_);
  }

  void SetProfiling(bool on) override {
    profile_ = on;
    profile_ms_.fill(0);
    prepare_ms_ = 0;
    kind_ms_.fill(0);
    for (auto& spans : span_ms_) spans.fill(0);
    profile_batches_ = 0;
  }

  std::string ProfileReport() const override {
    char text[512];
    std::snprintf(text, sizeof(text),
                  "%d batches: host wall %.1f ms (before the device's first step: memory, cell "
                  "lists %.1f); device: setup %.1f, inside %.1f, outside %.1f, "
                  "max-rule %.1f, copy back %.1f ms; kernels: pair-sum inside %.1f, pair-sum "
                  "outside %.1f, unary+normalize %.1f, max-rule binary %.1f, merge %.1f, unary "
                  "%.1f, other %.1f ms",
                  profile_batches_, profile_ms_[0], prepare_ms_, profile_ms_[1], profile_ms_[2],
                  profile_ms_[3], profile_ms_[4], profile_ms_[5], kind_ms_[kKindPairInside],
                  kind_ms_[kKindPairOutside], kind_ms_[kKindUnary], kind_ms_[kKindMaxcBinary],
                  kind_ms_[kKindMaxcMerge], kind_ms_[kKindMaxcUnary], kind_ms_[kKindOther]);
    std::string report = text;
    // Where in the chart the time goes: per kernel kind, span lengths 1-4, 5-8, ... 65+.
    const char* names[kNumKinds] = {"pair-sum inside",
                                    "pair-sum outside",
                                    "unary+normalize",
                                    "max-rule binary",
                                    "merge",
                                    "max-rule unary",
                                    "other"};
    report += "; by span length (1-4, 5-8, 9-16, 17-32, 33-64, 65+):";
    for (int kind = 0; kind < kNumKinds; ++kind) {
      report += std::string(kind ? ";" : "") + " " + names[kind];
      for (int b = 0; b < kSpanBuckets; ++b) {
        std::snprintf(text, sizeof(text), "%s%.1f", b ? "/" : " ", span_ms_[kind][b]);
        report += text;
      }
    }
    return report;
  }

  IoBatchResult MaxRuleBatch(const std::vector<IoSentence>& batch, bool keep_charts,
                             std::vector<IoResult>* results, std::string* error) override {
    return MaskedMaxRuleBatch(batch, nullptr, keep_charts, results, error);
  }

  IoBatchResult MaskedMaxRuleBatch(const std::vector<IoSentence>& batch,
                                   const uint8_t* device_allowed, bool keep_charts,
                                   std::vector<IoResult>* results, std::string* error) override {
    return Timed(batch, device_allowed, keep_charts, /*max_rule=*/true, results, error);
  }

  IoBatchResult MaskedMaxRuleBatchAfter(const void* mask_ready,
                                        const std::vector<IoSentence>& batch,
                                        const uint8_t* device_allowed, bool keep_charts,
                                        std::vector<IoResult>* results,
                                        std::string* error) override {
    wait_for_ = static_cast<cudaEvent_t>(const_cast<void*>(mask_ready));
    const IoBatchResult result =
        Timed(batch, device_allowed, keep_charts, /*max_rule=*/true, results, error);
    wait_for_ = nullptr;
    return result;
  }

  IoBatchResult InsideOutsideBatch(const std::vector<IoSentence>& batch,
                                   const uint8_t* device_allowed, std::vector<IoResult>* results,
                                   std::string* error) override {
    return Timed(batch, device_allowed, /*keep_charts=*/false, /*max_rule=*/false, results, error);
  }

  bool LastBatchCharts(DeviceBatchCharts* charts) const override {
    if (!last_ok_) return false;
    const int64_t cells = last_cells_;
    charts->inside = in_.get();
    charts->outside = out_.get();
    charts->inside_scale = scales_.get();
    charts->outside_scale = scales_.get() + cells;
    charts->log_likelihood = log_likelihood_.get();
    charts->lexical = lexical_.get();
    charts->first_cell = last_first_cell_;
    charts->first_word = last_first_word_;
    return true;
  }

  const DeviceMaxRuleRules* MaxRuleRules() const override { return &rules_; }

 private:
  IoBatchResult Timed(const std::vector<IoSentence>& batch, const uint8_t* device_allowed,
                      bool keep_charts, bool max_rule, std::vector<IoResult>* results,
                      std::string* error) {
    const auto wall_begin = std::chrono::steady_clock::now();
    last_ok_ = false;
    last_first_cell_.clear();
    last_first_word_.clear();
    last_cells_ = 0;
    const IoBatchResult result = Run(batch, device_allowed, keep_charts, max_rule, results, error);
    // A failed batch may leave work queued that reads the caller's mask (the pruner's, which its
    // next batch writes on a stream of its own): let it finish before returning.
    if (result != IoBatchResult::kOk) cudaStreamSynchronize(stream_);
    last_ok_ = result == IoBatchResult::kOk;
    if (profile_ && result == IoBatchResult::kOk) {
      ++profile_batches_;
      profile_ms_[0] +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_begin)
              .count();
      for (int k = 0; k < 5; ++k) {
        float ms = 0;
        cudaEventElapsedTime(&ms, events_[k], events_[k + 1]);
        profile_ms_[k + 1] += ms;
      }
      for (size_t k = 0; k + 1 < kind_of_.size(); ++k) {
        float ms = 0;
        cudaEventElapsedTime(&ms, kind_events_[k], kind_events_[k + 1]);
        kind_ms_[kind_of_[k]] += ms;
        span_ms_[kind_of_[k]][SpanBucket(kind_span_[k])] += ms;
      }
    }
    return result;
  }

  enum KernelKind {
    kKindPairInside,
    kKindPairOutside,
    kKindUnary,
    kKindMaxcBinary,
    kKindMaxcMerge,
    kKindMaxcUnary,
    kKindOther,
    kNumKinds
  };
  // Profiling: the launches from here to the next Kind() call are of `kind`.
  void Kind(KernelKind kind) {
    if (!profile_) return;
    if (kind_of_.size() == kind_events_.size()) {
      cudaEvent_t e;
      cudaEventCreate(&e);
      kind_events_.push_back(e);
    }
    cudaEventRecord(kind_events_[kind_of_.size()], stream_);
    kind_of_.push_back(kind);
    kind_span_.push_back(span_);
  }
  // The profile's span-length buckets: 1-4, 5-8, 9-16, 17-32, 33-64, 65 and more words.
  static int SpanBucket(int span) {
    int bucket = 0;
    for (int top = 4; bucket < kSpanBuckets - 1 && span > top; top *= 2) ++bucket;
    return bucket;
  }

  static constexpr int kSpanBuckets = 6;
  int span_ = 0;                // profiling: the span length the launches being queued are of
  std::vector<int> kind_span_;  // the span length of each Kind() call of this batch

  void Mark(int index) {
    if (!profile_) return;
    while (static_cast<int>(events_.size()) <= index) {
      cudaEvent_t e;
      cudaEventCreate(&e);
      events_.push_back(e);
    }
    cudaEventRecord(events_[index], stream_);
  }

  // max_rule false: the inside and outside passes only (InsideOutsideBatch).
  IoBatchResult Run(const std::vector<IoSentence>& batch, const uint8_t* device_allowed,
                    bool keep_charts, bool max_rule, std::vector<IoResult>* results,
                    std::string* error) {
    const auto run_begin = std::chrono::steady_clock::now();
    results->assign(batch.size(), IoResult{});
    kind_of_.clear();
    kind_span_.clear();
    span_ = 0;
    if (batch.empty()) return IoBatchResult::kOk;
    const int num_sentences = static_cast<int>(batch.size());
    std::vector<int> base(num_sentences), word(num_sentences), top(num_sentences);
    int64_t cells = 0, words = 0;
    int max_n = 0;
    size_t bytes = 0;
    for (int i = 0; i < num_sentences; ++i) {
      base[i] = static_cast<int>(cells);
      word[i] = static_cast<int>(words);
      top[i] = base[i] + ChartCellIndex(batch[i].length, 0, batch[i].length);
      cells += NumCells(batch[i].length);
      words += batch[i].length;
      max_n = std::max(max_n, batch[i].length);
      bytes += BytesForSentence(batch[i].length);
    }
    if (bytes > budget_) {
      *error = "batch needs " + std::to_string(bytes) + " device bytes, over the budget";
      return IoBatchResult::kOutOfMemory;
    }
    // Cells, and the max-rule entries that come back (counted and placed with 32-bit offsets).
    if (cells >= std::numeric_limits<int>::max() / 2 ||
        cells * num_symbols_ >= std::numeric_limits<int>::max()) {
      *error = "batch has too many cells";
      return IoBatchResult::kOutOfMemory;
    }
    std::vector<CellItem> items;
    items.reserve(cells);
    std::vector<int> level_begin(max_n + 2, 0);
    int max_level = 0;
    for (int span = 1; span <= max_n; ++span) {
      level_begin[span] = static_cast<int>(items.size());
      for (int start = 0; start + span <= max_n; ++start)
        for (int i = 0; i < num_sentences; ++i)
          if (start + span <= batch[i].length)
            items.push_back({base[i], batch[i].length, start, word[i], i, 0});
      max_level = std::max(max_level, static_cast<int>(items.size()) - level_begin[span]);
    }
    level_begin[max_n + 1] = static_cast<int>(items.size());
    last_first_cell_.assign(base.begin(), base.end());
    last_first_word_.assign(word.begin(), word.end());
    last_cells_ = cells;

    const size_t chart = size_t(cells) * num_states_;
    const size_t maxc = size_t(cells) * num_symbols_;
    if (!in_.Reserve(chart) || !out_.Reserve(chart) || !acc_.Reserve(chart) ||
        !scales_.Reserve(3 * size_t(cells)) || !present_.Reserve(2 * maxc) ||
        !log_likelihood_.Reserve(num_sentences) || !top_.Reserve(num_sentences) ||
        !sentence_base_.Reserve(num_sentences) || !lexical_.Reserve(size_t(words) * num_states_) ||
        !items_.Reserve(items.size()) ||
        (max_rule &&  // the max-rule pass's arrays
         (!maxc_score_.Reserve(maxc) || !maxc_info_.Reserve(maxc) ||
          !candidates_.Reserve(size_t(max_level) * num_chunks_) ||
          (device_allowed != nullptr && masked_dispatch_ == 3 &&
           (!maxc_list_.Reserve(size_t(max_level) * num_chunks_) ||
            !maxc_counters_.Reserve(4)))))) {
      in_.Free(), out_.Free(), acc_.Free(), scales_.Free(), present_.Free(), lexical_.Free();
      items_.Free(), maxc_score_.Free(), maxc_info_.Free(), candidates_.Free(), maxc_list_.Free();
      *error = "cudaMalloc failed for a batch of " + std::to_string(num_sentences) + " sentences";
      return IoBatchResult::kOutOfMemory;
    }
    HostBuffers& host = host_[next_host_];
    next_host_ = 1 - next_host_;
    if (!host.log_likelihood.Reserve(num_sentences) ||
        (keep_charts && (!host.in.Reserve(chart) || !host.out.Reserve(chart) ||
                         !host.scales.Reserve(2 * size_t(cells))))) {
      *error = "cudaMallocHost failed";
      return IoBatchResult::kOutOfMemory;
    }

    // Masked dispatch 2 and 3 (only with a mask: the exact passes stay as they were measured).
    const bool compact = device_allowed != nullptr && masked_dispatch_ >= 2;
    list_dispatch_ = device_allowed != nullptr && masked_dispatch_ == 3;
    if (compact && !list_dispatch_ &&
        !group_present_.Reserve(size_t(max_level + 7) / 8 * 2 * num_symbols_)) {
      *error = "cudaMalloc failed for the pair-sum group flags";
      return IoBatchResult::kOutOfMemory;
    }
    if (list_dispatch_ &&
        !live_buffers_.Reserve(MaxLivePairs(live_), MaxTiles(layouts_), max_level)) {
      *error = "cudaMalloc failed for the pair-sum work lists";
      return IoBatchResult::kOutOfMemory;
    }
    Charts c{in_.get(),
             scales_.get(),
             out_.get(),
             scales_.get() + cells,
             acc_.get(),
             scales_.get() + 2 * cells,
             present_.get(),
             present_.get() + maxc,
             log_likelihood_.get(),
             num_states_,
             num_symbols_,
             device_allowed};
    c.dead_cells = compact;
    MaxcChart m{maxc_score_.get(), maxc_info_.get()};

    if (profile_) {
      prepare_ms_ +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - run_begin)
              .count();
    }
    // Behind another stream's event (MaskedMaxRuleBatchAfter), the uploads below run beside that
    // stream's work, and the profile's set-up is what is left after the wait (none).
    if (!wait_for_) Mark(0);
    // Lexical rows, gathered through the pinned ring (a fresh pageable buffer cost page faults
    // and a staged copy, a pinned one the batch's size its allocation and release:
    // bench/RESULTS-LOG.md). The previous batch's copies finished at that batch's synchronization.
    std::vector<size_t> row_begin(num_sentences + 1, 0);
    for (int i = 0; i < num_sentences; ++i)
      row_begin[i + 1] = row_begin[i] + size_t(batch[i].length) * num_states_;
    if (!row_upload_.UploadRows(
            lexical_.get(), row_begin.back(), row_begin, [&](int i) { return batch[i].lexical; },
            stream_)) {
      *error = "the lexical rows' upload failed";
      return IoBatchResult::kFailed;
    }
    cudaMemcpyAsync(items_.get(), items.data(), items.size() * sizeof(CellItem),
                    cudaMemcpyHostToDevice, stream_);
    cudaMemcpyAsync(top_.get(), top.data(), top.size() * sizeof(int), cudaMemcpyHostToDevice,
                    stream_);
    cudaMemcpyAsync(sentence_base_.get(), base.data(), base.size() * sizeof(int),
                    cudaMemcpyHostToDevice, stream_);
    cudaMemsetAsync(acc_.get(), 0, chart * sizeof(double), stream_);
    cudaMemsetAsync(present_.get(), 0, 2 * maxc, stream_);
    if (wait_for_) {
      if (cudaStreamWaitEvent(stream_, wait_for_, 0) != cudaSuccess) {
        *error = "cudaStreamWaitEvent failed";
        return IoBatchResult::kFailed;
      }
      Mark(0);
    }
    Mark(1);

    // Inside.
    for (int span = 1; span <= max_n; ++span) {
      const int offset = level_begin[span], count = level_begin[span + 1] - offset;
      span_ = span;
      Kind(kKindOther);
      if (span == 1) {
        LexicalKernel<<<count, kThreads, 0, stream_>>>(c, items_.get(), offset, lexical_.get());
      } else {
        RefScaleKernel<<<(count + 127) / 128, 128, 0, stream_>>>(c, items_.get(), offset, count,
                                                                 span, 0);
        Kind(kKindPairInside);
        if (!LaunchPairSum<kInside>(c, offset, count, span, span - 1, error))
          return IoBatchResult::kFailed;
      }
      Kind(kKindUnary);
      UnaryNormalizeKernel<<<count, kThreads, num_states_ * sizeof(double), stream_>>>(
          c, items_.get(), offset, span, up_begin_.get(), up_child_.get(), up_w_.get(),
          state_symbol_.get(), 0);
    }
    Kind(kKindOther);
    LikelihoodKernel<<<(num_sentences + 127) / 128, 128, 0, stream_>>>(c, top_.get(),
                                                                       num_sentences);
    Mark(2);

    // Outside.
    cudaMemsetAsync(acc_.get(), 0, chart * sizeof(double), stream_);
    for (int span = max_n; span >= 1; --span) {
      const int offset = level_begin[span], count = level_begin[span + 1] - offset;
      span_ = span;
      Kind(kKindOther);
      RefScaleKernel<<<(count + 127) / 128, 128, 0, stream_>>>(c, items_.get(), offset, count, span,
                                                               1);
      Kind(kKindPairOutside);
      if (span < max_n) {
        if (!LaunchPairSum<kOutLeft>(c, offset, count, span, max_n - span, error) ||
            !LaunchPairSum<kOutRight>(c, offset, count, span, max_n - span, error))
          return IoBatchResult::kFailed;
      }
      Kind(kKindUnary);
      UnaryNormalizeKernel<<<count, kThreads, num_states_ * sizeof(double), stream_>>>(
          c, items_.get(), offset, span, uc_begin_.get(), uc_parent_.get(), uc_w_.get(),
          state_symbol_.get(), 1);
    }
    Mark(3);
    if (!max_rule) return FinishPassesOnly(num_sentences, results, error);

    // Max-rule.
    const MaxRuleArrays r = MaxRuleView();
    if (!AllowDynamicShared(MaxcUnaryKernel, (num_symbols_ + num_pairs_) * sizeof(double),
                            max_shared_optin_, "max-rule unary", error)) {
      return IoBatchResult::kFailed;
    }
    for (int span = 1; span <= max_n; ++span) {
      const int offset = level_begin[span], count = level_begin[span + 1] - offset;
      span_ = span;
      if (span == 1) {
        Kind(kKindOther);
        MaxcLexicalKernel<<<count, kThreads, 0, stream_>>>(c, m, r, items_.get(), offset,
                                                           lexical_.get());
      } else {
        const size_t shared =
            (size_t(max_q_) + max_substates_ + size_t(span) * max_substates_) * sizeof(double) +
            span * sizeof(int);
        // AllowDynamicShared counts the kernels' static shared bytes too (a 134-word sentence
        // of gum_sm5.gr failed with "invalid argument" when only the dynamic bytes were).
        Kind(kKindMaxcBinary);
        const size_t entry_shared = size_t(max_substates_) * sizeof(double);
        if (max_rule_kernel_ == 7) {
          if (num_chunks_ > 0)
            MaxcBinaryEntryKernel<4><<<dim3(count, num_chunks_), kThreads, entry_shared, stream_>>>(
                c, m, r, items_.get(), offset, span, candidates_.get(), num_chunks_, nullptr);
        } else if (max_rule_kernel_ >= 9) {
          // The chunks of big base rules as variant 2 (Q from entries), the others as variant 7.
          if (!AllowDynamicShared(MaxcBinaryKernel<true>, shared, max_shared_optin_, "max-rule",
                                  error))
            return IoBatchResult::kFailed;
          const int big = static_cast<int>(block_chunks_.size());
          const int small = static_cast<int>(warp_chunks_.size());
          if (list_dispatch_) {
            // Masked dispatch 3: only the (cell, chunk) blocks whose parent has an outpre.
            cudaMemsetAsync(maxc_counters_.get(), 0, 4 * sizeof(int), stream_);
            const auto list = [&](const int* chunk_list, int chunks, int* counters) {
              const long long threads = (long long)count * chunks;
              ListMaxcBlocksKernel<<<static_cast<int>((threads + 255) / 256), 256, 0, stream_>>>(
                  c, r, items_.get(), offset, span, count, chunk_list, chunks, num_chunks_,
                  candidates_.get(), maxc_list_.get(), counters);
              return MaxcWork{maxc_list_.get(), counters, counters + 1};
            };
            // The blocks a launch starts: enough to fill the device; each takes list entries
            // until none is left.
            const auto grid = [&](int chunks, int per_sm) {
              return static_cast<int>(
                  std::min<long long>((long long)count * chunks, (long long)num_sms_ * per_sm));
            };
            if (big > 0) {
              const MaxcWork work = list(block_chunks_.get(), big, maxc_counters_.get());
              MaxcBinaryKernel<true><<<grid(big, 8), kThreads, shared, stream_>>>(
                  c, m, r, items_.get(), offset, span, max_q_, max_substates_, candidates_.get(),
                  num_chunks_, block_chunks_.get(), work);
            }
            if (small > 0) {
              const MaxcWork work = list(warp_chunks_.get(), small, maxc_counters_.get() + 2);
              MaxcBinaryEntryKernel<4>
                  <<<grid(small, 2048 / warp_block_), warp_block_, entry_shared, stream_>>>(
                      c, m, r, items_.get(), offset, span, candidates_.get(), num_chunks_,
                      warp_chunks_.get(), work);
            }
          } else {
            if (big > 0)
              MaxcBinaryKernel<true><<<dim3(count, big), kThreads, shared, stream_>>>(
                  c, m, r, items_.get(), offset, span, max_q_, max_substates_, candidates_.get(),
                  num_chunks_, block_chunks_.get());
            if (small > 0)
              MaxcBinaryEntryKernel<4><<<dim3(count, small), warp_block_, entry_shared, stream_>>>(
                  c, m, r, items_.get(), offset, span, candidates_.get(), num_chunks_,
                  warp_chunks_.get());
          }
        } else if (max_rule_kernel_ == 1) {
          if (!AllowDynamicShared(MaxcBinaryWarpKernel, shared, max_shared_optin_, "max-rule",
                                  error))
            return IoBatchResult::kFailed;
          if (num_chunks_ > 0)
            MaxcBinaryWarpKernel<<<dim3(count, num_chunks_), kThreads, shared, stream_>>>(
                c, m, r, items_.get(), offset, span, max_q_, candidates_.get(), num_chunks_);
        } else {
          if (!AllowDynamicShared(MaxcBinaryKernel<false>, shared, max_shared_optin_, "max-rule",
                                  error))
            return IoBatchResult::kFailed;
          if (num_chunks_ > 0)
            MaxcBinaryKernel<false><<<dim3(count, num_chunks_), kThreads, shared, stream_>>>(
                c, m, r, items_.get(), offset, span, max_q_, max_substates_, candidates_.get(),
                num_chunks_, nullptr);
        }
        const int threads = count * num_symbols_;
        Kind(kKindMaxcMerge);
        MaxcMergeKernel<<<(threads + 255) / 256, 256, 0, stream_>>>(
            num_symbols_, m, r.base, items_.get(), offset, count, span, candidates_.get(),
            num_chunks_, symbol_chunk_begin_.get());
      }
      Kind(kKindMaxcUnary);
      MaxcUnaryKernel<<<count, kThreads, (num_symbols_ + num_pairs_) * sizeof(double), stream_>>>(
          c, m, r, items_.get(), offset, span, num_pairs_);
    }
    Kind(kKindOther);
    Mark(4);

    bool out_of_memory = false;
    if (!CopyMaxcEntries(m, static_cast<long long>(maxc), num_symbols_, sentence_base_.get(),
                         num_sentences, stream_, &entries_, &host.entries, error, &out_of_memory)) {
      return out_of_memory ? IoBatchResult::kOutOfMemory : IoBatchResult::kFailed;
    }
    cudaMemcpyAsync(host.log_likelihood.get(), log_likelihood_.get(),
                    num_sentences * sizeof(double), cudaMemcpyDeviceToHost, stream_);
    if (keep_charts) {
      cudaMemcpyAsync(host.in.get(), in_.get(), chart * sizeof(double), cudaMemcpyDeviceToHost,
                      stream_);
      cudaMemcpyAsync(host.out.get(), out_.get(), chart * sizeof(double), cudaMemcpyDeviceToHost,
                      stream_);
      cudaMemcpyAsync(host.scales.get(), scales_.get(), 2 * size_t(cells) * sizeof(double),
                      cudaMemcpyDeviceToHost, stream_);
    }
    Mark(5);
    if (!WaitForStream(stream_, error)) return IoBatchResult::kFailed;
    for (int i = 0; i < num_sentences; ++i) {
      IoResult& res = (*results)[i];
      res.log_likelihood = host.log_likelihood.get()[i];
      host.entries.View(i, &res);
      if (keep_charts) {
        res.inside = host.in.get() + size_t(base[i]) * num_states_;
        res.outside = host.out.get() + size_t(base[i]) * num_states_;
        res.inside_scale = host.scales.get() + base[i];
        res.outside_scale = host.scales.get() + cells + base[i];
      }
    }
    return IoBatchResult::kOk;
  }

  // InsideOutsideBatch's end: log P(w) back, the charts left on the device.
  IoBatchResult FinishPassesOnly(int num_sentences, std::vector<IoResult>* results,
                                 std::string* error) {
    HostBuffers& host = host_[1 - next_host_];  // Run's
    Mark(4);
    cudaMemcpyAsync(host.log_likelihood.get(), log_likelihood_.get(),
                    num_sentences * sizeof(double), cudaMemcpyDeviceToHost, stream_);
    Mark(5);
    if (!WaitForStream(stream_, error)) return IoBatchResult::kFailed;
    for (int i = 0; i < num_sentences; ++i)
      (*results)[i].log_likelihood = host.log_likelihood.get()[i];
    return IoBatchResult::kOk;
  }

  template <int kMode>
  bool LaunchPairSum(const Charts& c, int offset, int count, int span, int max_partners,
                     std::string* error) {
    if (pair_sum_kernel_ == 1) {
      return cells_per_group_ == 16
                 ? LaunchPairSumG<16, kMode, 1>(c, offset, count, span, max_partners, error)
                 : LaunchPairSumG<8, kMode, 1>(c, offset, count, span, max_partners, error);
    }
    if (pair_sum_kernel_ == 5) {
      return cells_per_group_ == 16
                 ? LaunchPairSumG<16, kMode, 5>(c, offset, count, span, max_partners, error)
                 : LaunchPairSumG<8, kMode, 5>(c, offset, count, span, max_partners, error);
    }
    if (pair_sum_kernel_ == 3) {
      return cells_per_group_ == 16
                 ? LaunchPairSumG<16, kMode, 3>(c, offset, count, span, max_partners, error)
                 : LaunchPairSumG<8, kMode, 3>(c, offset, count, span, max_partners, error);
    }
    return cells_per_group_ == 16
               ? LaunchPairSumG<16, kMode, 2>(c, offset, count, span, max_partners, error)
               : LaunchPairSumG<8, kMode, 2>(c, offset, count, span, max_partners, error);
  }

  template <int kG, int kMode, int kRules>
  bool LaunchPairSumG(const Charts& c, int offset, int count, int span, int max_partners,
                      std::string* error) {
    const PairLayout& layout = layouts_[kMode];
    if (layout.num_tiles == 0 || max_partners <= 0) return true;
    const size_t shared = size_t(kRules >= 3 ? kG + 1 : kG) * layout.max_bc * sizeof(double) +
                          size_t(kG) * max_partners * 16;
    const auto kernel = PairSumKernelOf<kG, kMode, kRules>();
    if (!AllowDynamicShared(kernel, shared, max_shared_optin_, "pair-sum", error)) return false;
    const int groups = (count + kG - 1) / kG;
    const int tiles = layout.num_tiles;
    const int blocks_x = std::max(1, std::min(groups, (num_sms_ * 64 + tiles - 1) / tiles));
    const int per_block = (groups + blocks_x - 1) / blocks_x;
    const int launched_x = (groups + per_block - 1) / per_block;
    if (list_dispatch_)
      return LaunchPairSumList<kG, kMode, kRules>(c, offset, count, span, max_partners, shared,
                                                  error);
    Charts cg = c;
    if (c.dead_cells) {  // masked dispatch 2: the groups' partner symbols first
      const size_t flags = size_t(groups) * 2 * num_symbols_;  // reserved by Run
      cudaMemsetAsync(group_present_.get(), 0, flags, stream_);
      GroupPresenceKernel<kMode><<<groups, kThreads, 0, stream_>>>(
          c, items_.get(), offset, span, count, kG, max_partners, group_present_.get());
      cg.group_present = group_present_.get();
    }
    kernel<<<dim3(launched_x, tiles), kThreads, shared, stream_>>>(
        cg, items_.get(), offset, span, layout.view(), count, max_partners, layout.max_bc,
        per_block);
    const cudaError_t launch = cudaGetLastError();
    if (launch != cudaSuccess) {
      *error = std::string("kernel launch failed: ") + cudaGetErrorString(launch);
      return false;
    }
    return true;
  }

  // Masked dispatch 3 (pair_sum.cuh's LaunchPairList).
  template <int kG, int kMode, int kRules>
  bool LaunchPairSumList(const Charts& c, int offset, int count, int span, int max_partners,
                         size_t shared, std::string* error) {
    return LaunchPairList<kG, kMode, kRules, false>(
        c, items_.get(), offset, count, span, max_partners, shared, layouts_[kMode], live_[kMode],
        state_symbol_.get(), num_sms_, stream_, &live_buffers_, error);
  }

  bool UploadMaxRule(const MaxRuleLayout& m) {
    max_q_ = m.max_q;
    max_substates_ = m.max_substates;
    warp_block_ = m.warp_block;
    num_chunks_ = static_cast<int>(m.chunks.size());
    num_pairs_ = static_cast<int>(m.pair_symbols.size());
    // The entries serve kernels 7, 9, 11, 13 and 14 and the product's pass (MaxRuleRules).
    const bool ok = mr_base_.Upload(AsDevice<int4>(m.base)) && mr_key_.Upload(m.keys) &&
                    mr_w_.Upload(m.w) && mr_dense_.Upload(m.dense) &&
                    mr_chunk_.Upload(AsDevice<int4>(m.chunks)) &&
                    symbol_chunk_begin_.Upload(m.chunk_begin) && pair_begin_.Upload(m.pair_begin) &&
                    pair_symbols_.Upload(AsDevice<int2>(m.pair_symbols)) &&
                    pair_rule_begin_.Upload(m.pair_rule_begin) && pu_parent_.Upload(m.pu_parent) &&
                    pu_child_.Upload(m.pu_child) && pu_w_.Upload(m.pu_w) &&
                    block_chunks_.Upload(m.block_chunks) && warp_chunks_.Upload(m.warp_chunks) &&
                    warp_order_.Upload(m.warp_order) && entry_begin_.Upload(m.entry_begin) &&
                    entry_bc_.Upload(m.entry_bc) && entry_rule_begin_.Upload(m.entry_rule_begin) &&
                    entry_a_.Upload(m.entry_a) && entry_w_.Upload(m.entry_w);
    rules_ = DeviceMaxRuleRules{.num_states = num_states_,
                                .num_symbols = num_symbols_,
                                .symbol_first_state = first_state_.get(),
                                .symbol_num_substates = num_substates_.get(),
                                .num_base = static_cast<int>(m.base.size()),
                                .entry_begin = entry_begin_.get(),
                                .entry_bc = entry_bc_.get(),
                                .entry_rule_begin = entry_rule_begin_.get(),
                                .entry_a = entry_a_.get(),
                                .entry_w = entry_w_.get(),
                                .num_pairs = num_pairs_,
                                .pair_rule_begin = pair_rule_begin_.get(),
                                .pu_parent = pu_parent_.get(),
                                .pu_child = pu_child_.get(),
                                .pu_w = pu_w_.get()};
    rules_.base_symbols = BaseRuleSymbols(m);
    rules_.pair_symbols = UnaryPairSymbols(m);
    return ok;
  }

  MaxRuleArrays MaxRuleView() const {
    return {mr_base_.get(),
            mr_key_.get(),
            mr_w_.get(),
            mr_dense_.get(),
            mr_chunk_.get(),
            pair_begin_.get(),
            pair_symbols_.get(),
            pair_rule_begin_.get(),
            pu_parent_.get(),
            pu_child_.get(),
            pu_w_.get(),
            first_state_.get(),
            num_substates_.get(),
            entry_begin_.get(),
            entry_bc_.get(),
            entry_rule_begin_.get(),
            entry_a_.get(),
            entry_w_.get(),
            warp_order_.size() ? warp_order_.get() : nullptr};
  }

  struct HostBuffers {
    MaxcHostEntries entries;  // the max-rule arrays' finite entries
    PinnedArray<double> log_likelihood;
    PinnedArray<double> in, out, scales;
  };

  int num_states_ = 0, num_symbols_ = 0;
  int max_shared_optin_ = 48 * 1024;
  int num_sms_ = 132;
  size_t budget_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t wait_for_ = nullptr;  // MaskedMaxRuleBatchAfter's event, during that call
  bool profile_ = false;
  std::array<double, 6> profile_ms_{};  // host wall, setup, inside, outside, max-rule, copy back
  double prepare_ms_ = 0;  // host wall before Mark(0): reservations (pinned ones too), cell lists
  std::array<double, kNumKinds> kind_ms_{};
  std::array<std::array<double, kSpanBuckets>, kNumKinds> span_ms_{};  // kind_ms_ by SpanBucket
  std::vector<cudaEvent_t> kind_events_;
  std::vector<int> kind_of_;  // this batch's Kind() calls
  int profile_batches_ = 0;
  std::vector<cudaEvent_t> events_;

  DeviceArray<int> state_symbol_, first_state_, num_substates_;
  DeviceArray<int> up_begin_, up_child_, uc_begin_, uc_parent_;
  DeviceArray<double> up_w_, uc_w_;
  std::array<PairLayout, 3> layouts_;
  std::array<LiveLayout, 3> live_;  // masked dispatch 3
  // Max-rule.
  DeviceArray<int4> mr_base_, mr_chunk_;
  DeviceArray<int> mr_key_, symbol_chunk_begin_, pair_begin_, pair_rule_begin_, pu_parent_,
      pu_child_;
  DeviceArray<double> mr_w_, pu_w_, mr_dense_;
  DeviceArray<int> entry_begin_, entry_bc_, entry_rule_begin_,
      entry_a_;  // kernels 7, 9, 11, 13, 14
  DeviceArray<double> entry_w_;
  DeviceArray<int> block_chunks_,
      warp_chunks_;              // kernels 9, 11, 13, 14: chunks of big / small rules
  DeviceArray<int> warp_order_;  // kernels 13, 14 (MaxRuleArrays::warp_order)
  int warp_block_ = kThreads;    // threads a block of warp chunks (kernels 9, 11, 13, 14)
  DeviceArray<int2> pair_symbols_;
  int num_chunks_ = 0, num_pairs_ = 0, max_q_ = 1, max_substates_ = 1;
  int cells_per_group_ = 8;   // pair-sum kernel: 8 or 16
  int max_rule_kernel_ = 13;  // max-rule binary kernel variant (options.max_rule_kernel)
  int pair_sum_kernel_ = 5;   // pair-sum kernel variant (options.pair_sum_kernel)
  int masked_dispatch_ = 2;   // options.masked_dispatch
  // Batch buffers.
  DeviceArray<double> in_, out_, acc_, scales_, log_likelihood_, lexical_, maxc_score_;
  DeviceArray<unsigned char> present_;
  DeviceArray<int> top_;
  DeviceArray<CellItem> items_;
  DeviceArray<int4> maxc_info_;
  DeviceArray<Candidate> candidates_;
  DeviceArray<int> sentence_base_;  // the batch sentences' first cells
  MaxcDeviceEntries entries_;       // the max-rule arrays' finite entries
  RingUpload<double> row_upload_;   // the batch's lexical rows on their way to lexical_
  DeviceArray<int2> maxc_list_;     // masked dispatch 3: a max-rule binary launch's work list
  DeviceArray<int> maxc_counters_;  // its entry count and next entry, per launch kind
  DeviceArray<unsigned char> group_present_;  // masked dispatch 2: pair-sum group flags
  LiveBuffers live_buffers_;                  // masked dispatch 3
  bool list_dispatch_ = false;                // this batch runs masked dispatch 3
  HostBuffers host_[2];
  int next_host_ = 0;
  // The last batch (LastBatchCharts): whether it succeeded, its sentences' first cells and words.
  bool last_ok_ = false;
  std::vector<int64_t> last_first_cell_, last_first_word_;
  int64_t last_cells_ = 0;
  DeviceMaxRuleRules rules_;  // MaxRuleRules()
};

}  // namespace

std::unique_ptr<DeviceInsideOutside> DeviceInsideOutside::Create(
    const GrammarView& grammar, const DeviceInsideOutsideOptions& options, std::string* error) {
  error->clear();
  auto impl = std::make_unique<DeviceInsideOutsideImpl>();
  if (!impl->Init(grammar, options, error)) {
    if (error->empty()) *error = "could not set up the CUDA inside-outside backend";
    return nullptr;
  }
  return impl;
}

}  // namespace cky::cuda
