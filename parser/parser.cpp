#include "parser/parser.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/thread_pool.h"
#include "common/timeline.h"
#include "cuda/common/device.h"
#include "parser/coarse_to_fine.h"
#include "parser/cuda_backend.h"
#include "parser/cuda_max_rule_backend.h"
#include "parser/cuda_pruned_backend.h"
#include "parser/max_rule.h"
#include "parser/multi_device_backend.h"
#include "parser/tree_likelihood.h"

namespace cky {

namespace {

// Below this many binary rules, exact Viterbi on the CPU is faster than pruned (see MakeBackend).
constexpr int64_t kSmallGrammarBinaryRules = 50000;

// One CUDA backend per entry of options.devices, dealt batches by MakeMultiDeviceBackend; the CPU
// backend of the same decoder takes what the devices cannot parse. The device backends report
// device failures (cpu_fallback off), so that a failing device is seen and its work moved.
StatusOr<std::unique_ptr<ViterbiBackend>> MakeMultiDevice(const Grammar& grammar,
                                                          const BackendOptions& options,
                                                          const DecoderOptions& decoding) {
  if (options.backend != "cuda" && options.backend != "auto") {
    return Status::Error("--devices runs CUDA backends (asked for " + options.backend +
                         "); use --backend cuda");
  }
  if (options.prune != "off" && options.prune != "auto") {
    return Status::Error("pruning runs on one backend (cpu or one GPU); --devices parses exactly");
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
    if (options.decoder == "max-rule") {
      slot.make = [&grammar, bytes = budget[d], cores, decoding] {
        return MakeCudaMaxRuleBackend(grammar, {.max_batch_bytes = bytes,
                                                .extraction_threads = cores,
                                                .cpu_fallback = false,
                                                .decoder = decoding});
      };
    } else {
      slot.make = [&grammar, bytes = budget[d], cores, kernel = options.kernel] {
        return MakeCudaBackend(grammar, CudaBackendOptions{.kernel = kernel,
                                                           .max_batch_bytes = bytes,
                                                           .extraction_threads = cores,
                                                           .cpu_fallback = false});
      };
    }
    slots.push_back(std::move(slot));
  }
  MultiDeviceOptions multi;
  multi.make_fallback = [&grammar, decoder = options.decoder, threads = options.threads,
                         decoding]() -> StatusOr<std::unique_ptr<ViterbiBackend>> {
    if (decoder == "max-rule") return MakeCpuMaxRuleBackend(grammar, threads, decoding);
    return MakeCpuBackend(grammar, threads);
  };
  return MakeMultiDeviceBackend(std::move(slots), multi);
}

}  // namespace

StatusOr<std::unique_ptr<ViterbiBackend>> MakeBackend(const Grammar& grammar,
                                                      const BackendOptions& options) {
  if (options.decoder != "viterbi" && options.decoder != "max-rule") {
    return Status::Error("unknown decoder '" + options.decoder +
                         "' (expected max-rule or viterbi)");
  }
  std::string name = options.backend;
  std::string prune = options.prune == "on" ? "fast" : options.prune;
  if (options.kbest < 1) return Status::Error("k-best needs k >= 1");
  if (options.kbest > 1 && options.decoder != "max-rule") {
    return Status::Error("k-best lists are max-rule trees: use the max-rule decoder");
  }
  if (options.kbest_style != "exact" && options.kbest_style != "berkeley") {
    return Status::Error("unknown k-best style '" + options.kbest_style +
                         "' (expected exact or berkeley)");
  }
  const DecoderOptions decoding{.kbest = options.kbest,
                                .kbest_berkeley = options.kbest_style == "berkeley"};
  if (!options.devices.empty()) return MakeMultiDevice(grammar, options, decoding);
  if (prune == "auto") {
    const bool cpu = name == "cpu" || (name == "auto" && !CudaBackendAvailable());
    // On the CPU the pre-parses pay for themselves except for Viterbi with a small grammar: one
    // thread, 100 GUM sentences, exact against safe: small_sm2.gr (4,858 binary rules) 0.9 s
    // against 1.9 s, gum_sm3.gr (27,594) 3.6 s against 4.8 s, the built-in grammar (99,773)
    // 9.8 s against 6.2 s; max-rule gains on all (bench/RESULTS.md, "--prune auto on small
    // grammars").
    const bool small_viterbi =
        options.decoder == "viterbi" && grammar.num_binary_rules() < kSmallGrammarBinaryRules;
    // On the GPU, pruned max-rule is faster than exact (H100, en_sm6s over WSJ-23 lengths,
    // pruning_bench: safe 164 sentences/s against 106; gum_sm3.gr on GUM test, whole process, 3.0 s
    // against 2.0 s for safe with the rule floor it had before) with the CPU's trees (tested), so
    // the same safe default; pruned Viterbi was measured barely faster than exact there and stays
    // off (bench/RESULTS.md).
    const bool gpu_max_rule =
        !cpu && options.decoder == "max-rule" && (name == "cuda" || name == "auto");
    prune = (cpu && !small_viterbi) || gpu_max_rule ? "safe" : "off";
  }
  if (prune != "off") {
    auto thresholds = PruningOptions::Named(prune);
    if (!thresholds.ok()) return thresholds.status();
    // Pruned parsing runs on the GPU too (parser/cuda_pruned_backend.h), both decoders.
    const bool gpu = name == "cuda" || (name == "auto" && CudaBackendAvailable());
    if (gpu && options.decoder == "viterbi") {
      return MakeCudaPrunedBackend(grammar, *thresholds, {.threads = options.threads});
    }
    if (gpu) {
      return MakeCudaPrunedMaxRuleBackend(grammar, *thresholds, {.threads = options.threads},
                                          decoding);
    }
    if (name != "cpu" && name != "auto") {
      return Status::Error("pruning runs on the cpu and cuda backends (asked for " + name +
                           "); use --prune off or --backend cpu");
    }
    return MakePrunedCpuBackend(grammar, options.decoder, *thresholds, options.threads, decoding);
  }
  if (options.decoder == "max-rule") {
    if (name == "auto") name = CudaBackendAvailable() ? "cuda" : "cpu";
    if (name == "reference") return MakeReferenceMaxRuleBackend(grammar, decoding);
    if (name == "cpu") return MakeCpuMaxRuleBackend(grammar, options.threads, decoding);
    if (name == "cuda") return MakeCudaMaxRuleBackend(grammar, {.decoder = decoding});
    return Status::Error("unknown backend '" + options.backend +
                         "' (expected auto, cpu, reference or cuda)");
  }
  if (options.decoder != "viterbi") {
    return Status::Error("unknown decoder '" + options.decoder +
                         "' (expected max-rule or viterbi)");
  }
  if (name == "auto") name = CudaBackendAvailable() ? "cuda" : "cpu";
  if (name == "reference") return MakeReferenceBackend(grammar);
  if (name == "cpu") return MakeCpuBackend(grammar, options.threads);
  if (name == "cuda") return MakeCudaBackend(grammar, options.kernel);
  return Status::Error("unknown backend '" + options.backend +
                       "' (expected auto, cpu, reference or cuda)");
}

Parser::Parser(const Grammar& grammar, const Lexicon& lexicon,
               std::unique_ptr<ViterbiBackend> backend, const ParserOptions& options)
    : grammar_(grammar), lexicon_(lexicon), backend_(std::move(backend)), options_(options) {}

LexicalScores ScoreWords(const Grammar& grammar, const Lexicon& lexicon,
                         const std::vector<std::string>& words, bool widen) {
  LexicalScores lexical;
  lexical.length = static_cast<int32_t>(words.size());
  lexical.num_states = grammar.num_states();
  lexical.scores.resize(words.size() * static_cast<size_t>(grammar.num_states()));
  for (size_t i = 0; i < words.size(); ++i) {
    lexicon.Score(
        words[i], static_cast<int>(i),
        std::span<double>(lexical.scores.data() + i * grammar.num_states(), grammar.num_states()),
        widen);
  }
  return lexical;
}

LexicalScores Parser::ScoreWords(const std::vector<std::string>& words, bool widen) const {
  return cky::ScoreWords(grammar_, lexicon_, words, widen);
}

void Parser::ScoreSentences(std::vector<SentenceInput>* inputs, bool widen) {
  // The serial front end of every backend: on all cores, so that it does not cap several GPUs
  // (bench/lexical_scoring_bench). Each sentence's scores are the same whichever thread computes
  // them.
  std::lock_guard lock(scoring_mutex_);
  timeline::Scope scope("lexical scoring");
  if (!scoring_pool_) scoring_pool_ = std::make_unique<ThreadPool>(options_.scoring_threads);
  scoring_pool_->ParallelFor(static_cast<int>(inputs->size()), [&](int i, int) {
    (*inputs)[i].lexical = ScoreWords((*inputs)[i].words, widen);
  });
}

std::vector<ParseOutcome> Parser::Parse(std::span<const std::vector<std::string>> sentences) {
  std::vector<ParseOutcome> outcomes(sentences.size());
  // The backend gets the sentences longest first (equal lengths in input order): the CUDA backends
  // cut device batches of similar lengths from this order anyway, the CPU threads take the long
  // ones first, and the multi-device layer's chunks are then runs of the batch, which it hands
  // on without copying their lexical scores (hundreds of KB a sentence with a large grammar).
  std::vector<size_t> order(sentences.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sentences[a].size() > sentences[b].size(); });
  std::vector<SentenceInput> inputs;
  std::vector<size_t> positions;
  for (size_t i : order) {
    const auto& words = sentences[i];
    if (options_.max_length > 0 && static_cast<int>(words.size()) > options_.max_length) {
      outcomes[i].status = ParseStatus::kTooLong;
      outcomes[i].message = std::to_string(words.size()) + " words, over the limit of " +
                            std::to_string(options_.max_length);
      continue;
    }
    inputs.push_back({words, {}});
    positions.push_back(i);
  }
  ScoreSentences(&inputs);
  std::vector<ParseOutcome> parsed = backend_->ParseBatch(inputs);
  std::vector<SentenceInput> retries;
  std::vector<size_t> retry_positions;
  for (size_t k = 0; k < parsed.size(); ++k) {
    // An exact (.gr) lexicon already gives every score Berkeley's does: widening changes nothing.
    if (options_.retry_with_wider_lexicon && !lexicon_.exact() &&
        parsed[k].status == ParseStatus::kNoParse && !inputs[k].words.empty()) {
      retries.push_back({inputs[k].words, {}});
      retry_positions.push_back(positions[k]);
    }
    outcomes[positions[k]] = std::move(parsed[k]);
  }
  std::vector<const LexicalScores*> lexical(sentences.size(), nullptr);
  for (size_t k = 0; k < positions.size(); ++k) lexical[positions[k]] = &inputs[k].lexical;
  if (!retries.empty()) {
    timeline::Scope scope("retry with a wider lexicon");
    ScoreSentences(&retries, /*widen=*/true);
    std::vector<ParseOutcome> second = backend_->ParseBatchAhead(retries);
    for (size_t k = 0; k < second.size(); ++k) {
      if (second[k].status == ParseStatus::kOk) {
        outcomes[retry_positions[k]] = std::move(second[k]);
        lexical[retry_positions[k]] = &retries[k].lexical;
      }
    }
  }
  if (options_.tree_likelihood || options_.confidence) {
    for (size_t i = 0; i < outcomes.size(); ++i) {
      if (outcomes[i].status == ParseStatus::kOk) AddTreeScores(*lexical[i], &outcomes[i]);
    }
  }
  return outcomes;
}

void Parser::AddTreeScores(const LexicalScores& lexical, ParseOutcome* outcome) const {
  auto score = [&](const Tree& tree, double* tree_likelihood, double* confidence) {
    if (options_.viterbi_decoder) {  // the Berkeley parser's -viterbi values
      *tree_likelihood = outcome->log_likelihood;
      *confidence = 0.0;
      return;
    }
    if (options_.tree_likelihood) {
      auto joint = TreeLogLikelihood(grammar_, lexical, tree);
      *tree_likelihood = joint.ok() ? *joint : kNegInf;
      if (!joint.ok() && outcome->message.empty()) outcome->message = joint.status().message();
    }
    if (options_.confidence) {
      auto rebinarized = RebinarizeTree(tree, options_.binarization);
      auto joint = rebinarized.ok() ? TreeLogLikelihood(grammar_, lexical, *rebinarized)
                                    : StatusOr<double>(rebinarized.status());
      *confidence = joint.ok() ? *joint - outcome->log_likelihood : kNegInf;
      if (!joint.ok() && outcome->message.empty()) outcome->message = joint.status().message();
    }
  };
  score(outcome->tree, &outcome->tree_log_likelihood, &outcome->confidence);
  for (ScoredTree& t : outcome->kbest) score(t.tree, &t.tree_log_likelihood, &t.confidence);
}

namespace {

// "NP-3" -> state id of NP_3; -1 when the grammar has no such state.
int32_t StateOfLabel(const Grammar& g, const std::string& label) {
  size_t dash = label.rfind('-');
  if (dash == std::string::npos || dash == 0) return -1;
  return g.FindState(label.substr(0, dash) + "_" + label.substr(dash + 1));
}

struct Scorer {
  const Grammar& g;
  const Lexicon& lexicon;
  std::vector<std::string> words;
  std::vector<double> lexical;
  int position = 0;

  StatusOr<double> Score(const Tree& node) {
    const int32_t state = StateOfLabel(g, node.label);
    if (state < 0) return Status::Error("unknown state '" + node.label + "'");
    if (node.is_preterminal()) {
      lexical.assign(g.num_states(), kNegInf);
      lexicon.Score(node.children[0].label, position++, lexical);
      if (!(lexical[state] > kNegInf)) {
        return Status::Error("no lexical score for '" + node.children[0].label + "' as " +
                             node.label);
      }
      return lexical[state];
    }
    if (node.children.size() == 1) {
      const int32_t child = StateOfLabel(g, node.children[0].label);
      double rule = kNegInf;
      for (int32_t u = g.unary_parent_begin[state]; u < g.unary_parent_begin[state + 1]; ++u) {
        if (g.unary_child[u] == child) rule = g.unary_log_prob[u];
      }
      if (child == state) rule = 0.0;
      if (!(rule > kNegInf)) {
        return Status::Error("no unary rule " + node.label + " -> " + node.children[0].label);
      }
      auto below = Score(node.children[0]);
      if (!below.ok()) return below;
      return rule + *below;
    }
    if (node.children.size() != 2) return Status::Error("node " + node.label + " is not binary");
    const int32_t left = StateOfLabel(g, node.children[0].label);
    const int32_t right = StateOfLabel(g, node.children[1].label);
    double rule = kNegInf;
    for (int32_t r = g.binary_parent_begin[state]; r < g.binary_parent_begin[state + 1]; ++r) {
      if (g.binary_left[r] == left && g.binary_right[r] == right) rule = g.binary_log_prob[r];
    }
    if (!(rule > kNegInf)) {
      return Status::Error("no binary rule " + node.label + " -> " + node.children[0].label + " " +
                           node.children[1].label);
    }
    auto l = Score(node.children[0]);
    if (!l.ok()) return l;
    auto r = Score(node.children[1]);
    if (!r.ok()) return r;
    return rule + *l + *r;
  }
};

}  // namespace

StatusOr<double> ScoreAnnotatedTree(const Grammar& grammar, const Lexicon& lexicon,
                                    const Tree& tree) {
  Scorer scorer{grammar, lexicon, Leaves(tree), {}, 0};
  return scorer.Score(tree);
}

}  // namespace cky
