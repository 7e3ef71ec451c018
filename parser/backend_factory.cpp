#include "parser/backend_factory.h"

#include <algorithm>
#include <array>
#include <functional>
#include <utility>

#include "common/thread_pool.h"
#include "cuda/common/device.h"
#include "parser/coarse_to_fine.h"
#include "parser/cpu_backend.h"
#include "parser/cuda_backend.h"
#include "parser/cuda_max_rule_backend.h"
#include "parser/cuda_pruner.h"
#include "parser/grammar_projection.h"
#include "parser/multi_device_backend.h"

namespace cky {

namespace {

// Below this many binary rules, exact Viterbi on the CPU is faster than pruned (AutoPruning).
constexpr int64_t kSmallGrammarBinaryRules = 50000;

template <typename Enum>
struct Named {
  std::string_view name;
  Enum value;
};

constexpr std::array<Named<DeviceKind>, 4> kDevices = {{{"auto", DeviceKind::kAuto},
                                                        {"reference", DeviceKind::kReference},
                                                        {"cpu", DeviceKind::kCpu},
                                                        {"cuda", DeviceKind::kCuda}}};
constexpr std::array<Named<DecoderKind>, 2> kDecoders = {
    {{"max-rule", DecoderKind::kMaxRule}, {"viterbi", DecoderKind::kViterbi}}};
// "on" is an alias of "fast" (listed after it, so NameOf gives "fast").
constexpr std::array<Named<PruneMode>, 7> kPruneModes = {{{"auto", PruneMode::kAuto},
                                                          {"off", PruneMode::kOff},
                                                          {"fast", PruneMode::kFast},
                                                          {"on", PruneMode::kFast},
                                                          {"accurate", PruneMode::kAccurate},
                                                          {"safe", PruneMode::kSafe},
                                                          {"balanced", PruneMode::kBalanced}}};
constexpr std::array<Named<KBestStyle>, 2> kKBestStyles = {
    {{"exact", KBestStyle::kExact}, {"berkeley", KBestStyle::kBerkeley}}};

template <typename Enum, size_t N>
StatusOr<Enum> Parse(const std::array<Named<Enum>, N>& table, std::string_view name,
                     std::string_view what) {
  std::string expected;
  for (const Named<Enum>& entry : table) {
    if (entry.name == name) return entry.value;
    expected += (expected.empty() ? "" : ", ") + std::string(entry.name);
  }
  return Status::Error("unknown " + std::string(what) + " '" + std::string(name) + "' (expected " +
                       expected + ")");
}

template <typename Enum, size_t N>
std::string_view Name(const std::array<Named<Enum>, N>& table, Enum value) {
  for (const Named<Enum>& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return "?";
}

// One CUDA backend per entry of options.devices, dealt batches by MakeMultiDeviceBackend; the CPU
// backend of the same decoder takes what the devices cannot parse. The device backends report
// device failures (no CPU fallback of their own), so that a failing device is seen and its work
// moved.
StatusOr<std::unique_ptr<Backend>> MakeMultiDevice(const Grammar& grammar,
                                                   const BackendOptions& options,
                                                   const DecoderOptions& decoding,
                                                   const std::optional<PruningOptions>& pruning) {
  if (options.device != DeviceKind::kCuda && options.device != DeviceKind::kAuto) {
    return Status::Error("--devices runs CUDA backends (asked for " +
                         std::string(NameOf(options.device)) + "); use --backend cuda");
  }
  if (!cuda::BuiltWithCuda()) return Status::Error("this build has no CUDA support");
  // Devices shared by several backends split their memory: each backend's batch budget is its
  // share of 85% of the device's free memory (what one backend alone takes).
  std::vector<int> backends_on(cuda::DeviceCount(), 0);
  for (int d : options.devices) {
    if (d < 0 || d >= static_cast<int>(backends_on.size())) {
      return Status::Error("no CUDA device " + std::to_string(d));
    }
    ++backends_on[d];
  }
  std::vector<size_t> budget(backends_on.size(), 0);
  for (size_t d = 0; d < backends_on.size(); ++d) {
    std::string error;
    if (backends_on[d] < 2 || !cuda::SetDevice(static_cast<int>(d), &error)) continue;
    size_t free_bytes = 0, total_bytes = 0;
    cuda::DeviceMemory(&free_bytes, &total_bytes);
    budget[d] = static_cast<size_t>(0.85 * static_cast<double>(free_bytes)) / backends_on[d];
  }
  std::string ignored;  // the caller's thread back on the first device (the others were checked)
  cuda::SetDevice(options.devices.front(), &ignored);
  // Tree extraction runs on the CPU: the cores are shared among the backends.
  const int cores = std::max(
      1, ThreadPool::ResolveThreads(options.threads) / static_cast<int>(options.devices.size()));
  std::vector<BackendSlot> slots;
  for (size_t k = 0; k < options.devices.size(); ++k) {
    const int d = options.devices[k];
    BackendSlot slot{.label = "cuda:" + std::to_string(d), .cuda_device = d};
    if (backends_on[d] > 1) slot.label += "#" + std::to_string(k);
    const DeviceBackendOptions device{
        .max_batch_bytes = budget[d], .extraction_threads = cores, .cpu_fallback = false};
    if (options.decoder == DecoderKind::kMaxRule) {
      slot.make = [&grammar, device, decoding, pruning] {
        return MakeCudaMaxRuleBackend(grammar,
                                      {.device = device, .decoder = decoding, .pruning = pruning});
      };
    } else if (pruning) {
      slot.make = [&grammar, device, pruning] {
        return MakeCudaPrunedBackend(grammar, *pruning,
                                     {.max_batch_bytes = device.max_batch_bytes,
                                      .threads = device.extraction_threads,
                                      .cpu_fallback = false});
      };
    } else {
      slot.make = [&grammar, device, kernel = options.kernel] {
        return MakeCudaBackend(grammar, {.kernel = kernel, .device = device});
      };
    }
    slots.push_back(std::move(slot));
  }
  MultiDeviceOptions multi;
  multi.make_fallback = [&grammar, decoder = options.decoder, threads = options.threads, decoding,
                         pruning]() -> StatusOr<std::unique_ptr<Backend>> {
    return MakeCpuBackend(
        grammar,
        {.decoder = decoder, .threads = threads, .decoding = decoding, .pruning = pruning});
  };
  return MakeMultiDeviceBackend(std::move(slots), multi);
}

// The backends by (device, decoder, pruned), each row one way to make one. `pruning` is null
// for the unpruned rows.
struct Recipe {
  DeviceKind device;
  DecoderKind decoder;
  bool pruned;
  std::function<StatusOr<std::unique_ptr<Backend>>(const Grammar&, const BackendOptions&,
                                                   const DecoderOptions&, const PruningOptions*)>
      make;
};

const std::vector<Recipe>& Recipes() {
  using D = DeviceKind;
  using K = DecoderKind;
  auto cpu = [](bool reference) {
    return [reference](const Grammar& g, const BackendOptions& o, const DecoderOptions& d,
                       const PruningOptions* p) -> StatusOr<std::unique_ptr<Backend>> {
      CpuBackendOptions cpu{.decoder = o.decoder,
                            .reference = reference,
                            .threads = reference ? 1 : o.threads,
                            .decoding = d};
      if (p) cpu.pruning = *p;
      return MakeCpuBackend(g, cpu);
    };
  };
  auto cuda = [](const Grammar& g, const BackendOptions& o, const DecoderOptions& d,
                 const PruningOptions* p) -> StatusOr<std::unique_ptr<Backend>> {
    const DeviceBackendOptions device{.extraction_threads = o.threads};
    if (o.decoder == K::kViterbi) {
      if (p) {
        return MakeCudaPrunedBackend(g, *p,
                                     {.threads = o.threads, .first_lexical = o.first_lexical});
      }
      return MakeCudaBackend(g, {.kernel = o.kernel, .device = device});
    }
    CudaMaxRuleOptions max_rule{.device = device, .decoder = d};
    if (p) max_rule.pruning = *p;
    return MakeCudaMaxRuleBackend(g, max_rule);
  };
  static const std::vector<Recipe> recipes = {
      {D::kReference, K::kViterbi, false, cpu(true)},
      {D::kReference, K::kMaxRule, false, cpu(true)},
      {D::kCpu, K::kViterbi, false, cpu(false)},
      {D::kCpu, K::kMaxRule, false, cpu(false)},
      {D::kCpu, K::kViterbi, true, cpu(false)},
      {D::kCpu, K::kMaxRule, true, cpu(false)},
      {D::kCuda, K::kViterbi, false, cuda},
      {D::kCuda, K::kMaxRule, false, cuda},
      {D::kCuda, K::kViterbi, true, cuda},
      {D::kCuda, K::kMaxRule, true, cuda},
  };
  return recipes;
}

}  // namespace

StatusOr<DeviceKind> ParseDeviceKind(std::string_view name) {
  return Parse(kDevices, name, "backend");
}
StatusOr<DecoderKind> ParseDecoderKind(std::string_view name) {
  return Parse(kDecoders, name, "decoder");
}
StatusOr<PruneMode> ParsePruneMode(std::string_view name) {
  return Parse(kPruneModes, name, "pruning setting");
}
StatusOr<KBestStyle> ParseKBestStyle(std::string_view name) {
  return Parse(kKBestStyles, name, "k-best style");
}
StatusOr<BackendOptions> ParseBackendOptions(std::string_view device, std::string_view decoder,
                                             std::string_view prune, std::string_view kbest_style,
                                             BackendOptions options) {
  auto d = ParseDeviceKind(device);
  if (!d.ok()) return d.status();
  auto k = ParseDecoderKind(decoder);
  if (!k.ok()) return k.status();
  auto p = ParsePruneMode(prune);
  if (!p.ok()) return p.status();
  auto s = ParseKBestStyle(kbest_style);
  if (!s.ok()) return s.status();
  options.device = *d;
  options.decoder = *k;
  options.prune = *p;
  options.kbest_style = *s;
  return options;
}

std::string_view NameOf(DeviceKind device) { return Name(kDevices, device); }
std::string_view NameOf(DecoderKind decoder) { return Name(kDecoders, decoder); }
std::string_view NameOf(PruneMode prune) { return Name(kPruneModes, prune); }

DeviceKind ResolveDevice(DeviceKind device) {
  if (device != DeviceKind::kAuto) return device;
  return CudaBackendAvailable() ? DeviceKind::kCuda : DeviceKind::kCpu;
}

PruneMode AutoPruning(DeviceKind resolved_device, DecoderKind decoder, const Grammar& grammar) {
  switch (resolved_device) {
    case DeviceKind::kCpu:
      // One thread, 100 GUM sentences, exact against safe: small_sm2.gr (4,858 binary rules)
      // 0.9 s against 1.9 s, gum_sm3.gr (27,594) 3.6 s against 4.8 s, the built-in grammar
      // (99,773) 9.8 s against 6.2 s; max-rule gains on all.
      return decoder == DecoderKind::kViterbi &&
                     grammar.num_binary_rules() < kSmallGrammarBinaryRules
                 ? PruneMode::kOff
                 : PruneMode::kSafe;
    case DeviceKind::kCuda:
      return decoder == DecoderKind::kMaxRule ? PruneMode::kBalanced : PruneMode::kOff;
    default:
      return PruneMode::kOff;
  }
}

std::vector<int32_t> AutoPruningLevels(DeviceKind resolved_device, const Grammar& grammar) {
  if (resolved_device != DeviceKind::kCuda) return {};
  // The coarse levels cost little and prune most; every other finer level keeps the trees of
  // all (measured in bench/RESULTS.md, issue 36).
  std::vector<int32_t> levels;
  for (int32_t k = 0; k < NumProjectionLevels(grammar); k += 2) levels.push_back(k);
  return levels;
}

StatusOr<std::unique_ptr<Backend>> MakeBackend(const Grammar& grammar,
                                               const BackendOptions& options) {
  if (options.kbest < 1) return Status::Error("k-best needs k >= 1");
  if (options.kbest > 1 && options.decoder != DecoderKind::kMaxRule) {
    return Status::Error("k-best lists are max-rule trees: use the max-rule decoder");
  }
  const DecoderOptions decoding{.kbest = options.kbest, .kbest_style = options.kbest_style};
  // Several devices run CUDA backends (MakeMultiDevice says so when asked for another), pruned as
  // one device's.
  const DeviceKind device =
      options.devices.empty() ? ResolveDevice(options.device) : DeviceKind::kCuda;
  const PruneMode prune = options.prune == PruneMode::kAuto
                              ? AutoPruning(device, options.decoder, grammar)
                              : options.prune;
  std::optional<PruningOptions> pruning;
  if (prune != PruneMode::kOff) {
    auto named = PruningOptions::Named(std::string(NameOf(prune)));
    if (!named.ok()) return named.status();
    pruning = *named;
    if (!options.prune_levels.empty()) {
      pruning->levels = options.prune_levels;
    } else if (options.prune == PruneMode::kAuto) {
      pruning->levels = AutoPruningLevels(device, grammar);
    }
  } else if (!options.prune_levels.empty()) {
    return Status::Error(std::string("pruning levels were given, but pruning is off") +
                         (options.prune == PruneMode::kAuto
                              ? " (the automatic choice for this device, decoder and grammar): "
                                "choose a pruning mode"
                              : ""));
  }
  if (!options.devices.empty()) {
    return MakeMultiDevice(grammar, options, decoding, pruning);
  }
  for (const Recipe& recipe : Recipes()) {
    if (recipe.device == device && recipe.decoder == options.decoder &&
        recipe.pruned == pruning.has_value()) {
      return recipe.make(grammar, options, decoding, pruning ? &*pruning : nullptr);
    }
  }
  return Status::Error("pruning runs on the cpu and cuda backends (asked for " +
                       std::string(NameOf(device)) + "); use --prune off or --backend cpu");
}

}  // namespace cky
