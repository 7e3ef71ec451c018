// The CUDA backend of products of grammars (parser/product.h) on parser/device_backend.h's skeleton
// (batches, retries in halves, the CPU fallback, background extraction). Per batch, each grammar of
// the product runs its own device inside-outside passes (cuda/inside_outside/inside_outside.h, one
// device object per grammar, made once); with pruning each first pre-parses on the device
// (parser/cuda_pruner.h: kPerGrammar each grammar's own coarse-to-fine, kShared grammar 0's, its
// allowed items projected onto every grammar's states on the device,
// cuda/pruning/mask_projection.h) and the passes run restricted to the allowed items. Then:
//   k-best 1 (the default): the charts stay on the device; each grammar's final charts of the batch
//     are kept there (a retry's replace the first try's) and the product's max-rule pass runs on
//     the device (cuda/inside_outside/product_max_rule.h); only its finite entries come back, and
//     the host extraction threads build the trees from them while the device runs the next batch;
//   k-best > 1 (or CudaProductOptions::host_combination, or more grammars than
//     cuda::kMaxProductMembers): each grammar's charts are copied back,
//     and the host extraction threads combine them (FastProductMaxRuleChart, the k best trees with
//     ProductKBestTrees) while the device runs the next batch.
//
// The decisions are ProductParser's (parser/product.h's shared functions), per sentence from the
// grammars' log P(w) and the product's root score: grammar 0's lexical scores are the
// SentenceInput's, grammar k's lexicons[k]'s; a grammar whose pruned chart derives nothing is
// parsed unpruned; one that still derives nothing is parsed again with its lexicon widened (unless
// the lexicon is exact or options.product.retry_with_wider_lexicon is false); a sentence whose
// pruned product shares no tree is parsed again unpruned (the skeleton's second round). Outcomes
// are ProductParser's: trees the same, scores within K times cuda/inside_outside/inside_outside.h's
// tolerance (the device sums in other orders). What the device cannot take is parsed by
// MakeProductBackend with the same options on the CPU.
//
// Memory: every grammar keeps a device object (passes, and with kPerGrammar a pruner); the device
// pool (options.device.max_batch_bytes, else the free memory) is shared among them as the pruned
// max-rule backend shares it between its two (host combination: passes 85% unpruned; 45% passes
// and 30% pre-parses pruned; device combination: 50% passes and 35% the kept charts unpruned, 27%,
// 25% and 23% pruned), the passes' share split evenly across the grammars. With the host
// combination a batch's charts come back to host memory (pinned buffers of the device objects, and
// the copies the extraction reads): batches are also kept within host_chart_bytes.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "common/status.h"
#include "cuda/inside_outside/inside_outside.h"
#include "lexicon/lexicon.h"
#include "parser/backend.h"
#include "parser/device_backend.h"
#include "parser/product.h"

namespace cky {

struct CudaProductOptions {
  // max_batch_bytes: the device pool shared by the grammars' device objects (0: the free memory).
  // extraction_threads also parse on the CPU what the device cannot (MakeProductBackend).
  DeviceBackendOptions device;
  // Pruning, mask, k-best lists and the wider-lexicon retry (`reference` and `threads` are unused).
  ProductOptions product;
  // The host combination (the charts copied back, FastProductMaxRuleChart on the extraction
  // threads) even when k-best is 1: for comparisons and tests (the device combination is the
  // default there).
  bool host_combination = false;
  // The host combination: host bytes a batch's charts may take: per sentence and grammar
  // NumCells(n) x (num_states + 1) doubles, inside and outside, counted four times (the device
  // objects' two buffers, the copies of this batch and of the one being extracted); 0: 40% of
  // the physical memory.
  size_t host_chart_bytes = 0;
};

// Fails without CUDA support or a device, or when a grammar does not fit the kernels. `product`
// and `lexicons` (one per grammar) must outlive the backend.
StatusOr<std::unique_ptr<Backend>> MakeCudaProductBackend(const GrammarProduct& product,
                                                          std::vector<const Lexicon*> lexicons,
                                                          const CudaProductOptions& options = {});

// For tests of the host side without a device: the backend over the given device objects, one
// per grammar (made by the caller; any DeviceInsideOutside), exact only (options.product.pruning
// must be unset).
StatusOr<std::unique_ptr<Backend>> MakeCudaProductBackendOver(
    const GrammarProduct& product, std::vector<const Lexicon*> lexicons,
    std::vector<std::unique_ptr<cuda::DeviceInsideOutside>> devices,
    const CudaProductOptions& options = {});

}  // namespace cky
