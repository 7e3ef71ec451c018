// The CUDA Viterbi kernel variants in one registry. Each kernel family's tuning is a policy (CUB
// style: named compile-time fields; a variant's policy derives from its family's defaults or from
// the variant it extends and overrides what it changes), and ForEachVariant maps every name that
// DeviceViterbiOptions::kernel takes to its policy, with a line of description. The kernel files
// instantiate their family's variants from this list; variants.cpp lists the names (with or
// without CUDA). Plain C++: no CUDA types. cuda/README.md says what each kernel and option does.
#pragma once

#include <type_traits>

#include "cuda/viterbi/viterbi.h"

namespace cky::cuda::viterbi {

using Family = ViterbiKernelFamily;

// Kernels 1-6 (paper.cu): Yi et al.'s rule mappings.
enum class PaperMapping {
  kThreadAtomicGlobal,  // 1: a thread per rule, global atomic max
  kThreadAtomicShared,  // 2: a thread per rule, shared atomics over the block's parent range
  kBlockAtomicShared,   // 3: a block per (virtual) parent, shared atomic max
  kBlockReduce,         // 4: a block per (virtual) parent, tree-shaped reduction
  kBlockReduceStaged,   // 5: 4 with each split's child cells staged in shared memory
  kBlockReduceSeq,      // 6: 4 with spans in sequence (a launch per start position)
};
template <PaperMapping kMapping_>
struct PaperPolicy {
  static constexpr Family kFamily = Family::kPaper;
  static constexpr PaperMapping kMapping = kMapping_;
};

// Kernel 7 (pair_fused.cu): per child-pair tile and group of G cells, split maxima per substate
// pair, then a warp per parent state of the tile.
struct PairFusedPolicy {
  static constexpr Family kFamily = Family::kPairFused;
  static constexpr int kGroup = 8;             // G: cells of one span length per group (4, 8, 16)
  static constexpr int kBandLimit = 512;       // most substate pairs in a tile (bands of B)
  static constexpr bool kSizeClasses = false;  // a launch per tile size class (<= 64, 128, ...)
};

// Kernel 8 (pair_acc.cu): a block per cell group over a share of all tiles, parents' maxima in
// shared memory.
struct PairAccPolicy {
  static constexpr Family kFamily = Family::kPairAcc;
  static constexpr int kGroup = 8;  // G: 8 or 16
  static constexpr int kBandLimit = 512;
};

// Kernel 9 (pair_seg.cu, pair_seg_multi.cu): kernel 7 with bands of 1,024, padded split maxima and
// rule slots. The defaults are pair-seg-g8; the options after -a4-m are the letters of the names
// (pair_seg.cu says how each works, cuda/README.md what it gave).
struct PairSegPolicy {
  static constexpr Family kFamily = Family::kPairSeg;
  static constexpr int kGroup = 8;           // G: 8 or 16
  static constexpr int kBandLimit = 1024;    // most substate pairs in a tile
  static constexpr int kSplitUnroll = 1;     // split loop unrolled this many times; -1: prefetched
  static constexpr bool kPad = true;         // split maxima padded against bank conflicts
  static constexpr bool kAligned = false;    // -a4: float4 loads from an aligned chart copy
  static constexpr bool kMask = false;       // -m: per-group presence masks skip (tile, group)s
  static constexpr int kMinBlocks = 0;       // -oN: at least N blocks per SM (0: no bound)
  static constexpr bool kLaneRules = false;  // r: lanes take runs of one parent's rules
  static constexpr bool kSplitPar = false;   // s: lanes share a 4 x 4 block's split points
  static constexpr bool kTable = false;      // t: the split table (cells, presence bits)
  static constexpr bool kQuadPad = false;    // q: substate pairs padded to 4 columns
  static constexpr bool kPipe = false;       // w: two barriers per group (double buffers)
  static constexpr bool kAdaptiveUnits = false;   // a: shorter rule units for small tiles (host)
  static constexpr bool kKeepRules = false;       // k: L1 eviction hints
  static constexpr bool kMultiGroup = false;      // g: up to 4 cell groups per block
  static constexpr bool kMin5 = false;            // 5: at least 5 blocks per SM
  static constexpr bool kUnaryCells = false;      // u: the unary pass over up to 4 cells a block
  static constexpr bool kRowOffsets = false;      // o: split lists of 32-bit row offsets
  static constexpr bool kPrefetchSplits = false;  // p: the next split's rows loaded early
  static constexpr bool kCpAsync = false;         // c: the same through cp.async
  static constexpr bool kStageRules = false;      // l: the tile's rules staged in shared memory
  static constexpr bool kGroupList = false;       // n: per-block lists of the allowed groups
};

// The variants' policies.
struct PairFusedG8Wide : PairFusedPolicy {
  static constexpr int kBandLimit = 1024;
};
struct PairFusedG16Wide : PairFusedG8Wide {
  static constexpr int kGroup = 16;
};
struct PairFusedG16 : PairFusedPolicy {
  static constexpr int kGroup = 16;
};
struct PairFusedG8Classes : PairFusedPolicy {
  static constexpr bool kSizeClasses = true;
};
struct PairFusedG4 : PairFusedPolicy {
  static constexpr int kGroup = 4;
};
struct PairAccG16 : PairAccPolicy {
  static constexpr int kGroup = 16;
};

struct PairSegG8U2 : PairSegPolicy {
  static constexpr int kSplitUnroll = 2;
};
struct PairSegG16 : PairSegPolicy {
  static constexpr int kGroup = 16;
};
struct PairSegG8NoPad : PairSegPolicy {
  static constexpr bool kPad = false;
};
struct PairSegG8A4 : PairSegPolicy {
  static constexpr bool kAligned = true;
};
struct PairSegG16A4 : PairSegG8A4 {
  static constexpr int kGroup = 16;
};
struct PairSegA4M : PairSegG8A4 {
  static constexpr bool kMask = true;
};
struct PairSegB512 : PairSegA4M {
  static constexpr int kBandLimit = 512;
};
struct PairSegB512O6 : PairSegB512 {
  static constexpr int kMinBlocks = 6;
};
struct PairSegB512O7 : PairSegB512 {
  static constexpr int kMinBlocks = 7;
};
struct PairSegB512O8 : PairSegB512 {
  static constexpr int kMinBlocks = 8;
};
struct PairSegB640O8 : PairSegB512O8 {
  static constexpr int kBandLimit = 640;
};
struct PairSegP : PairSegA4M {
  static constexpr int kSplitUnroll = -1;
};
struct PairSegR : PairSegA4M {
  static constexpr bool kLaneRules = true;
};
struct PairSegS : PairSegA4M {
  static constexpr bool kSplitPar = true;
};
struct PairSegT : PairSegA4M {
  static constexpr bool kTable = true;
};
struct PairSegRs : PairSegR {
  static constexpr bool kSplitPar = true;
};
struct PairSegRst : PairSegRs {
  static constexpr bool kTable = true;
};
struct PairSegRt : PairSegR {
  static constexpr bool kTable = true;
};
struct PairSegRtq : PairSegRt {
  static constexpr bool kQuadPad = true;
};
struct PairSegRtqw : PairSegRtq {
  static constexpr bool kPipe = true;
};
struct PairSegRtqwa : PairSegRtqw {
  static constexpr bool kAdaptiveUnits = true;
};
struct PairSegRtqwk : PairSegRtqw {
  static constexpr bool kKeepRules = true;
};
struct PairSegRtqwak : PairSegRtqwa {
  static constexpr bool kKeepRules = true;
};
struct PairSegRta : PairSegRt {
  static constexpr bool kAdaptiveUnits = true;
};
struct PairSegRtk : PairSegRt {
  static constexpr bool kKeepRules = true;
};
struct PairSegRtak : PairSegRta {
  static constexpr bool kKeepRules = true;
};
struct PairSegRtu : PairSegRt {
  static constexpr bool kUnaryCells = true;
};
struct PairSegRtg : PairSegRt {
  static constexpr bool kMultiGroup = true;
};
struct PairSegRtgak : PairSegRtg {
  static constexpr bool kAdaptiveUnits = true, kKeepRules = true;
};
struct PairSegRtgak5 : PairSegRtgak {
  static constexpr bool kMin5 = true;
};
struct PairSegRtgaku : PairSegRtgak {
  static constexpr bool kUnaryCells = true;
};
struct PairSegRtgakuo : PairSegRtgaku {
  static constexpr bool kRowOffsets = true;
};
struct PairSegRtgakuop : PairSegRtgakuo {
  static constexpr bool kPrefetchSplits = true;
};
struct PairSegRtgakuoc : PairSegRtgakuo {
  static constexpr bool kCpAsync = true;
};
struct PairSegRtgakuo5 : PairSegRtgakuo {
  static constexpr bool kMin5 = true;
};
struct PairSegRtgakuol : PairSegRtgakuo {
  static constexpr bool kStageRules = true;
};
struct PairSegRtgakuo5l : PairSegRtgakuo5 {
  static constexpr bool kStageRules = true;
};
struct PairSegRtgakuopl : PairSegRtgakuop {
  static constexpr bool kStageRules = true;
};
struct PairSegRtgakuopn : PairSegRtgakuop {
  static constexpr bool kGroupList = true;
};
struct PairSegRtgakuopln : PairSegRtgakuopl {
  static constexpr bool kGroupList = true;
};
struct PairSegRtgakuo5ln : PairSegRtgakuo5l {
  static constexpr bool kGroupList = true;
};

// One entry of the registry: a variant's name, its policy P, a line of description, and whether
// it is the production path (the default) or a research variant.
enum class Role { kProduction, kResearch };
template <typename P>
struct Registered {
  using Policy = P;
  const char* name;
  Role role;
  const char* description;
};

// Calls visit(Registered<P>{...}) for every variant, the default first: the one list of names.
template <typename Visit>
void ForEachVariant(Visit&& visit) {
  constexpr Role kProduction = Role::kProduction, kResearch = Role::kResearch;
  using M = PaperMapping;
  visit(Registered<PairSegRtgakuopln>{
      "pair-seg-g8-a4-m-rtgakuopln", kProduction,
      "the default: kernel 9 -rtgakuop with staged rules (l) and per-block group lists (n)"});
  visit(Registered<PairSegRtgaku>{"pair-seg-g8-a4-m-rtgaku", kResearch,
                                  "the previous default: -rt with up to 4 groups a block (g), "
                                  "adaptive units (a), L1 hints (k), 4-cell unary blocks (u)"});
  visit(Registered<PairSegA4M>{"pair-seg-g8-a4-m", kResearch,
                               "kernel 9, 8-cell groups, aligned rows (a4), presence masks (m)"});
  visit(Registered<PairSegB512O8>{"pair-seg-g8-a4-m-b512-o8", kResearch,
                                  "-a4-m, bands of 512 substate pairs, at least 8 blocks per SM"});
  visit(Registered<PairSegG8A4>{"pair-seg-g8-a4", kResearch,
                                "kernel 9, 8-cell groups, float4 loads from an aligned chart"});
  visit(Registered<PairSegB512>{"pair-seg-g8-a4-m-b512", kResearch,
                                "-a4-m with bands of 512 substate pairs"});
  visit(Registered<PairSegB512O6>{"pair-seg-g8-a4-m-b512-o6", kResearch,
                                  "-a4-m, bands of 512, at least 6 blocks per SM"});
  visit(Registered<PairSegB512O7>{"pair-seg-g8-a4-m-b512-o7", kResearch,
                                  "-a4-m, bands of 512, at least 7 blocks per SM"});
  visit(Registered<PairSegB640O8>{"pair-seg-g8-a4-m-b640-o8", kResearch,
                                  "-a4-m, bands of 640, at least 8 blocks per SM"});
  visit(Registered<PairSegP>{"pair-seg-g8-a4-m-p", kResearch,
                             "-a4-m, the next split's loads issued before the current max-plus"});
  visit(Registered<PairSegR>{"pair-seg-g8-a4-m-r", kResearch,
                             "-a4-m with lane rules (r): runs of one parent's rules per lane"});
  visit(Registered<PairSegS>{"pair-seg-g8-a4-m-s", kResearch,
                             "-a4-m with lanes sharing a 4 x 4 block's split points (s)"});
  visit(Registered<PairSegT>{"pair-seg-g8-a4-m-t", kResearch,
                             "-a4-m with the split table (t): each split's cells and presence"});
  visit(Registered<PairSegRs>{"pair-seg-g8-a4-m-rs", kResearch,
                              "lane rules and split-parallel lanes"});
  visit(Registered<PairSegRst>{"pair-seg-g8-a4-m-rst", kResearch,
                               "lane rules, split-parallel lanes and the split table"});
  visit(Registered<PairSegRt>{"pair-seg-g8-a4-m-rt", kResearch, "lane rules and the split table"});
  visit(Registered<PairSegRtq>{"pair-seg-g8-a4-m-rtq", kResearch,
                               "-rt with substate pairs padded to 4 columns (q), 5 blocks per SM"});
  visit(Registered<PairSegRtqw>{"pair-seg-g8-a4-m-rtqw", kResearch,
                                "-rtq with two barriers per group (w: double-buffered lists)"});
  visit(Registered<PairSegRtqwa>{"pair-seg-g8-a4-m-rtqwa", kResearch,
                                 "-rtqw with adaptive rule units (a)"});
  visit(Registered<PairSegRtqwk>{"pair-seg-g8-a4-m-rtqwk", kResearch,
                                 "-rtqw with L1 eviction hints (k)"});
  visit(Registered<PairSegRtqwak>{"pair-seg-g8-a4-m-rtqwak", kResearch,
                                  "-rtqw with adaptive units and L1 hints"});
  visit(Registered<PairSegRta>{"pair-seg-g8-a4-m-rta", kResearch, "-rt with adaptive units"});
  visit(Registered<PairSegRtk>{"pair-seg-g8-a4-m-rtk", kResearch, "-rt with L1 eviction hints"});
  visit(Registered<PairSegRtak>{"pair-seg-g8-a4-m-rtak", kResearch,
                                "-rt with adaptive units and L1 hints"});
  visit(Registered<PairSegRtg>{"pair-seg-g8-a4-m-rtg", kResearch,
                               "-rt with up to 4 cell groups per block (g)"});
  visit(Registered<PairSegRtgak>{"pair-seg-g8-a4-m-rtgak", kResearch,
                                 "-rtg with adaptive units and L1 hints"});
  visit(Registered<PairSegRtgak5>{"pair-seg-g8-a4-m-rtgak5", kResearch,
                                  "-rtgak with at least 5 blocks per SM"});
  visit(Registered<PairSegRtu>{"pair-seg-g8-a4-m-rtu", kResearch,
                               "-rt with the unary pass over up to 4 cells per block (u)"});
  visit(Registered<PairSegRtgakuo>{"pair-seg-g8-a4-m-rtgakuo", kResearch,
                                   "-rtgaku with split lists of 32-bit row offsets (o)"});
  visit(Registered<PairSegRtgakuop>{"pair-seg-g8-a4-m-rtgakuop", kResearch,
                                    "-rtgakuo with the next split's rows prefetched (p)"});
  visit(Registered<PairSegRtgakuoc>{"pair-seg-g8-a4-m-rtgakuoc", kResearch,
                                    "-rtgakuo with the next splits' rows copied by cp.async (c)"});
  visit(Registered<PairSegRtgakuo5>{"pair-seg-g8-a4-m-rtgakuo5", kResearch,
                                    "-rtgakuo with at least 5 blocks per SM"});
  visit(Registered<PairSegRtgakuol>{"pair-seg-g8-a4-m-rtgakuol", kResearch,
                                    "-rtgakuo with the tile's rules staged in shared memory (l)"});
  visit(Registered<PairSegRtgakuo5l>{"pair-seg-g8-a4-m-rtgakuo5l", kResearch,
                                     "-rtgakuo5 with staged rules"});
  visit(Registered<PairSegRtgakuopl>{"pair-seg-g8-a4-m-rtgakuopl", kResearch,
                                     "-rtgakuop with staged rules"});
  visit(Registered<PairSegRtgakuopn>{"pair-seg-g8-a4-m-rtgakuopn", kResearch,
                                     "-rtgakuop with per-block group lists (n)"});
  visit(Registered<PairSegRtgakuo5ln>{"pair-seg-g8-a4-m-rtgakuo5ln", kResearch,
                                      "-rtgakuo5 with staged rules and group lists"});
  visit(Registered<PairFusedG8Wide>{
      "pair-fused-g8-wide", kResearch,
      "kernel 7 (Dunlop et al.): 8-cell groups, bands of 1,024 substate pairs"});
  visit(Registered<PairFusedG16Wide>{"pair-fused-g16-wide", kResearch,
                                     "kernel 7, 16-cell groups, bands of 1,024"});
  visit(Registered<PairFusedG16>{"pair-fused-g16", kResearch,
                                 "kernel 7, 16-cell groups, bands of 512"});
  visit(Registered<PairFusedPolicy>{"pair-fused-g8", kResearch,
                                    "kernel 7, 8-cell groups, bands of 512"});
  visit(Registered<PairFusedG8Classes>{"pair-fused-g8-classes", kResearch,
                                       "kernel 7, 8-cell groups, a launch per tile size class"});
  visit(Registered<PairFusedG4>{"pair-fused-g4", kResearch, "kernel 7, 4-cell groups"});
  visit(Registered<PairAccPolicy>{
      "pair-acc-g8", kResearch,
      "kernel 8: a block per 8-cell group over a share of the tiles, maxima in shared memory"});
  visit(Registered<PairAccG16>{"pair-acc-g16", kResearch, "kernel 8, 16-cell groups"});
  visit(Registered<PairSegPolicy>{
      "pair-seg-g8", kResearch,
      "kernel 9: kernel 7 with bands of 1,024, padded maxima and rule slots, 8-cell groups"});
  visit(Registered<PairSegG8U2>{"pair-seg-g8-u2", kResearch,
                                "pair-seg-g8 with the split loop unrolled twice"});
  visit(Registered<PairSegG16>{"pair-seg-g16", kResearch, "kernel 9, 16-cell groups"});
  visit(Registered<PairSegG8NoPad>{"pair-seg-g8-nopad", kResearch,
                                   "pair-seg-g8 without the padding (to measure bank conflicts)"});
  visit(Registered<PairSegG16A4>{"pair-seg-g16-a4", kResearch,
                                 "kernel 9, 16-cell groups, aligned rows"});
  visit(Registered<PaperPolicy<M::kThreadAtomicGlobal>>{
      "thread-atomic-global", kResearch,
      "kernel 1 (Yi et al.): a thread per rule, global atomics"});
  visit(Registered<PaperPolicy<M::kThreadAtomicShared>>{
      "thread-atomic-shared", kResearch,
      "kernel 2 (Yi et al.): a thread per rule, shared atomics per parent range"});
  visit(Registered<PaperPolicy<M::kBlockAtomicShared>>{
      "block-atomic-shared", kResearch,
      "kernel 3 (Yi et al.): a block per (virtual) parent, shared atomic max"});
  visit(Registered<PaperPolicy<M::kBlockReduce>>{
      "block-reduce", kResearch,
      "kernel 4 (Yi et al.): a block per (virtual) parent, tree-shaped reduction"});
  visit(Registered<PaperPolicy<M::kBlockReduceStaged>>{
      "block-reduce-staged", kResearch,
      "kernel 5 (Yi et al.): block-reduce with the child cells staged in shared memory"});
  visit(Registered<PaperPolicy<M::kBlockReduceSeq>>{
      "block-reduce-seq", kResearch,
      "kernel 6 (Yi et al.): block-reduce with spans in sequence (a launch per start)"});
}

// The policy of a Registered<P>. Each kernel family's file finds its variants' policies with
// ForEachVariant and `if constexpr` on PolicyOf<...>::kFamily, so that it instantiates only its
// own kernels. (The lookup is written out in each file: behind one shared helper, nvcc 13 emits
// different, if equivalent, code for two of the kernels.)
template <typename Variant>
using PolicyOf = typename std::decay_t<Variant>::Policy;

}  // namespace cky::cuda::viterbi
