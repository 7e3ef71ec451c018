// Makes a backend (parser/backend.h) from three independent choices: the device it runs on, the
// decoder, and coarse-to-fine pruning. Options are enums; the edges (the CLI, Python) turn their
// strings into them with the Parse* functions below, which name the accepted values on failure.
//
//   BackendOptions options;                        // max-rule, pruning and device chosen for you
//   options.device = *ParseDeviceKind("cpu");
//   auto backend = MakeBackend(model.grammar, options);
//
// The defaults are the command line's: the max-rule decoder (the Berkeley parser's default) with
// `auto` pruning on the `auto` device.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "grammar_io/grammar.h"
#include "parser/backend.h"

namespace cky {

enum class DeviceKind {
  kAuto,       // CUDA when this build has it and a device is present, else kCpu
  kReference,  // the plain single-threaded reference every other device is tested against
  kCpu,        // all cores, sentences in parallel
  kCuda,       // one CUDA device; several with BackendOptions::devices
};

// Coarse-to-fine pruning (parser/coarse_to_fine.h). kAuto: the measured best per device, decoder
// and grammar (AutoPruning below).
enum class PruneMode { kAuto, kOff, kFast, kAccurate, kSafe, kBalanced };

struct BackendOptions {
  DeviceKind device = DeviceKind::kAuto;
  int threads = 0;     // CPU threads (decoding on the CPU, tree extraction); 0 = all
  std::string kernel;  // CUDA Viterbi kernel variant (cuda/viterbi/viterbi.h); "" = the default
  DecoderKind decoder = DecoderKind::kMaxRule;
  PruneMode prune = PruneMode::kAuto;
  // With pruning: pre-parse only at these levels of the split hierarchy (PruningOptions::levels;
  // 0 = X-bar); empty: the mode's own.
  std::vector<int32_t> prune_levels;
  // CUDA devices to parse on, one backend each, all at once (parser/multi_device_backend.h); a
  // device may repeat (two backends share it). Empty: one backend on the current device. Needs
  // the cuda (or auto) device; each backend prunes as one GPU's does (auto: the max-rule default's
  // pre-parses, Viterbi exact).
  std::vector<int> devices;
  // Max-rule only: > 1 also decodes the k best trees (ParseOutcome::kbest; parser/kbest.h).
  int kbest = 1;
  KBestStyle kbest_style = KBestStyle::kExact;
  // The first batch's lexical scores when the caller makes them while the backend is made
  // (LoadedParserOptions::beside_backend), each with its ahead_id; blocks until they are made
  // (empty: none). Pruned Viterbi on one GPU projects them to its first pre-parse level while the
  // CUDA context is made, so that the first batch's kernels need not wait for that. May be empty.
  std::function<std::span<const LexicalScores>()> first_lexical;
};

// The strings of the edges: "auto", "reference", "cpu", "cuda"; "max-rule", "viterbi"; "auto",
// "off", "fast" (also "on"), "accurate", "safe"; "exact", "berkeley". Errors name the accepted
// values.
StatusOr<DeviceKind> ParseDeviceKind(std::string_view name);
StatusOr<DecoderKind> ParseDecoderKind(std::string_view name);
StatusOr<PruneMode> ParsePruneMode(std::string_view name);
StatusOr<KBestStyle> ParseKBestStyle(std::string_view name);
// The four at once, for an edge that has the rest of `options` already (threads, kernel, devices,
// kbest): the first error wins.
StatusOr<BackendOptions> ParseBackendOptions(std::string_view device, std::string_view decoder,
                                             std::string_view prune, std::string_view kbest_style,
                                             BackendOptions options);
std::string_view NameOf(DeviceKind device);
std::string_view NameOf(DecoderKind decoder);
std::string_view NameOf(PruneMode prune);

// What kAuto becomes: the device (CUDA when available), and the pruning for a device, decoder and
// grammar, from measurements (bench/RESULTS.md): on the CPU `safe` (the fastest setting within
// 0.05 F1 of exact parsing on GUM, both decoders) except Viterbi with a grammar under 50,000
// binary rules (the pre-parses cost more than they save); on a GPU `balanced` for max-rule (its
// finer levels prune more: the passes they feed cost the most there) and off for Viterbi; off on
// the reference (the oracle).
DeviceKind ResolveDevice(DeviceKind device);
PruneMode AutoPruning(DeviceKind resolved_device, DecoderKind decoder, const Grammar& grammar);
// The pre-parse levels that automatic pruning uses (PruningOptions::levels; empty: every level
// below the grammar): on a GPU every other level from 0 (0, 2, 4 for an sm6 grammar), which kept
// the trees of every level on the GUM test sentences and parsed faster (bench/RESULTS.md); on
// the CPU every level, as the Berkeley parser.
std::vector<int32_t> AutoPruningLevels(DeviceKind resolved_device, const Grammar& grammar);

// Builds the backend. Fails for an impossible combination (k-best with Viterbi, pruning with
// several devices or on the reference) and for kCuda when this build or machine has no device.
StatusOr<std::unique_ptr<Backend>> MakeBackend(const Grammar& grammar,
                                               const BackendOptions& options);

}  // namespace cky
