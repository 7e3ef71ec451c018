#include "parser/cuda_product_backend.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "common/thread_pool.h"
#include "common/timeline.h"
#include "cuda/common/device.h"
#include "cuda/inside_outside/inside_outside.h"
#include "cuda/inside_outside/product_max_rule.h"
#include "cuda/pruning/mask_projection.h"
#include "parser/chart.h"
#include "parser/cuda_max_rule_backend.h"
#include "parser/cuda_pruner.h"

namespace cky {

namespace {

using Failure = std::optional<DeviceFailure>;

// BatchLimits' budget: every budget scaled to it.
constexpr size_t kUnitBytes = size_t{1} << 40;
constexpr double kUnit = double(kUnitBytes);

// One batch on the host, per sentence b (a position in the batch) and grammar k.
struct BatchCharts {
  std::vector<size_t> which;  // the sentences, indices into the call's span
  std::vector<int32_t> length;
  std::vector<const std::vector<std::string>*> words;
  std::vector<std::vector<const LexicalScores*>> lexical;  // grammar 0's: the SentenceInput's
  std::vector<std::vector<LexicalScores>> own;             // those computed here
  std::vector<std::vector<InsideOutsideCharts>> charts;    // host combination only
  std::vector<std::vector<double>> log_likelihood;         // grammar k's log P(w); -inf: none yet
  std::vector<std::vector<uint8_t>> pruned;                // 1: grammar k's charts are pruned
};

// A pruned pass of one grammar over batch positions (its charts filled).
using PrunedPass = std::function<Failure(const std::vector<size_t>& subset)>;

class CudaProductBackend : public DeviceBackend {
 public:
  struct Member {
    std::unique_ptr<cuda::DeviceInsideOutside> device;
    std::unique_ptr<CudaCoarseToFine> pruner;  // kPerGrammar: each grammar's; kShared: grammar 0's
  };

  CudaProductBackend(const GrammarProduct& product, std::vector<const Lexicon*> lexicons,
                     std::vector<Member> members,
                     std::unique_ptr<cuda::DeviceMaskProjection> projection,
                     std::unique_ptr<cuda::DeviceProductMaxRule> combiner,
                     const CudaProductOptions& options, double host_budget)
      : DeviceBackend(options.device),
        product_(product),
        lexicons_(std::move(lexicons)),
        members_(std::move(members)),
        projection_(std::move(projection)),
        combiner_(std::move(combiner)),
        options_(options),
        host_budget_(host_budget),
        host_pool_(options.device.extraction_threads) {
    if (timeline::Enabled()) {
      for (Member& m : members_) {
        m.device->SetProfiling(true);
        if (m.pruner) m.pruner->SetProfiling(true);
      }
    }
  }

  std::string name() const override {
    return std::string(Pruned() ? "cuda/pruned-max-rule-product" : "cuda/max-rule-product") +
           " of " + std::to_string(product_.size()) + " grammars";
  }

 protected:
  Limits BatchLimits() const override {
    // Every device object's budget and the host's: a sentence takes the largest share of any, in
    // units of 2^40 (a batch within the unit fits all).
    int32_t longest = std::numeric_limits<int32_t>::max();
    for (const Member& m : members_) longest = std::min(longest, m.device->MaxLength());
    return {.budget = kUnitBytes,
            .bytes =
                [this](int32_t n) {
                  double share = combiner_ ? double(combiner_->BytesForSentence(n)) /
                                                 double(combiner_->BatchBudget())
                                           : HostBytes(n) / host_budget_;
                  for (const Member& m : members_) {
                    share = std::max(share, double(m.device->BytesForSentence(n)) /
                                                double(m.device->BatchBudget()));
                    if (m.pruner) {
                      share = std::max(share, double(m.pruner->BytesForSentence(n)) /
                                                  double(m.pruner->BatchBudget()));
                    }
                  }
                  return static_cast<size_t>(std::ceil(std::min(share, 2.0) * kUnit));
                },
            .max_length = longest};
  }
  bool Pruned() const override { return options_.product.pruning.has_value(); }
  StatusOr<std::unique_ptr<Backend>> MakeCpuFallback() override {
    ProductOptions cpu = options_.product;
    cpu.reference = false;
    cpu.threads = options().extraction_threads;
    return MakeProductBackend(product_, lexicons_, cpu);
  }
  std::string ProfileReport() const override {
    std::string report;
    for (size_t k = 0; k < members_.size(); ++k) {
      const Member& m = members_[k];
      report += (k ? "; grammar " : "grammar ") + std::to_string(k + 1) + ": ";
      if (m.pruner) report += "pre-parses: " + m.pruner->ProfileReport() + ", passes: ";
      report += m.device->ProfileReport();
    }
    return report;
  }

  std::optional<DeviceFailure> RunBatch(std::span<const SentenceInput> sentences,
                                        const std::vector<size_t>& batch, bool pruned,
                                        std::vector<ParseOutcome>* outcomes) override {
    const int m = product_.size();
    const size_t size = batch.size();
    auto charts = std::make_shared<BatchCharts>();
    charts->which = batch;
    charts->lexical.assign(size, std::vector<const LexicalScores*>(m, nullptr));
    charts->own.assign(size, std::vector<LexicalScores>(m));
    if (!combiner_) charts->charts.assign(size, std::vector<InsideOutsideCharts>(m));
    charts->log_likelihood.assign(size, std::vector<double>(m, kNegInf));
    charts->pruned.assign(size, std::vector<uint8_t>(m, 0));
    for (size_t b = 0; b < size; ++b) {
      const SentenceInput& s = sentences[batch[b]];
      charts->length.push_back(static_cast<int32_t>(s.words.size()));
      charts->words.push_back(&s.words);
      charts->lexical[b][0] = &s.lexical;
    }
    if (m > 1) {
      timeline::Scope scope("product: lexical scores of grammars 2..K");
      host_pool_.ParallelFor(static_cast<int>(size) * (m - 1), [&](int item, int) {
        const size_t b = item / (m - 1);
        const int k = item % (m - 1) + 1;
        charts->own[b][k] = ProductLexicalScores(product_, k, *lexicons_[k], *charts->words[b],
                                                 nullptr, /*widen=*/false);
        charts->lexical[b][k] = &charts->own[b][k];
      });
    }
    std::vector<size_t> all(size);
    std::iota(all.begin(), all.end(), size_t{0});
    Failure failure;
    if (combiner_) {
      std::string error;
      const cuda::IoBatchResult begun = combiner_->Begin(charts->length, &error);
      if (begun != cuda::IoBatchResult::kOk) return CombinerFailure(begun, error);
    }
    if (!pruned) {
      for (int k = 0; k < m && !failure; ++k) failure = RunGrammar(k, all, nullptr, charts.get());
    } else if (options_.product.mask == ProductPruning::kShared) {
      failure = SharedRound(all, charts.get());
    } else {
      for (int k = 0; k < m && !failure; ++k) {
        const PrunedPass pass = [&](const std::vector<size_t>& subset) {
          return OwnPrunedPass(k, subset, charts.get());
        };
        failure = RunGrammar(k, all, &pass, charts.get());
      }
    }
    if (failure) {
      if (combiner_) FinishExtraction();  // a retry may write the host buffer it reads
      return failure;
    }
    if (combiner_) return CombineOnDevice(sentences, charts, outcomes);
    // The combination on the extraction threads, while the device runs the next batch.
    Extract([this, sentences, charts, outcomes](ThreadPool& pool) {
      timeline::Scope scope("product decoding on the host");
      pool.ParallelFor(static_cast<int>(charts->which.size()), [&](int b, int) {
        const size_t i = charts->which[b];
        bool again = false;
        (*outcomes)[i] = Decode(sentences[i].words, b, charts.get(), &again);
        Done(i, (*outcomes)[i], again);
        charts->charts[b].clear();  // host memory back as soon as possible
        charts->own[b].clear();
      });
    });
    return std::nullopt;
  }

 private:
  // Host bytes a sentence's charts take (a batch counts them four times).
  double HostBytes(int32_t n) const {
    double bytes = 0;
    for (int k = 0; k < product_.size(); ++k) {
      bytes += 2.0 * double(Chart::NumCells(n)) * (product_.grammar(k).num_states() + 1) * 8;
    }
    return 4 * bytes;
  }

  // A device failure of the product's pass; the extraction of the previous batch, which may read
  // the host buffer the retry writes, is finished first.
  Failure CombinerFailure(cuda::IoBatchResult result, const std::string& error) {
    FinishExtraction();
    return DeviceFailure{.out_of_memory = result == cuda::IoBatchResult::kOutOfMemory,
                         .error = "product max-rule pass: " + error};
  }

  // The product's max-rule pass on the device over the kept charts, then the trees on the
  // extraction threads (while the device runs the next batch), deciding per sentence as Decode.
  Failure CombineOnDevice(std::span<const SentenceInput> sentences,
                          const std::shared_ptr<BatchCharts>& charts,
                          std::vector<ParseOutcome>* outcomes) {
    std::vector<cuda::IoResult> results;
    std::string error;
    cuda::IoBatchResult result;
    {
      timeline::Scope scope("cuda batch (product max-rule pass)");
      result = combiner_->Run(&results, &error);
    }
    if (result != cuda::IoBatchResult::kOk) return CombinerFailure(result, error);
    Extract([this, sentences, charts, results = std::move(results), outcomes](ThreadPool& pool) {
      timeline::Scope scope("product tree extraction on the host");
      const int m = product_.size();
      pool.ParallelFor(static_cast<int>(charts->which.size()), [&](int b, int) {
        const size_t i = charts->which[b];
        ParseOutcome& outcome = (*outcomes)[i];
        bool pruned = false, again = false;
        int lost = -1;
        for (int k = 0; k < m && lost < 0; ++k) {
          if (!(charts->log_likelihood[b][k] > kNegInf)) lost = k;
          pruned = pruned || charts->pruned[b][k];
        }
        if (lost >= 0) {
          outcome = ProductMemberHasNoTree(product_, lost);
        } else {
          MaxRuleChart maxc;
          DeviceMaxRuleChart(results[b], charts->length[b], product_.base().num_symbols(), &maxc);
          again = pruned && !(maxc.root_score() > kNegInf);
          // k-best lists (which read the members' charts) take the host path: only the count of
          // members is read here.
          const std::vector<MemberCharts> members(m);
          outcome =
              ProductOutcome(product_, members, maxc, sentences[i].words, options_.product.decoder);
        }
        Done(i, outcome, again);
      });
    });
    return std::nullopt;
  }

  // The outcome of batch sentence b from its grammars' charts; *again when its pruned product
  // shares no tree (parsed again unpruned).
  ParseOutcome Decode(const std::vector<std::string>& words, int b, BatchCharts* batch,
                      bool* again) const {
    const int m = product_.size();
    std::vector<MemberCharts> members(m);
    bool pruned = false;
    for (int k = 0; k < m; ++k) {
      if (!(batch->charts[b][k].log_likelihood > kNegInf)) {
        return ProductMemberHasNoTree(product_, k);
      }
      members[k] = {batch->lexical[b][k], &batch->charts[b][k]};
      pruned = pruned || batch->pruned[b][k];
    }
    MaxRuleChart maxc;
    ProductMaxRuleChart(product_, members, /*reference=*/false, &maxc);
    *again = pruned && !(maxc.root_score() > kNegInf);
    return ProductOutcome(product_, members, maxc, words, options_.product.decoder);
  }

  // Batch sentences `subset`: grammar k's device passes restricted to `mask` (device memory, the
  // subset's cells one sentence after another; null: exact), their charts copied to the host.
  Failure Passes(int k, const std::vector<size_t>& subset, const uint8_t* mask,
                 BatchCharts* batch) {
    if (subset.empty()) return std::nullopt;
    std::vector<cuda::IoSentence> refs;
    for (size_t b : subset) refs.push_back({batch->length[b], batch->lexical[b][k]->scores.data()});
    std::vector<cuda::IoResult> results;
    std::string error;
    cuda::IoBatchResult result;
    {
      timeline::Scope scope(mask ? "cuda batch (product, pruned passes)"
                                 : "cuda batch (product, passes)");
      // With the combination on the device the charts stay there (no max-rule pass of its own).
      result = combiner_ ? members_[k].device->InsideOutsideBatch(refs, mask, &results, &error)
                         : members_[k].device->MaskedMaxRuleBatch(refs, mask, /*keep_charts=*/true,
                                                                  &results, &error);
      if (result == cuda::IoBatchResult::kOk && combiner_) {
        result = combiner_->Keep(k, subset, &error);
      }
    }
    if (result != cuda::IoBatchResult::kOk) {
      return DeviceFailure{.out_of_memory = result == cuda::IoBatchResult::kOutOfMemory,
                           .error = "grammar " + std::to_string(k + 1) + ": " + error};
    }
    for (size_t j = 0; j < subset.size(); ++j) {
      batch->log_likelihood[subset[j]][k] = results[j].log_likelihood;
      batch->pruned[subset[j]][k] = mask != nullptr;
    }
    if (combiner_) return std::nullopt;
    // The device object's host buffers are reused by its second next batch: copy now.
    timeline::Scope scope("product: charts to the host");
    const int32_t states = product_.grammar(k).num_states();
    host_pool_.ParallelFor(static_cast<int>(subset.size()), [&](int j, int) {
      const size_t b = subset[j];
      DeviceInsideOutsideCharts(results[j], batch->length[b], states, &batch->charts[b][k]);
    });
    return std::nullopt;
  }

  // The sentences of `subset` whose grammar k charts derive nothing.
  static std::vector<size_t> NoTree(int k, const std::vector<size_t>& subset,
                                    const BatchCharts& batch) {
    std::vector<size_t> lost;
    for (size_t b : subset) {
      if (!(batch.log_likelihood[b][k] > kNegInf)) lost.push_back(b);
    }
    return lost;
  }

  // Grammar k over batch sentences `order`, as ProductParser computes a grammar: `pruned` (null:
  // exact), the sentences it derives nothing for exact, and those that still derive nothing again
  // with the lexicon widened (pruned, then exact).
  Failure RunGrammar(int k, const std::vector<size_t>& order, const PrunedPass* pruned,
                     BatchCharts* batch) {
    auto run = [&](const std::vector<size_t>& subset) -> Failure {
      if (!pruned) return Passes(k, subset, nullptr, batch);
      if (Failure f = (*pruned)(subset)) return f;
      return Passes(k, NoTree(k, subset, *batch), nullptr, batch);
    };
    if (Failure f = run(order)) return f;
    if (!ProductRetriesWiderLexicon(options_.product, *lexicons_[k])) return std::nullopt;
    const std::vector<size_t> lost = NoTree(k, order, *batch);
    if (lost.empty()) return std::nullopt;
    host_pool_.ParallelFor(static_cast<int>(lost.size()), [&](int j, int) {
      const size_t b = lost[j];
      batch->own[b][k] = ProductLexicalScores(product_, k, *lexicons_[k], *batch->words[b], nullptr,
                                              /*widen=*/true);
      batch->lexical[b][k] = &batch->own[b][k];
    });
    return run(lost);
  }

  // kPerGrammar: grammar k's own pre-parses of `subset`, then its passes under their mask.
  Failure OwnPrunedPass(int k, const std::vector<size_t>& subset, BatchCharts* batch) {
    std::vector<const LexicalScores*> lexical;
    for (size_t b : subset) lexical.push_back(batch->lexical[b][k]);
    std::vector<size_t> positions(subset.size());
    std::iota(positions.begin(), positions.end(), size_t{0});
    Failure failure;
    Failure pre = members_[k].pruner->RunBatch(lexical, positions, [&](CudaPrunedBatch& device) {
      // The fine mask holds the cells in the pruner's order (device.indices).
      std::vector<size_t> which;
      for (size_t p : device.indices) which.push_back(subset[p]);
      failure = Passes(k, which, device.fine_mask, batch);
    });
    return pre ? pre : failure;
  }

  // kShared: grammar 0's pre-parses of the batch (its SentenceInput lexical scores), and every
  // grammar's passes under their survivors projected to its states.
  Failure SharedRound(const std::vector<size_t>& all, BatchCharts* batch) {
    std::vector<const LexicalScores*> lexical;
    for (size_t b : all) lexical.push_back(batch->lexical[b][0]);
    Failure failure;
    Failure pre = members_[0].pruner->RunBatch(lexical, all, [&](CudaPrunedBatch& device) {
      std::vector<int64_t> first_cell(all.size(), 0);
      int64_t cells = 0;
      for (size_t b : device.indices) {
        first_cell[b] = cells;
        cells += Chart::NumCells(batch->length[b]);
      }
      for (int k = 0; k < product_.size() && !failure; ++k) {
        const PrunedPass pass = [&](const std::vector<size_t>& subset) -> Failure {
          std::vector<int64_t> source;
          for (size_t b : subset) {
            for (int64_t c = 0; c < Chart::NumCells(batch->length[b]); ++c)
              source.push_back(first_cell[b] + c);
          }
          std::string error;
          const uint8_t* mask = projection_->Project(k, device.fine_mask, source, &error);
          if (!mask) return DeviceFailure{.error = error};
          return Passes(k, subset, mask, batch);
        };
        failure = RunGrammar(k, device.indices, &pass, batch);
      }
    });
    return pre ? pre : failure;
  }

  const GrammarProduct& product_;
  std::vector<const Lexicon*> lexicons_;
  std::vector<Member> members_;
  std::unique_ptr<cuda::DeviceMaskProjection> projection_;  // kShared only
  std::unique_ptr<cuda::DeviceProductMaxRule> combiner_;    // null: the combination on the host
  CudaProductOptions options_;
  double host_budget_;
  ThreadPool host_pool_;  // lexical scores and chart copies on the device's thread
};

StatusOr<std::unique_ptr<Backend>> Make(const GrammarProduct& product,
                                        std::vector<const Lexicon*> lexicons,
                                        std::vector<CudaProductBackend::Member> members,
                                        std::unique_ptr<cuda::DeviceMaskProjection> projection,
                                        std::unique_ptr<cuda::DeviceProductMaxRule> combiner,
                                        const CudaProductOptions& options) {
  CudaProductOptions made = options;
  if (options.product.pruning &&
      options.device.max_batch_sentences == DeviceBackendOptions{}.max_batch_sentences) {
    made.device.max_batch_sentences = 1024;  // as the pruned max-rule backend
  }
  double host_budget = double(options.host_chart_bytes);
  if (host_budget <= 0) {
    host_budget = 0.4 * double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  }
  return std::unique_ptr<Backend>(std::make_unique<CudaProductBackend>(
      product, std::move(lexicons), std::move(members), std::move(projection), std::move(combiner),
      made, host_budget));
}

}  // namespace

StatusOr<std::unique_ptr<Backend>> MakeCudaProductBackend(const GrammarProduct& product,
                                                          std::vector<const Lexicon*> lexicons,
                                                          const CudaProductOptions& options) {
  if (static_cast<int>(lexicons.size()) != product.size()) {
    return Status::Error("a product backend needs one lexicon per grammar");
  }
  if (!cuda::BuiltWithCuda()) {
    return Status::Error("this build has no CUDA support; use --backend cpu");
  }
  if (!cuda::DeviceAvailable()) return Status::Error("no CUDA device; use --backend cpu");
  const int m = product.size();
  const bool pruned = options.product.pruning.has_value();
  const bool shared = pruned && options.product.mask == ProductPruning::kShared;
  const int pruners = !pruned ? 0 : shared ? 1 : m;
  // The device pool, shared as MakeCudaMaxRuleBackend shares it, then evenly by the grammars.
  size_t free_bytes = 0, total_bytes = 0;
  cuda::DeviceMemory(&free_bytes, &total_bytes);
  const size_t given = options.device.max_batch_bytes;
  const double pool = given ? double(given) : double(free_bytes);
  // With the combination on the device, its stores of the charts (two thirds of the passes'
  // bytes) take a share of the pool too.
  const bool on_device = options.product.decoder.kbest <= 1 && !options.host_combination &&
                         m <= cuda::kMaxProductMembers;
  double passes = pruned ? (given ? 0.6 : 0.45) : (given ? 1.0 : 0.85);
  double pre_parses = given ? 0.4 : 0.3;
  double combination = 0;
  if (on_device) {
    passes = pruned ? (given ? 0.36 : 0.27) : (given ? 0.58 : 0.5);
    pre_parses = given ? 0.3 : 0.25;
    combination = pruned ? (given ? 0.34 : 0.23) : (given ? 0.42 : 0.35);
  }
  const cuda::DeviceInsideOutsideOptions device_options{
      .max_batch_bytes = std::max<size_t>(1, size_t(passes * pool / m))};
  // Each grammar's objects are made at once (each takes seconds with a big grammar).
  std::vector<std::optional<StatusOr<std::unique_ptr<cuda::DeviceInsideOutside>>>> devices(m);
  std::vector<std::optional<StatusOr<std::unique_ptr<CudaCoarseToFine>>>> made_pruners(pruners);
  {
    std::vector<std::jthread> threads;
    for (int k = 0; k < m; ++k) {
      threads.emplace_back([&, k] {
        devices[k].emplace(CreateDeviceInsideOutside(product.grammar(k), device_options));
      });
    }
    for (int k = 0; k < pruners; ++k) {
      threads.emplace_back([&, k] {
        made_pruners[k].emplace(CudaCoarseToFine::Create(
            product.grammar(k), *options.product.pruning,
            {.max_batch_bytes = std::max<size_t>(1, size_t(pre_parses * pool / pruners)),
             .threads = options.device.extraction_threads,
             .fine_mask_only = true}));
      });
    }
  }
  std::vector<CudaProductBackend::Member> members(m);
  for (int k = 0; k < m; ++k) {
    if (!devices[k]->ok()) {
      return Status::Error(product.label(k) + ": " + devices[k]->status().message());
    }
    members[k].device = std::move(**devices[k]);
  }
  for (int k = 0; k < pruners; ++k) {
    if (!made_pruners[k]->ok()) {
      return Status::Error(product.label(k) + ": " + made_pruners[k]->status().message());
    }
    members[k].pruner = std::move(**made_pruners[k]);
  }
  std::unique_ptr<cuda::DeviceMaskProjection> projection;
  if (shared) {
    const Grammar& g0 = product.base();
    std::vector<std::vector<int32_t>> targets(m);
    for (int k = 0; k < m; ++k) {
      const Grammar& g = product.grammar(k);
      for (int32_t state = 0; state < g.num_states(); ++state) {
        targets[k].push_back(product.product_symbol(k, g.state_symbol[state]));
      }
    }
    std::string error;
    projection = cuda::DeviceMaskProjection::Create(g0.symbol_first_state, g0.symbol_num_substates,
                                                    g0.num_states(), targets, &error);
    if (!projection) return Status::Error("CUDA product backend: " + error);
  }
  std::unique_ptr<cuda::DeviceProductMaxRule> combiner;
  if (on_device) {
    const Grammar& g0 = product.base();
    std::vector<const cuda::DeviceInsideOutside*> devices_of;
    std::vector<std::vector<int32_t>> member_symbol(m);
    for (int k = 0; k < m; ++k) {
      devices_of.push_back(members[k].device.get());
      for (int32_t s = 0; s < g0.num_symbols(); ++s)
        member_symbol[k].push_back(product.member_symbol(k, s));
    }
    std::vector<uint8_t> is_tag(g0.num_symbols(), 0);
    for (int32_t s = 1; s < g0.num_symbols(); ++s) is_tag[s] = !g0.symbol_is_phrasal[s];
    std::string error;
    combiner = cuda::DeviceProductMaxRule::Create(
        devices_of, member_symbol, is_tag, std::max<size_t>(1, size_t(combination * pool)), &error);
    if (!combiner) return Status::Error("CUDA product backend: " + error);
  }
  return Make(product, std::move(lexicons), std::move(members), std::move(projection),
              std::move(combiner), options);
}

StatusOr<std::unique_ptr<Backend>> MakeCudaProductBackendOver(
    const GrammarProduct& product, std::vector<const Lexicon*> lexicons,
    std::vector<std::unique_ptr<cuda::DeviceInsideOutside>> devices,
    const CudaProductOptions& options) {
  if (static_cast<int>(lexicons.size()) != product.size() ||
      static_cast<int>(devices.size()) != product.size()) {
    return Status::Error("a product backend needs one lexicon and one device object per grammar");
  }
  if (options.product.pruning) return Status::Error("MakeCudaProductBackendOver: exact only");
  std::vector<CudaProductBackend::Member> members(devices.size());
  for (size_t k = 0; k < devices.size(); ++k) members[k].device = std::move(devices[k]);
  return Make(product, std::move(lexicons), std::move(members), nullptr, nullptr, options);
}

}  // namespace cky
