// cky train: treebank files in, a markovized PCFG out in Berkeley's WriteGrammarToTextFile format.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>

#include "apps/command_util.h"
#include "apps/commands.h"
#include "apps/mpi_link.h"
#include "common/thread_pool.h"
#include "cuda/common/device.h"
#include "grammar_io/berkeley_model.h"
#include "grammar_io/product_grammar.h"
#include "parser/multi_device_backend.h"
#include "train/pcfg_trainer.h"
#include "train/split_merge_trainer.h"
#include "treebank/reader.h"

namespace cky::apps {
namespace {

constexpr size_t kMaxTrainingTreeDepth = 1000;

struct TrainArgs {
  std::vector<std::string> treebanks;
  std::string output_prefix;
  PcfgTrainerOptions options;
  int split_merge_cycles = 0;
  SplitMergeOptions split_merge;
  bool mpi = false;
  std::string backend = "cpu";  // of the split-merge E-step
  std::string devices;          // --devices: "" = the current device
  std::string seeds;            // --seeds: "" = one grammar (--seed)
};

// --seeds: "1,2,5" or "1-4" or a mix ("1-3,7"), each seed once.
StatusOr<std::vector<uint64_t>> ParseSeedList(const std::string& text) {
  std::vector<uint64_t> seeds;
  const Status bad =
      Status::Error("--seeds: expected seeds such as 1,2,3 or 1-8, got '" + text + "'");
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    const size_t dash = item.find('-', 1);
    uint64_t first = 0, last = 0;
    try {
      size_t used = 0;
      first = std::stoull(item.substr(0, dash), &used);
      if (used != item.substr(0, dash).size() || item[0] == '-') return bad;
      last = first;
      if (dash != std::string::npos) {
        const std::string tail = item.substr(dash + 1);
        last = std::stoull(tail, &used);
        if (used != tail.size() || tail.empty() || tail[0] == '-') return bad;
      }
    } catch (const std::exception&) {
      return bad;
    }
    if (last < first || last - first >= kMaxProductMembers) return bad;
    for (uint64_t seed = first; seed <= last; ++seed) {
      if (std::find(seeds.begin(), seeds.end(), seed) != seeds.end()) {
        return Status::Error("--seeds: seed " + std::to_string(seed) + " is listed twice");
      }
      seeds.push_back(seed);
    }
  }
  if (seeds.empty()) return bad;
  if (seeds.size() > kMaxProductMembers) {
    return Status::Error("--seeds: at most " + std::to_string(kMaxProductMembers) +
                         " grammars in a product");
  }
  return seeds;
}

BerkeleyModel TrainSplitMerge(const std::vector<Tree>& trees, const SplitMergeOptions& options);

// SplitMergeOptions::exchange over MPI: a chunk's counts travel as one field of raw doubles.
class MpiShardExchange : public ShardExchange {
 public:
  explicit MpiShardExchange(MpiLink& link) : link_(link) {}
  int shard() const override { return link_.rank(); }
  int shards() const override { return link_.size(); }
  void SendChunk(const std::vector<double>& counts) override {
    link_.Send(0, kChunkTag,
               {std::string(reinterpret_cast<const char*>(counts.data()),
                            counts.size() * sizeof(double))});
  }
  void ReceiveChunk(int from, std::vector<double>* counts) override {
    const std::string bytes = link_.ReceiveFrom(from, kChunkTag).at(0);
    counts->resize(bytes.size() / sizeof(double));
    std::memcpy(counts->data(), bytes.data(), counts->size() * sizeof(double));
  }
  void Broadcast(std::vector<double>& values) override { link_.Broadcast(values); }

 private:
  static constexpr int kChunkTag = 11;
  MpiLink& link_;
};

// Split-merge EM: progress per EM iteration on stderr; writes the text export and PREFIX.ckybin
// (the binary cache, which also carries the lexicon's counts: exact Berkeley lexical scores), or
// with --seeds the product grammar PREFIX.ckyprod.
void RunSplitMerge(const TrainArgs& args, const std::vector<Tree>& trees) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<uint64_t> seeds;
  if (!args.seeds.empty()) {
    auto parsed = ParseSeedList(args.seeds);
    if (!parsed.ok()) Fail(parsed.status().message(), 2);
    seeds = *parsed;
  }
  SplitMergeOptions options = args.split_merge;
  options.cycles = args.split_merge_cycles;
  options.backend = args.backend == "cuda"   ? EStepBackend::kCuda
                    : args.backend == "auto" ? EStepBackend::kAuto
                                             : EStepBackend::kCpu;
  if (!args.devices.empty()) {
    if (args.backend == "cpu") Fail("--devices runs the E-step on GPUs: add --backend cuda", 2);
    auto devices = ParseDeviceList(args.devices, cuda::DeviceCount());
    if (!devices.ok()) Fail(devices.status().message(), 2);
    options.devices = *devices;
  }
  // --mpi: every process reads the trees and trains the same grammar; each computes its share of
  // the E-step's chunks and the counts are summed over the processes; rank 0 logs and writes.
  RunCommandWork(args.mpi, [&](MpiLink* link) {
    if (link) {
      options.exchange = std::make_shared<MpiShardExchange>(*link);
      if (link->rank() > 0) spdlog::set_level(spdlog::level::warn);
    }
    const bool writes = !link || link->rank() == 0;
    auto seconds = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    if (!seeds.empty()) {
      // A product grammar (grammar_io/product_grammar.h): one grammar per seed, in turn, from the
      // same trees; each is the grammar `--seed S` alone trains, byte for byte.
      std::vector<ProductGrammarMember> members;
      for (uint64_t seed : seeds) {
        SplitMergeOptions seeded = options;
        seeded.seed = seed;
        spdlog::info("product grammar: training seed {} ({} of {})", seed, members.size() + 1,
                     seeds.size());
        members.push_back({"seed " + std::to_string(seed), TrainSplitMerge(trees, seeded)});
      }
      if (!writes) return;
      const std::string path = args.output_prefix + ".ckyprod";
      Status written = WriteProductGrammar(members, path);
      if (!written.ok()) Fail(written.message());
      spdlog::info("trained {} grammars of {} split-merge cycles in {:.1f} s; wrote {}",
                   members.size(), options.cycles, seconds(), path);
      return;
    }
    BerkeleyModel model = TrainSplitMerge(trees, options);
    if (!writes) return;
    Status written = WriteGrammarTextFiles(model, args.output_prefix);
    if (!written.ok()) Fail(written.message());
    written = WriteModelCache(model, args.output_prefix + ".ckybin");
    if (!written.ok()) Fail(written.message());
    spdlog::info(
        "trained {} split-merge cycles in {:.1f} s: {} symbols, {} substates, {} binary and {} "
        "closed unary rules, {} lexicon rows; wrote {}.{{grammar,lexicon,splits,words,ckybin}}",
        options.cycles, seconds(), model.grammar.num_symbols(), model.grammar.num_states(),
        model.grammar.num_binary_rules(), model.grammar.num_unary_rules(), model.lexicon.size(),
        args.output_prefix);
  });
}

BerkeleyModel TrainSplitMerge(const std::vector<Tree>& trees, const SplitMergeOptions& options) {
  auto trainer = SplitMergeTrainer::Create(trees, options);
  if (!trainer.ok()) Fail(trainer.status().message());
  const bool on_device = (*trainer)->estep_backend() == "cuda";
  spdlog::info("split-merge: {} training trees, {} symbols, {} threads, E-step on {}",
               (*trainer)->trees().size(), (*trainer)->grammar().symbol_names.size(),
               ThreadPool::ResolveThreads(options.threads),
               on_device ? "cuda (" + cuda::DeviceDescription() + ")" : std::string("the cpu"));
  if (options.backend == EStepBackend::kAuto && !on_device) {
    spdlog::info("no CUDA E-step: {}", (*trainer)->estep_note());
  }
  Status trained = (*trainer)->Train([&](const SplitMergeProgress& p) {
    spdlog::info("cycle {} {} iteration {:2d}: log-likelihood {:.4f} ({:.2f} s, {} substates)",
                 p.cycle, p.phase, p.iteration, p.log_likelihood, p.seconds,
                 (*trainer)->total_substates());
    if (on_device) spdlog::debug("E-step on the device: {}", (*trainer)->estep_profile());
  });
  if (!trained.ok()) Fail(trained.message());
  if (on_device && (*trainer)->estep_backend() != "cuda") {
    spdlog::warn("the CUDA E-step failed ({}); training went on on the CPU",
                 (*trainer)->estep_note());
  }
  auto model = (*trainer)->Export();
  if (!model.ok()) Fail(model.status().message());
  return std::move(*model);
}

void RunTrain(const TrainArgs& args) {
  if (args.mpi && args.split_merge_cycles == 0) {
    Fail("--mpi distributes split-merge training: add --split-merge CYCLES", 2);
  }
  if (!args.seeds.empty() && args.split_merge_cycles == 0) {
    Fail("--seeds trains a product of split-merge grammars: add --split-merge CYCLES", 2);
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<Tree> trees;
  for (const std::string& path : args.treebanks) {
    auto file_trees = ReadTreebankFile(path);
    if (!file_trees.ok()) Fail(file_trees.status().message());
    for (size_t i = 0; i < file_trees->size(); ++i) {
      // The trainers walk trees recursively: one nested far deeper than any treebank's (a damaged
      // file) is refused rather than left to overflow the stack.
      const size_t depth = TreeDepth((*file_trees)[i]);
      if (depth > kMaxTrainingTreeDepth) {
        Fail(path + ": tree " + std::to_string(i + 1) + " is nested " + std::to_string(depth) +
             " levels deep; training takes trees of at most " +
             std::to_string(kMaxTrainingTreeDepth));
      }
      trees.push_back(std::move((*file_trees)[i]));
    }
  }
  if (args.split_merge_cycles > 0) {
    RunSplitMerge(args, trees);
    return;
  }
  auto text = TrainPcfg(trees, args.options);
  if (!text.ok()) Fail(text.status().message());
  Status written = WriteBerkeleyTextExport(*text, args.output_prefix);
  if (!written.ok()) Fail(written.message());
  spdlog::info(
      "trained on {} trees from {} files in {:.2f} s; wrote {}.{{grammar,lexicon,splits,"
      "words}}",
      trees.size(), args.treebanks.size(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
      args.output_prefix);
}

}  // namespace

void AddTrainCommand(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  args->split_merge.threads = 0;
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train a grammar from Penn Treebank files: by default a plain PCFG by relative frequency, "
      "or with --split-merge C a latent-annotation grammar by C cycles of split-merge EM, as the "
      "Berkeley trainer does. Writes a Berkeley WriteGrammarToTextFile export (PREFIX.grammar, "
      ".lexicon, .splits, .words) for `cky parse --grammar PREFIX`, and with --split-merge also "
      "PREFIX.ckybin. Empty elements (-NONE-) and function tags are removed and the root is "
      "labelled ROOT; rules are binarized the Berkeley way (X -> @X last) and unary chains "
      "closed.");
  Shown(cmd->add_option("TREEBANK,-i,--input", args->treebanks,
                        "Treebank files (bracketed trees, one or several lines each; plain, "
                        "gzip, bzip2, xz or zstd; - for stdin)")
            ->required(),
        "FILE...");
  Shown(cmd->add_option("-o,--output", args->output_prefix,
                        "Output prefix: writes PREFIX.grammar, PREFIX.lexicon, PREFIX.splits and "
                        "PREFIX.words")
            ->required(),
        "PREFIX");
  Shown(cmd->add_option("--horizontal", args->options.horizontal_markovization,
                        "Horizontal markovization: how many following siblings a binarization "
                        "intermediate @X remembers (@NP->_JJ_NN); 0 = none (plain @NP), -1 = all")
            ->check(Between(-1, 100))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--vertical", args->options.vertical_markovization,
                        "Vertical markovization: 1 = plain labels, 2 = phrasal labels carry their "
                        "parent's (NP^S), 3 = and their grandparent's (NP^VP^S)")
            ->check(Between(1, 10))
            ->capture_default_str(),
        "N");
  cmd->add_flag("--tag-annotation", args->options.tag_parent_annotation,
                "Annotate POS tags with their parent's label (IN^PP); the lexicon is then "
                "estimated per annotated tag");
  Shown(cmd->add_option("--rare-word-count", args->options.rare_word_max_count,
                        "Words seen at most this often estimate the unknown-word signature rows "
                        "(UNK-...)")
            ->check(Between(1, 1000))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--signature-smoothing", args->options.signature_smoothing,
                        "Weight of a signature's share among all rare words when estimating "
                        "P(signature | tag) from a tag's own rare words")
            ->check(Between(0.0, 1e6))
            ->capture_default_str(),
        "W");
  Shown(cmd->add_option("--smooth-words-up-to", args->options.smoothed_word_max_count,
                        "Known words seen at most this often may also take the tags that rare "
                        "words take (P(tag | word) smoothed with the rare words' tag "
                        "distribution); 0 = off")
            ->check(Between(0, 1000000))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--word-smoothing", args->options.word_smoothing,
                        "Weight of the rare words' tag distribution in that smoothing")
            ->check(Between(0.0, 1e6))
            ->capture_default_str(),
        "W");
  Shown(cmd->add_option(
               "--split-merge", args->split_merge_cycles,
               "Train a latent-annotation grammar with this many split-merge EM cycles "
               "(Petrov et al. 2006, the Berkeley trainer's defaults: h=0, v=1 binarization, "
               "50/20/10 EM iterations after split/merge/smoothing); writes the text export and "
               "PREFIX.ckybin (parse with -g PREFIX.ckybin for Berkeley-exact lexical scores). "
               "0 = the plain PCFG")
            ->check(Between(0, 8))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--merge-fraction", args->split_merge.merge_fraction,
                        "Split-merge: fraction of the splits merged back per cycle")
            ->check(Between(0.0, 0.99))
            ->capture_default_str(),
        "F");
  Shown(cmd->add_option("--split-iterations", args->split_merge.split_iterations,
                        "Split-merge: EM iterations after each split")
            ->check(Between(0, 1000))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--merge-iterations", args->split_merge.merge_iterations,
                        "Split-merge: EM iterations after each merge")
            ->check(Between(0, 1000))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--smooth-iterations", args->split_merge.smooth_iterations,
                        "Split-merge: EM iterations with smoothing at the end of each cycle")
            ->check(Between(0, 1000))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--grammar-smoothing", args->split_merge.grammar_smoothing,
                        "Split-merge: weight each rule substate takes from its siblings in the "
                        "smoothing phase (Berkeley's -smooth 0.01)")
            ->check(Between(0.0, 0.5))
            ->capture_default_str(),
        "S");
  Shown(cmd->add_option("--lexicon-smoothing", args->split_merge.lexicon_smoothing,
                        "Split-merge: the same for the lexicon's word scores (0.1)")
            ->check(Between(0.0, 0.5))
            ->capture_default_str(),
        "S");
  Shown(cmd->add_option("--randomness", args->split_merge.randomness,
                        "Split-merge: random perturbation of split rule scores, in percent")
            ->check(Between(0.0, 100.0))
            ->capture_default_str(),
        "P");
  Shown(cmd->add_option("--rare-word-threshold", args->split_merge.rare_word_threshold,
                        "Split-merge: words seen at most this often also train the unknown-word "
                        "signatures (Berkeley's -rare 20)")
            ->check(Between(0, 1000000))
            ->capture_default_str(),
        "N");
  auto* seed_option = cmd->add_option("--seed", args->split_merge.seed,
                                      "Split-merge: seed of the split perturbation");
  Shown(seed_option->capture_default_str(), "S");
  Shown(cmd->add_option("--seeds", args->seeds,
                        "Split-merge: train one grammar per seed (a list such as 1,2,3 or 1-8), "
                        "in turn from the same trees, and write them as one product grammar, "
                        "PREFIX.ckyprod (no text export), which `cky parse -g PREFIX.ckyprod` "
                        "decodes as a product (Petrov 2010; grammar_io/product_grammar.h). Each "
                        "member is the grammar --seed alone would train")
            ->excludes(seed_option),
        "LIST");
  Shown(cmd->add_option(
               "-t,--threads", args->split_merge.threads,
               "Split-merge: E-step threads (the result does not depend on it; 0 = all cores)")
            ->check(Between(0, kMaxThreads))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("-b,--backend", args->backend,
                        "Split-merge: where the E-step (inside-outside over the training trees) "
                        "runs: cpu (the reference, --threads), cuda (a GPU; an error without "
                        "one), auto (cuda when a GPU is available, else cpu). cuda agrees with cpu "
                        "within 1e-9 relative per expected count (train/README.md)")
            ->check(OneOf({"cpu", "cuda", "auto"}))
            ->capture_default_str(),
        "NAME");
  Shown(cmd->add_option("--devices", args->devices,
                        "Split-merge with --backend cuda: run each E-step on several GPUs at "
                        "once, all or a list of CUDA device numbers such as 0,1 (each takes an "
                        "equal share of the training trees; the expected counts are summed, "
                        "within the same 1e-9 of the CPU's)"),
        "all|LIST");
  cmd->add_flag("--mpi", args->mpi,
                std::string("Split-merge over an MPI job (mpirun -np N cky train --split-merge "
                            "C --mpi ...): every process reads the treebanks, computes its share "
                            "of each E-step's trees, the expected counts are summed over the "
                            "processes in the order one process adds them, and rank 0 writes the "
                            "grammar: byte for byte one process's") +
                    (MpiBuilt() ? "" : ". This build has no MPI"));
  cmd->callback([args] { RunTrain(*args); });
}

}  // namespace cky::apps
