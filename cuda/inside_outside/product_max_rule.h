// The max-rule pass of a product of grammars (parser/product.h: Petrov 2010's sum over the
// grammars of log rule posteriors, then max-rule's recurrences) on a CUDA device, over the charts
// that each grammar's DeviceInsideOutside (inside_outside.h) computed, without copying them to the
// host. The quantities are parser/product.h's ReferenceProductMaxRuleChart /
// FastProductMaxRuleChart (the CPU reference is the oracle); in plain C++ (no CUDA types).
//
// Per batch: Begin(lengths) lays out one store per grammar for the batch's sentences (positions
// 0, 1, ...); after each of grammar k's passes (InsideOutsideBatch), Keep(k, positions) copies
// that batch's charts (inside, outpre, their scales, log P(w), the lexical rows) device to device
// into the store, replacing what a position held (a retry's charts replace the first try's); Run()
// then computes, per cell of every sentence all of whose grammars have a finite log P(w), over the
// product's symbols (grammar 0's):
//   span 1:  score(T) = sum_k log post_k(T over the word), T a tag (not phrasal, not ROOT);
//   binary:  score(A) = max over product base rules A -> B C and splits of sum_k log r_k(A -> B C
//            at split) + score(B, left) + score(C, right), r_k from grammar k's entries (its
//            max-rule layout) as the single grammar's max-rule kernels compute it (outpre of the
//            parent, inside of the children, the cells' scales, / P_k(w)); a rule that some
//            grammar lacks or gives posterior 0 is out; ties to the first base rule in grammar 0's
//            order, then the first split;
//   unary layer (children read before it): score(A) = max(score(A), max over base unary pairs
//            A -> C of sum_k log u_k(A -> C) + score(C)), ties to the binary score, then to the
//            first pair in (A, C) order.
// and copies back the finite entries of the (cells x product symbols) arrays, as IoResult's.
//
// Precision: doubles; each grammar's posterior is a sum in another order than the CPU's, so the
// scores agree with the CPU product's within K times inside_outside.h's relative tolerance, and
// trees could differ only where two candidates tie within rounding.
//
// Kernel mapping (product_max_rule.cu; the rule layout is sum_layouts.h's ProductLayout): span 1,
// a block per cell and a warp per symbol; binary, per span first the (cell, product symbol) pairs
// for which every grammar has an outpre of the symbol, then a work list of the (cell, chunk of at
// most 16 product rules of one parent symbol) blocks whose parent is such a symbol, taken by a
// grid that fills the device; a warp per product rule, per group of 32 splits a lane per split,
// each grammar's r as the single grammar's warp kernel (variant 7) sums it over its entries; a
// merge per (cell, symbol) over its chunks; the unary layer a block per cell, a warp per product
// pair, lanes over each grammar's substate rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/inside_outside/inside_outside.h"

namespace cky::cuda {

// The most grammars a device product takes.
constexpr int kMaxProductMembers = 16;

class DeviceProductMaxRule {
 public:
  virtual ~DeviceProductMaxRule() = default;
  // members: the product's grammars' device objects, grammar 0 first (its symbols are the
  // product's); they must outlive this object and expose MaxRuleRules() and, after their batches,
  // LastBatchCharts(). member_symbol[k][s]: grammar k's symbol of product symbol s
  // (parser/product.h's GrammarProduct::member_symbol); is_tag[s]: 1 when product symbol s is
  // scored over single words (a tag, not ROOT). Base rules and unary pairs are matched across the
  // grammars by these symbols. max_batch_bytes: the device bytes its batches may use (the stores
  // and the pass's arrays). Null, with *error, without a device, with more than kMaxProductMembers
  // grammars or a member without device rules.
  static std::unique_ptr<DeviceProductMaxRule> Create(
      const std::vector<const DeviceInsideOutside*>& members,
      const std::vector<std::vector<int32_t>>& member_symbol, const std::vector<uint8_t>& is_tag,
      size_t max_batch_bytes, std::string* error);

  // Device bytes one sentence of `length` words takes in a batch (every grammar's store, the
  // product's arrays), and the budget.
  virtual size_t BytesForSentence(int32_t length) const = 0;
  virtual size_t BatchBudget() const = 0;

  // Starts a batch of sentences of these lengths (each >= 1), positions 0, 1, ...: the stores are
  // laid out, every position's log P_k(w) is -infinity until Keep. kOutOfMemory: the device cannot
  // hold it (split the batch).
  virtual IoBatchResult Begin(const std::vector<int32_t>& lengths, std::string* error) = 0;
  // Copies grammar k's charts from its device object's last batch (LastBatchCharts): that batch's
  // sentence j into position positions[j] (the same length). Returns once the copy is done (the
  // device object's next batch may overwrite its charts then).
  virtual IoBatchResult Keep(int k, const std::vector<size_t>& positions, std::string* error) = 0;
  // The product's max-rule pass over the batch. (*results)[position]: the finite entries of the
  // product's max-rule arrays (IoResult's entry_* fields: score, split, left and right child
  // symbols, unary child symbol; symbols are grammar 0's), none for a position where some grammar
  // has log P(w) = -infinity (or that derives nothing); log_likelihood is -infinity (a product
  // defines no P(w)). Views valid until the second next Run (two host buffers alternate).
  virtual IoBatchResult Run(std::vector<IoResult>* results, std::string* error) = 0;
};

}  // namespace cky::cuda
