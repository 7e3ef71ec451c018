// CUDA Viterbi CKY's dispatch: DeviceViterbi (viterbi.h) over one batch at a time. The batch's
// layout (cells by span length, groups, masks), its buffers and uploads, then per span length the
// variant's binary pass (a BinaryPass from the registry, variants.h: its kernels live in the
// family's file) and the unary pass; the charts or the trees read on the device come back.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "cuda/common/device_helpers.cuh"
#include "cuda/common/fault_injection.h"
#include "cuda/common/host_parallel.h"
#include "cuda/viterbi/device_common.cuh"
#include "cuda/viterbi/extract.cuh"
#include "cuda/viterbi/launch.cuh"
#include "cuda/viterbi/viterbi.h"

namespace cky::cuda::viterbi {
namespace {

int64_t NumCells(int32_t n) { return int64_t(n) * (n + 1) / 2; }

// The binary pass of variant `name` from the family file that registers it; null when no family
// has it.
std::unique_ptr<BinaryPass> MakeBinaryPass(const std::string& name) {
  for (auto make :
       {MakePairSegMultiPass, MakePairSegPass, MakePairFusedPass, MakePairAccPass, MakePaperPass})
    if (auto pass = make(name)) return pass;
  return nullptr;
}

class DeviceViterbiImpl : public DeviceViterbi {
 public:
  const std::string& kernel() const override { return kernel_; }

  size_t BytesForSentence(int32_t n) const override {
    static_assert(sizeof(CellItem) == 16);
    // -t: a span length's split table has at most as many rows as the sentence has cells.
    return BatchBytesForSentence(num_states_, num_symbols_, n) +
           (aligned_ ? size_t(NumCells(n)) * aligned_states_ * sizeof(float) : 0) +
           (traits_.split_table ? size_t(NumCells(n)) * SplitTableStride(mask_words_) * 4 : 0);
  }
  size_t BatchBudget() const override { return budget_; }

  bool Init(const GrammarView& g, const DeviceViterbiOptions& options, std::string* error) {
    kernel_ = options.kernel.empty() ? ViterbiKernels().front().name : options.kernel;
    binary_ = MakeBinaryPass(kernel_);
    if (!binary_) {
      *error = "unknown CUDA kernel '" + kernel_ + "'";
      return false;
    }
    if (!RequireDevice(error)) return false;
    if (!FaultInjector::FromEnvironment(&faults_, error)) return false;
    num_states_ = g.num_states;
    if (size_t(num_states_) * sizeof(float) > 48 * 1024) {
      *error = "too many states for the unary kernel's shared memory";
      return false;
    }
    num_symbols_ = g.num_symbols;
    cudaDeviceGetAttribute(&limits_.max_shared_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
    cudaDeviceGetAttribute(&limits_.num_sms, cudaDevAttrMultiProcessorCount, 0);

    std::vector<float> w(g.binary_log_prob, g.binary_log_prob + g.num_binary);
    std::vector<float> uw(g.unary_log_prob, g.unary_log_prob + g.num_unary);
    auto ints = [](const int32_t* p, int64_t n) { return std::vector<int>(p, p + n); };
    bool ok = state_symbol_.Upload(ints(g.state_symbol, g.num_states)) &&
              unary_begin_.Upload(ints(g.unary_parent_begin, g.num_states + 1)) &&
              unary_child_.Upload(ints(g.unary_child, g.num_unary)) && unary_w_.Upload(uw);
    if (g.symbol_is_phrasal) {
      // Tree extraction on the device reads the rules in double, as the CPU does.
      std::vector<double> bw(g.binary_log_prob, g.binary_log_prob + g.num_binary);
      std::vector<double> uwd(g.unary_log_prob, g.unary_log_prob + g.num_unary);
      supports_trees_ = ok && ex_bin_begin_.Upload(ints(g.binary_parent_begin, g.num_states + 1)) &&
                        ex_bin_left_.Upload(ints(g.binary_left, g.num_binary)) &&
                        ex_bin_right_.Upload(ints(g.binary_right, g.num_binary)) &&
                        ex_bin_w_.Upload(bw) && ex_un_w_.Upload(uwd) &&
                        phrasal_.Upload(std::vector<unsigned char>(
                            g.symbol_is_phrasal, g.symbol_is_phrasal + g.num_symbols));
      ok = ok && supports_trees_;
    }
    traits_ = binary_->traits();
    aligned_ = traits_.aligned;
    mask_group_ = traits_.mask_group;
    unary_cells_ = traits_.unary_cells;
    // -u stages kUnaryCells cells' binary maxima in shared memory (48 KB without opt-in).
    if (size_t(kUnaryCells) * num_states_ * sizeof(float) > 48 * 1024) unary_cells_ = false;
    mask_words_ = (num_symbols_ + 31) / 32;
    if (aligned_) {
      // Each symbol's substates start at a multiple of 4 floats in an aligned row.
      aligned_first_.assign(num_symbols_, 0);
      for (int sym = 0; sym < num_symbols_; ++sym) {
        aligned_first_[sym] = aligned_states_;
        aligned_states_ += (g.symbol_num_substates[sym] + 3) / 4 * 4;
      }
      std::vector<int> index(num_states_);
      for (int s = 0; s < num_states_; ++s) {
        const int sym = g.state_symbol[s];
        index[s] = aligned_first_[sym] + s - g.symbol_first_state[sym];
      }
      ok = ok && aligned_index_.Upload(index);
    }
    ok = ok && binary_->Init(g, w, aligned_first_, limits_, error);
    if (!error->empty()) return false;
    if (!ok) {
      *error = "could not upload the grammar to the device";
      return false;
    }
    budget_ = DefaultBatchBudget(options.max_batch_bytes);
    return stream_.Create(error);
  }

  void SetProfiling(bool on) override {
    profile_ = on;
    profile_ms_.fill(0);
    profile_batches_ = 0;
  }

  std::string ProfileReport() const override {
    char text[256];
    std::snprintf(text, sizeof(text),
                  "%d batches: host wall %.1f ms; device: setup %.1f, binary %.1f, unary %.1f, "
                  "copy back (charts, or the trees read on the device) %.1f ms",
                  profile_batches_, profile_ms_[0], profile_ms_[1], profile_ms_[2], profile_ms_[3],
                  profile_ms_[4]);
    return text;
  }

  BatchResult InsideBatch(const std::vector<SentenceRef>& batch, std::vector<const float*>* charts,
                          std::string* error) override {
    const auto wall_begin = std::chrono::steady_clock::now();
    BatchResult result = InsideBatchImpl(batch, charts, error);
    if (profile_ && result == BatchResult::kOk) AddProfile(wall_begin);
    return result;
  }

  bool SupportsTrees() const override { return supports_trees_; }

  BatchResult ParseTrees(const std::vector<SentenceRef>& batch, std::vector<DeviceTree>* trees,
                         std::string* error) override {
    if (!supports_trees_) return DeviceViterbi::ParseTrees(batch, trees, error);
    const auto wall_begin = std::chrono::steady_clock::now();
    BatchResult result = ParseTreesImpl(batch, trees, error);
    if (profile_ && result == BatchResult::kOk) AddProfile(wall_begin);
    return result;
  }

  void SetPresenceStats(bool on) override {
    stats_ = on;
    present_sum_.clear(), cells_sum_.clear(), skipped_sum_.clear(), iterations_sum_.clear();
  }
  std::vector<double> PresentSymbolsBySpan() const override {
    std::vector<double> out(present_sum_.size(), 0.0);
    for (size_t w = 0; w < out.size(); ++w)
      if (cells_sum_[w] > 0) out[w] = present_sum_[w] / cells_sum_[w];
    return out;
  }
  std::vector<double> SkippedGroupsBySpan() const override {
    std::vector<double> out(skipped_sum_.size(), 0.0);
    for (size_t w = 0; w < out.size(); ++w)
      if (iterations_sum_[w] > 0) out[w] = skipped_sum_[w] / iterations_sum_[w];
    return out;
  }

  void AddProfile(std::chrono::steady_clock::time_point wall_begin) {
    ++profile_batches_;
    profile_ms_[0] +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_begin)
            .count();
    const int spans = static_cast<int>(level_begin_.size()) - 2;
    profile_ms_[1] += marks_.Elapsed(0, 1);
    for (int w = 1; w <= spans; ++w) {
      profile_ms_[2] += marks_.Elapsed(2 * w - 1, 2 * w);
      profile_ms_[3] += marks_.Elapsed(2 * w, 2 * w + 1);
    }
    profile_ms_[4] += marks_.Elapsed(2 * spans + 1, 2 * spans + 2);
  }

  void Mark(int index) {
    if (profile_) marks_.Record(index, stream_.get());
  }

  BatchResult InsideBatchImpl(const std::vector<SentenceRef>& batch,
                              std::vector<const float*>* charts, std::string* error) {
    charts->assign(batch.size(), nullptr);
    if (batch.empty()) return BatchResult::kOk;
    BatchResult result = RunInside(batch, error);
    if (result != BatchResult::kOk) return result;
    const size_t chart_floats = size_t(batch_cells_) * num_states_;
    PinnedArray<float>& host_chart = host_chart_[next_host_chart_];
    if (!host_chart.Reserve(chart_floats)) {
      cudaStreamSynchronize(stream_.get());
      *error = "cudaMallocHost failed";
      return BatchResult::kOutOfMemory;
    }
    const int max_n = static_cast<int>(level_begin_.size()) - 2;
    Mark(2 * max_n + 1);
    next_host_chart_ = 1 - next_host_chart_;
    cudaMemcpyAsync(host_chart.get(), chart_.get(), chart_floats * sizeof(float),
                    cudaMemcpyDeviceToHost, stream_.get());
    Mark(2 * max_n + 2);
    if ((result = Finish(error)) != BatchResult::kOk) return result;
    for (size_t i = 0; i < batch.size(); ++i)
      (*charts)[i] = host_chart.get() + size_t(base_[i]) * num_states_;
    return BatchResult::kOk;
  }

  BatchResult ParseTreesImpl(const std::vector<SentenceRef>& batch, std::vector<DeviceTree>* trees,
                             std::string* error) {
    trees->assign(batch.size(), {});
    if (batch.empty()) return BatchResult::kOk;
    BatchResult result = RunInside(batch, error);
    if (result != BatchResult::kOk) return result;
    const int num_sentences = static_cast<int>(batch.size());
    std::vector<int> offset(num_sentences + 1, 0), length(num_sentences);
    for (int i = 0; i < num_sentences; ++i) {
      length[i] = batch[i].length;
      offset[i + 1] = offset[i] + TreeNodeSlots(batch[i].length);
    }
    // One upload: base, length, offset.
    std::vector<int> meta;
    meta.reserve(3 * num_sentences + 1);
    meta.insert(meta.end(), base_.begin(), base_.end());
    meta.insert(meta.end(), length.begin(), length.end());
    meta.insert(meta.end(), offset.begin(), offset.end());
    if (!tree_meta_.Grow(meta.size()) || !node_count_.Grow(num_sentences) ||
        !nodes_.Grow(offset.back()) || !host_meta_.Reserve(meta.size() + num_sentences) ||
        !host_nodes_.Reserve(offset.back())) {
      cudaStreamSynchronize(stream_.get());
      *error = "could not allocate the tree buffers";
      return BatchResult::kOutOfMemory;
    }
    int* host_meta = host_meta_.get();
    std::copy(meta.begin(), meta.end(), host_meta);
    const int max_n = static_cast<int>(level_begin_.size()) - 2;
    Mark(2 * max_n + 1);
    cudaMemcpyAsync(tree_meta_.get(), host_meta, meta.size() * sizeof(int), cudaMemcpyHostToDevice,
                    stream_.get());
    ExtractArgs x{chart_.get(),
                  num_states_,
                  tree_meta_.get(),
                  tree_meta_.get() + num_sentences,
                  tree_meta_.get() + 2 * num_sentences,
                  node_count_.get(),
                  nodes_.get(),
                  ex_bin_begin_.get(),
                  ex_bin_left_.get(),
                  ex_bin_right_.get(),
                  ex_bin_w_.get(),
                  unary_begin_.get(),
                  unary_child_.get(),
                  ex_un_w_.get(),
                  state_symbol_.get(),
                  phrasal_.get(),
                  1e-5};
    // A sentence's tree fills only the first of its 6n + 32 node slots, and the copy below takes
    // every slot: zeroed, it reads no uninitialized device memory (compute-sanitizer initcheck).
    cudaMemsetAsync(nodes_.get(), 0, size_t(offset.back()) * sizeof(int4), stream_.get());
    LaunchExtractTrees(x, num_sentences, stream_.get());
    int* host_count = host_meta + meta.size();
    cudaMemcpyAsync(host_count, node_count_.get(), num_sentences * sizeof(int),
                    cudaMemcpyDeviceToHost, stream_.get());
    cudaMemcpyAsync(host_nodes_.get(), nodes_.get(), size_t(offset.back()) * sizeof(int4),
                    cudaMemcpyDeviceToHost, stream_.get());
    Mark(2 * max_n + 2);
    if ((result = Finish(error)) != BatchResult::kOk) return result;
    for (int i = 0; i < num_sentences; ++i) {
      DeviceTree& tree = (*trees)[i];
      const int count = host_count[i];
      if (count == -1) {
        tree.status = DeviceTree::kNoParse;
      } else if (count >= 0) {
        tree.status = DeviceTree::kTree;
        tree.nodes.resize(count);
        const int4* src = host_nodes_.get() + offset[i];
        for (int k = 0; k < count; ++k) tree.nodes[k] = UnpackTreeNode(src[k]);
      } else {
        // The host extracts this one: its chart is still on the device.
        tree.status = DeviceTree::kChart;
        tree.chart.resize(size_t(NumCells(batch[i].length)) * num_states_);
        if (cudaMemcpy(tree.chart.data(), chart_.get() + size_t(base_[i]) * num_states_,
                       tree.chart.size() * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
          *error = std::string("CUDA error: ") + cudaGetErrorString(cudaGetLastError());
          return BatchResult::kFailed;
        }
      }
    }
    return BatchResult::kOk;
  }

  // Waits for the batch; on success, gathers the presence statistics when they are on.
  BatchResult Finish(std::string* error) {
    if (!WaitForStream(stream_.get(), error)) return BatchResult::kFailed;
    if (stats_) GatherStats();
    return BatchResult::kOk;
  }

  void GatherStats() {
    const int max_n = static_cast<int>(level_begin_.size()) - 2;
    DeviceArray<unsigned long long> counters;
    if (!counters.Reserve(2 * size_t(max_n + 1))) return;
    cudaMemsetAsync(counters.get(), 0, 2 * size_t(max_n + 1) * sizeof(unsigned long long),
                    stream_.get());
    std::vector<unsigned long long> iterations(max_n + 1, 0);
    const int tiles = binary_->num_tiles();
    for (int span = 1; span <= max_n; ++span) {
      const int count = level_begin_[span + 1] - level_begin_[span];
      if (count == 0) continue;
      LevelArgs a{chart_.get(), pre_.get(),  items_.get(), level_begin_[span],
                  span,         num_states_, nullptr,      0};
      LaunchPresenceStats(a, count, present_.get(), num_symbols_, counters.get() + span,
                          stream_.get());
      if (mask_group_ > 0 && span >= 2) {
        const int groups = (count + mask_group_ - 1) / mask_group_;
        const size_t at = size_t(mask_offset_[span]) * mask_words_;
        LaunchSkipStats(binary_->tile_symbols(), tiles, groups, left_mask_.get() + at,
                        right_mask_.get() + at, mask_words_, counters.get() + max_n + 1 + span,
                        stream_.get());
        iterations[span] = static_cast<unsigned long long>(tiles) * groups;
      }
    }
    std::vector<unsigned long long> host(2 * size_t(max_n + 1));
    cudaMemcpy(host.data(), counters.get(), host.size() * sizeof(unsigned long long),
               cudaMemcpyDeviceToHost);
    if (present_sum_.size() < size_t(max_n + 1)) {
      present_sum_.resize(max_n + 1), cells_sum_.resize(max_n + 1);
      skipped_sum_.resize(max_n + 1), iterations_sum_.resize(max_n + 1);
    }
    for (int span = 1; span <= max_n; ++span) {
      present_sum_[span] += double(host[span]);
      cells_sum_[span] += level_begin_[span + 1] - level_begin_[span];
      skipped_sum_[span] += double(host[max_n + 1 + span]);
      iterations_sum_[span] += double(iterations[span]);
    }
  }

  // The batch's layout, buffers, uploads and every span length's kernels, queued on stream_ (the
  // chart stays on the device). Sets base_ (each sentence's first cell) and batch_cells_.
  BatchResult RunInside(const std::vector<SentenceRef>& batch, std::string* error) {
    const int num_sentences = static_cast<int>(batch.size());
    base_.assign(num_sentences, 0);
    std::vector<int> word(num_sentences);
    int64_t cells = 0, words = 0;
    int max_n = 0;
    size_t bytes = 0;
    bool any_allowed = false;
    for (int i = 0; i < num_sentences; ++i) {
      base_[i] = static_cast<int>(cells);
      word[i] = static_cast<int>(words);
      cells += NumCells(batch[i].length);
      words += batch[i].length;
      max_n = std::max(max_n, batch[i].length);
      bytes += BytesForSentence(batch[i].length);
      any_allowed = any_allowed || batch[i].allowed != nullptr;
    }
    batch_cells_ = cells;
    if (bytes > budget_ || cells >= std::numeric_limits<int>::max() / 2) {
      *error = "batch needs " + std::to_string(bytes) + " device bytes, over the budget";
      return BatchResult::kOutOfMemory;
    }
    // Items per span length, ordered by start then sentence.
    std::vector<CellItem> items;
    items.reserve(cells);
    level_begin_.assign(max_n + 2, 0);
    start_begin_.assign(max_n + 2, {});
    mask_offset_.assign(max_n + 2, 0);
    for (int span = 1; span <= max_n; ++span) {
      level_begin_[span] = static_cast<int>(items.size());
      for (int start = 0; start + span <= max_n; ++start) {
        start_begin_[span].push_back(static_cast<int>(items.size()));
        for (int i = 0; i < num_sentences; ++i)
          if (start + span <= batch[i].length)
            items.push_back({base_[i], batch[i].length, start, word[i]});
      }
      start_begin_[span].push_back(static_cast<int>(items.size()));
    }
    level_begin_[max_n + 1] = static_cast<int>(items.size());
    // Group masks: the groups of every span length, one after another.
    if (mask_group_ > 0) {
      for (int span = 1; span <= max_n; ++span) {
        const int count = level_begin_[span + 1] - level_begin_[span];
        mask_offset_[span + 1] = mask_offset_[span] + (count + mask_group_ - 1) / mask_group_;
      }
    }
    const size_t mask_entries = size_t(mask_offset_[max_n + 1]) * mask_words_;
    // kTable: one span length's split table at a time (the largest).
    size_t table_entries = 0;
    if (traits_.split_table) {
      for (int span = 2; span <= max_n; ++span)
        table_entries =
            std::max(table_entries, size_t(level_begin_[span + 1] - level_begin_[span]) *
                                        (span - 1) * SplitTableStride(mask_words_));
    }

    const size_t chart_floats = size_t(cells) * num_states_;
    aligned_floats_ = aligned_ ? size_t(cells) * aligned_states_ : 0;
    if (faults_.FailAllocation() || !chart_.Grow(chart_floats) || !pre_.Grow(chart_floats) ||
        !present_.Grow(size_t(cells) * num_symbols_) ||
        !lexical_.Grow(size_t(words) * num_states_) || !items_.Grow(items.size()) ||
        (aligned_ && !aligned_chart_.Grow(size_t(cells) * aligned_states_)) ||
        (mask_entries > 0 && (!left_mask_.Grow(mask_entries) || !right_mask_.Grow(mask_entries))) ||
        (any_allowed && !allowed_.Grow(size_t(cells) * num_symbols_)) ||
        (table_entries > 0 && !split_table_.Grow(table_entries))) {
      chart_.Free(), pre_.Free(), present_.Free(), lexical_.Free(), items_.Free();
      aligned_chart_.Free(), left_mask_.Free(), right_mask_.Free(), allowed_.Free();
      split_table_.Free();
      *error = "cudaMalloc failed for a batch of " + std::to_string(num_sentences) + " sentences";
      return BatchResult::kOutOfMemory;
    }
    if (!host_lexical_.Reserve(size_t(words) * num_states_) ||
        (any_allowed && !host_allowed_.Reserve(size_t(cells) * num_symbols_))) {
      *error = "cudaMallocHost failed";
      return BatchResult::kOutOfMemory;
    }
    // The previous batch's uploads read these pinned buffers: wait for them (the stream is idle
    // after each call's synchronization anyway).
    float* lex = host_lexical_.get();
    ForEachOnHostThreads(num_sentences, size_t(words) * num_states_, [&](int i) {
      const size_t count = size_t(batch[i].length) * num_states_;
      const double* src = batch[i].lexical;
      float* dst = lex + size_t(word[i]) * num_states_;
      for (size_t k = 0; k < count; ++k) dst[k] = static_cast<float>(src[k]);
    });
    if (any_allowed) {
      unsigned char* dst = host_allowed_.get();
      for (int i = 0; i < num_sentences; ++i) {
        const size_t count = size_t(NumCells(batch[i].length)) * num_symbols_;
        if (batch[i].allowed) {
          std::memcpy(dst + size_t(base_[i]) * num_symbols_, batch[i].allowed, count);
        } else {
          std::memset(dst + size_t(base_[i]) * num_symbols_, 1, count);
        }
      }
    }
    Mark(0);
    cudaMemcpyAsync(lexical_.get(), lex, size_t(words) * num_states_ * sizeof(float),
                    cudaMemcpyHostToDevice, stream_.get());
    cudaMemcpyAsync(items_.get(), items.data(), items.size() * sizeof(CellItem),
                    cudaMemcpyHostToDevice, stream_.get());
    if (any_allowed)
      cudaMemcpyAsync(allowed_.get(), host_allowed_.get(), size_t(cells) * num_symbols_,
                      cudaMemcpyHostToDevice, stream_.get());
    LaunchFill(pre_.get(), chart_floats, kNegInfF, 1024, stream_.get());
    cudaMemsetAsync(present_.get(), 0, size_t(cells) * num_symbols_, stream_.get());
    if (aligned_)  // float4 loads read the padding between symbols (unused): no uninitialized read
      cudaMemsetAsync(aligned_chart_.get(), 0, size_t(cells) * aligned_states_ * sizeof(float),
                      stream_.get());
    if (!faults_.empty()) {
      std::vector<int32_t> lengths;
      for (const SentenceRef& s : batch) lengths.push_back(s.length);
      if (faults_.FailLaunch(lengths))  // CKY_FAULT_INJECT: a real invalid launch (no blocks)
        LaunchFill(pre_.get(), chart_floats, kNegInfF, 0, stream_.get());
    }

    for (int span = 1; span <= max_n; ++span) {
      LevelArgs a{chart_.get(),
                  pre_.get(),
                  items_.get(),
                  level_begin_[span],
                  span,
                  num_states_,
                  aligned_ ? aligned_chart_.get() : nullptr,
                  aligned_states_};
      const int count = level_begin_[span + 1] - level_begin_[span];
      Mark(2 * span - 1);  // span 1: the end of the setup
      if (span == 1) {
        LaunchLexical(a, count, lexical_.get(), stream_.get());
      } else {
        if (mask_group_ > 0) {
          const size_t at = size_t(mask_offset_[span]) * mask_words_;
          LaunchGroupMasks(a, mask_offset_[span + 1] - mask_offset_[span], present_.get(),
                           num_symbols_, count, mask_group_, mask_words_, left_mask_.get() + at,
                           right_mask_.get() + at,
                           traits_.split_table ? split_table_.get() : nullptr, stream_.get());
        }
        if (!LaunchBinary(a, count, error)) {
          cudaStreamSynchronize(stream_.get());  // nothing of this batch runs on into the next one
          cudaGetLastError();
          return BatchResult::kFailed;
        }
      }
      Mark(2 * span);
      // -u: kUnaryCells cells per block once the launch has enough of them for about two waves
      // of 8 blocks per SM, fewer below.
      const int per_block =
          unary_cells_ ? std::clamp(count / (limits_.num_sms * 16), 1, kUnaryCells) : 1;
      LaunchUnary(a, count, per_block,
                  {chart_.get(), unary_begin_.get(), unary_child_.get(), unary_w_.get(),
                   state_symbol_.get(), present_.get(), num_symbols_,
                   aligned_ ? aligned_chart_.get() : nullptr, aligned_index_.get(),
                   any_allowed ? allowed_.get() : nullptr},
                  stream_.get());
    }
    return BatchResult::kOk;
  }

 private:
  // The span length's binary pass (a.span >= 2) on the stream.
  bool LaunchBinary(const LevelArgs& a, int count, std::string* error) {
    SpanLaunch s;
    s.a = a;
    s.count = count;
    s.stream = stream_.get();
    s.device = limits_;
    s.present = present_.get();
    s.num_symbols = num_symbols_;
    if (mask_group_ > 0) {
      const size_t at = size_t(mask_offset_[a.span]) * mask_words_;
      s.left_mask = left_mask_.get() + at;
      s.right_mask = right_mask_.get() + at;
    }
    s.mask_words = mask_words_;
    s.split_table = traits_.split_table ? split_table_.get() : nullptr;
    s.aligned_floats = aligned_floats_;
    s.starts = &start_begin_[a.span];
    if (!binary_->Launch(s, error)) return false;
    const cudaError_t launch = cudaGetLastError();
    if (launch != cudaSuccess) {
      *error = std::string("kernel launch failed: ") + cudaGetErrorString(launch);
      return false;
    }
    return true;
  }

  std::string kernel_;
  std::unique_ptr<BinaryPass> binary_;  // the variant's binary kernels
  PassTraits traits_;                   // what the variant asks of the batch
  FaultInjector faults_;                // CKY_FAULT_INJECT, read at Init
  int num_states_ = 0, num_symbols_ = 0;
  DeviceLimits limits_;
  bool profile_ = false;
  std::array<double, 5> profile_ms_{};  // host wall, setup, binary, unary, copy back
  int profile_batches_ = 0;
  EventMarks marks_;
  bool aligned_ = false;            // pair-seg-*-a4: tiles read aligned_chart_ with float4 loads
  int aligned_states_ = 0;          // floats per aligned_chart_ row (a multiple of 4)
  size_t aligned_floats_ = 0;       // this batch's aligned chart (-o needs < 2^32)
  std::vector<int> aligned_first_;  // per symbol: its first position in an aligned row
  size_t budget_ = 0;
  CudaStream stream_;
  // Presence masks per cell group (kernel 9 with -m): cells per group (0: no masks), 32-bit
  // words per mask, each span length's first group.
  int mask_group_ = 0;
  int mask_words_ = 1;
  bool unary_cells_ = false;           // -u: UnaryCellsKernel
  DeviceArray<unsigned> split_table_;  // -t: one span length's split table
  std::vector<int> mask_offset_;
  DeviceArray<unsigned> left_mask_, right_mask_;
  DeviceArray<unsigned char> allowed_;  // SentenceRef::allowed, the batch's cells
  PinnedArray<unsigned char> host_allowed_;
  // Presence statistics (SetPresenceStats), per span length.
  bool stats_ = false;
  std::vector<double> present_sum_, cells_sum_, skipped_sum_, iterations_sum_;
  // Device tree extraction (ParseTrees).
  bool supports_trees_ = false;
  DeviceArray<int> ex_bin_begin_, ex_bin_left_, ex_bin_right_;
  DeviceArray<double> ex_bin_w_, ex_un_w_;
  DeviceArray<unsigned char> phrasal_;
  DeviceArray<int> tree_meta_, node_count_;
  DeviceArray<int4> nodes_;
  PinnedArray<int> host_meta_;
  PinnedArray<int4> host_nodes_;
  std::vector<int> base_;  // the batch's sentences' first cells
  int64_t batch_cells_ = 0;

  DeviceArray<int> state_symbol_, unary_begin_, unary_child_;
  DeviceArray<int> aligned_index_;    // per state: its position in an aligned_chart_ row
  DeviceArray<float> aligned_chart_;  // pair-seg-*-a4 batch buffer
  DeviceArray<float> unary_w_;
  // Batch buffers.
  DeviceArray<float> chart_, pre_, lexical_;
  DeviceArray<unsigned char> present_;
  DeviceArray<CellItem> items_;
  PinnedArray<float> host_lexical_;
  PinnedArray<float>
      host_chart_[2];  // alternate calls: a caller may read one while we fill the other
  int next_host_chart_ = 0;
  std::vector<int> level_begin_;
  std::vector<std::vector<int>> start_begin_;
};

}  // namespace
}  // namespace cky::cuda::viterbi

namespace cky::cuda {

std::unique_ptr<DeviceViterbi> DeviceViterbi::Create(const GrammarView& grammar,
                                                     const DeviceViterbiOptions& options,
                                                     std::string* error) {
  error->clear();
  auto impl = std::make_unique<viterbi::DeviceViterbiImpl>();
  if (!impl->Init(grammar, options, error)) {
    if (error->empty()) *error = "could not set up the CUDA Viterbi backend";
    return nullptr;
  }
  return impl;
}

}  // namespace cky::cuda
