#include "train/split_merge_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "common/thread_pool.h"
#include "cuda/common/device.h"
#include "lexicon/berkeley_lexicon.h"
#include "lexicon/signature.h"
#include "train/cuda_estep.h"
#include "train/pcfg_trainer.h"

namespace cky {
namespace {

constexpr char kRoot[] = "ROOT";
// Trees are cut into this many chunks whatever the thread count, and the chunks' counts are
// summed in chunk order: the sums, hence the grammar, do not depend on the threads.
constexpr int kChunks = 32;

// Berkeley's split tree of a symbol: leaves are the current substates; every split gives each
// leaf two children (2k, 2k + 1), every merge drops the second of a merged pair.
struct SplitTree {
  int32_t label = 0;
  std::vector<SplitTree> children;
};

std::string SplitTreeText(const SplitTree& tree) {
  if (tree.children.empty()) return std::to_string(tree.label);
  std::string out = "(" + std::to_string(tree.label);
  for (const SplitTree& child : tree.children) out += " " + SplitTreeText(child);
  return out + ")";
}

void ExtendSplitTree(SplitTree* tree, bool split) {
  if (tree->children.empty()) {
    if (split) {
      tree->children = {SplitTree{2 * tree->label, {}}, SplitTree{2 * tree->label + 1, {}}};
    } else {
      tree->children = {SplitTree{tree->label, {}}};
    }
    return;
  }
  for (SplitTree& child : tree->children) ExtendSplitTree(&child, split);
}

// Keeps, under every parent of leaves, the leaves that start a merge group, renumbered.
void PruneSplitTree(SplitTree* tree, const std::vector<uint8_t>& keeps,
                    const std::vector<int32_t>& mapping) {
  if (tree->children.empty()) return;
  if (tree->children[0].children.empty()) {
    std::vector<SplitTree> kept;
    for (const SplitTree& leaf : tree->children) {
      if (keeps[leaf.label]) kept.push_back(SplitTree{mapping[leaf.label], {}});
    }
    tree->children = std::move(kept);
    return;
  }
  for (SplitTree& child : tree->children) PruneSplitTree(&child, keeps, mapping);
}

void Leaves(const SplitTree& tree, std::vector<int32_t>* out) {
  if (tree.children.empty()) {
    out->push_back(tree.label);
    return;
  }
  for (const SplitTree& child : tree.children) Leaves(child, out);
}

// SmoothAcrossParentBits' weights: within each top-level branch of the split tree a substate
// keeps 1 - s of its score and gets s / (n - 1) of each other's; no mixing across branches.
std::vector<double> SmoothingMatrix(const SplitTree& tree, int32_t n, double s) {
  std::vector<double> w(size_t(n) * n, 0.0);
  if (n == 1) {
    w[0] = 1.0;
    return w;
  }
  const SplitTree* top = &tree;
  while (top->children.size() == 1) top = &top->children[0];
  for (const SplitTree& branch : top->children) {
    std::vector<int32_t> leaves;
    Leaves(branch, &leaves);
    const double other = s / double(leaves.size() - 1);  // unused when the branch has one leaf
    for (int32_t i : leaves) {
      for (int32_t j : leaves) w[size_t(i) * n + j] = i == j ? 1 - s : other;
    }
  }
  return w;
}

bool HasBareLeaves(const Tree& node) {
  if (node.is_leaf() || node.is_preterminal()) return false;
  for (const Tree& child : node.children) {
    if (child.is_leaf() || HasBareLeaves(child)) return true;
  }
  return false;
}

void CollectWords(const Tree& node, std::unordered_set<std::string>* words) {
  if (node.is_leaf()) {
    words->insert(node.label);
    return;
  }
  for (const Tree& child : node.children) CollectWords(child, words);
}

// Per-tree scratch: inside and outside vectors of every node, each scaled to a maximum of 1,
// with the log of the factor taken out.
struct Scratch {
  std::vector<int64_t> offset;
  std::vector<double> in, out;
  std::vector<double> in_scale, out_scale;
};

// total += from, element by element (the E-step's sums of chunks and of devices), split over the
// pool's workers without changing any result.
void AddCounts(const SplitMergeTrainer::ExpectedCounts& from, ThreadPool& pool,
               SplitMergeTrainer::ExpectedCounts* total) {
  constexpr int kBlocks = 64;
  pool.ParallelFor(kBlocks, [&](int block, int) {
    auto add = [&](const std::vector<double>& part, std::vector<double>& to) {
      const size_t begin = part.size() * block / kBlocks;
      const size_t end = part.size() * (block + 1) / kBlocks;
      for (size_t i = begin; i < end; ++i) to[i] += part[i];
    };
    add(from.binary, total->binary);
    add(from.unary, total->unary);
    add(from.token, total->token);
  });
  total->log_likelihood += from.log_likelihood;
  total->unparsable += from.unparsable;
}

// One device's share of the CUDA E-step (SplitMergeOptions::devices).
struct DeviceShare {
  int device = -1;  // made current on the thread that runs the share; -1: the caller's
  std::unique_ptr<CudaEStep> estep;

  DeviceShare() = default;
  DeviceShare(int device, std::unique_ptr<CudaEStep> estep)
      : device(device), estep(std::move(estep)) {}
  DeviceShare(DeviceShare&&) = default;
  DeviceShare& operator=(DeviceShare&&) = default;
  // The share's memory and streams are let go with its device current (the calling thread's
  // current device is then that one).
  ~DeviceShare() {
    if (!estep || device < 0) return;
    std::string ignored;
    cuda::SetDevice(device, &ignored);
    estep.reset();
  }
};

// The CUDA E-step's shares (SplitMergeOptions::devices): device k of K takes the trees of the
// reference's chunks [kChunks k / K, kChunks (k + 1) / K), summed in as many chunks of its own;
// without devices, one share of every tree on the current device.
Status MakeDeviceShares(const LatentPcfg& grammar, const std::vector<LatentTrainingTree>& trees,
                        const std::vector<int32_t>& token_tags, const std::vector<int>& devices,
                        std::vector<DeviceShare>* shares) {
  if (devices.empty()) {
    auto estep = CudaEStep::Create(grammar, trees, token_tags, kChunks);
    if (!estep.ok()) return estep.status();
    shares->emplace_back(-1, std::move(*estep));
    return Status();
  }
  const size_t count = devices.size(), n = trees.size();
  for (size_t k = 0; k < count; ++k) {
    const size_t first_chunk = kChunks * k / count, end_chunk = kChunks * (k + 1) / count;
    const size_t first = n * first_chunk / kChunks, end = n * end_chunk / kChunks;
    if (first == end) continue;  // more devices than chunks, or than trees
    std::string error;
    if (!cuda::SetDevice(devices[k], &error)) return Status::Error(error);
    const std::vector<LatentTrainingTree> part(trees.begin() + first, trees.begin() + end);
    auto estep =
        CudaEStep::Create(grammar, part, token_tags, static_cast<int>(end_chunk - first_chunk));
    if (!estep.ok()) {
      return Status::Error("device " + std::to_string(devices[k]) + ": " +
                           estep.status().message());
    }
    shares->emplace_back(devices[k], std::move(*estep));
  }
  std::string ignored;  // the caller's thread back on the first device
  cuda::SetDevice(devices.front(), &ignored);
  return Status();
}

}  // namespace

struct SplitMergeTrainer::Impl {
  SplitMergeOptions options;
  std::unique_ptr<ThreadPool> pool;
  std::mt19937_64 rng;

  // Lexicon: Berkeley's SophisticatedLexicon counts.
  std::vector<std::string> strings;  // words and signatures
  std::unordered_map<std::string, int32_t> string_ids;
  struct TokenType {
    int32_t tag, word, signature, seen, unseen;
    bool rare;
  };
  std::vector<TokenType> tokens;
  struct Entry {
    int32_t tag, string;
    std::vector<double> counts;
  };
  std::vector<Entry> seen, unseen;
  std::vector<double> string_counts;
  std::vector<std::vector<double>> tag_counts, unseen_tag_counts;
  double total_tokens = 0, total_unseen = 0;
  std::vector<uint8_t> is_tag;

  std::vector<SplitTree> split_trees;
  // The CUDA E-step, one share of the trees per device (SplitMergeOptions::devices; one on the
  // current device without them). Empty on the cpu backend, or after a device failed
  // (device_note says why).
  std::vector<DeviceShare> devices;
  std::string device_note;
  bool smoothing = false;
  std::vector<std::vector<double>> grammar_smoothing, lexicon_smoothing;  // per symbol, n * n

  int32_t Intern(const std::string& s) {
    auto [it, inserted] = string_ids.emplace(s, int32_t(strings.size()));
    if (inserted) strings.push_back(s);
    return it->second;
  }

  // Runs `work(chunk, slot)` for every chunk of trees, `threads` chunks at a time, then
  // `reduce(slot)` for each of them in chunk order.
  void RunChunks(const std::function<void(int chunk, int slot)>& work,
                 const std::function<void(int slot)>& reduce) const {
    const int threads = pool->threads();
    for (int wave = 0; wave < kChunks; wave += threads) {
      const int n = std::min(threads, kChunks - wave);
      pool->ParallelFor(n, [&](int i, int) { work(wave + i, i); });
      for (int i = 0; i < n; ++i) reduce(i);
    }
  }
};

SplitMergeTrainer::SplitMergeTrainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SplitMergeTrainer::~SplitMergeTrainer() = default;

int32_t SplitMergeTrainer::num_tokens() const { return int32_t(impl_->tokens.size()); }

int64_t SplitMergeTrainer::total_substates() const {
  int64_t total = 0;
  for (int32_t n : grammar_.num_substates) total += n;
  return total;
}

StatusOr<std::unique_ptr<SplitMergeTrainer>> SplitMergeTrainer::Create(
    const std::vector<Tree>& input_trees, const SplitMergeOptions& options) {
  if (options.cycles < 0 || options.split_iterations < 0 || options.merge_iterations < 0 ||
      options.smooth_iterations < 0) {
    return Status::Error("cycle and iteration counts must not be negative");
  }
  if (!(options.merge_fraction >= 0 && options.merge_fraction < 1)) {
    return Status::Error("the merge fraction must be in [0, 1)");
  }
  if (!(options.randomness >= 0) || !(options.grammar_smoothing >= 0) ||
      !(options.grammar_smoothing < 1) || !(options.lexicon_smoothing >= 0) ||
      !(options.lexicon_smoothing < 1)) {
    return Status::Error("randomness must be >= 0 and smoothing in [0, 1)");
  }
  auto impl = std::make_unique<Impl>();
  if (options.exchange && options.backend != EStepBackend::kCpu) {
    // Each process would run the whole E-step on its device, and one whose device failed would
    // fall back alone to the sharded CPU E-step the others do not run.
    return Status::Error("an E-step shared over processes runs on the CPU only (backend cpu)");
  }
  impl->options = options;
  impl->pool = std::make_unique<ThreadPool>(ThreadPool::ResolveThreads(options.threads));
  impl->rng.seed(options.seed);
  std::unique_ptr<SplitMergeTrainer> trainer(new SplitMergeTrainer(std::move(impl)));
  Impl& m = *trainer->impl_;
  LatentPcfg& g = trainer->grammar_;

  std::vector<Tree> trees;
  std::unordered_set<std::string> known;
  for (const Tree& original : input_trees) {
    Tree tree = original;
    if (!NormalizeTrainingTree(&tree) || HasBareLeaves(tree) || tree.is_preterminal()) continue;
    CollectWords(tree, &known);
    trees.push_back(std::move(tree));
  }
  if (trees.empty()) return Status::Error("no training tree has words");
  std::unordered_map<std::string, int32_t> word_frequency;
  for (const Tree& tree : trees) {
    std::vector<std::string> words = cky::Leaves(tree);
    for (const std::string& w : words) ++word_frequency[w];
  }

  std::unordered_map<std::string, int32_t> symbol_ids;
  auto symbol = [&](const std::string& name) {
    auto [it, inserted] = symbol_ids.emplace(name, int32_t(g.symbol_names.size()));
    if (inserted) {
      g.symbol_names.push_back(name);
      g.num_substates.push_back(1);
      m.is_tag.push_back(0);
    }
    return it->second;
  };
  symbol(kRoot);
  std::map<std::tuple<int32_t, int32_t, int32_t>, int32_t> binary_ids;
  std::map<std::pair<int32_t, int32_t>, int32_t> unary_ids;
  std::map<std::tuple<int32_t, int32_t, int32_t>, int32_t> token_ids;
  std::map<std::pair<int32_t, int32_t>, int32_t> seen_ids, unseen_ids;
  auto is_known = [&](const std::string& w) { return known.count(w) > 0; };

  ExpectedCounts baseline;
  for (const Tree& tree : trees) {
    LatentTrainingTree out;
    int position = 0;
    std::function<int32_t(const Tree&)> add = [&](const Tree& node) -> int32_t {
      LatentTrainingTree::Node n;
      n.symbol = symbol(node.label);
      if (node.is_preterminal()) {
        const std::string& word = node.children[0].label;
        m.is_tag[n.symbol] = 1;
        const int32_t w = m.Intern(word);
        const int32_t sig = m.Intern(UnknownWordSignature(word, position++, is_known));
        auto [it, inserted] =
            token_ids.emplace(std::make_tuple(n.symbol, w, sig), int32_t(m.tokens.size()));
        if (inserted) {
          auto seen = seen_ids.emplace(std::make_pair(n.symbol, w), int32_t(m.seen.size()));
          if (seen.second) m.seen.push_back({n.symbol, w, {0.0}});
          auto unseen = unseen_ids.emplace(std::make_pair(n.symbol, sig), int32_t(m.unseen.size()));
          if (unseen.second) m.unseen.push_back({n.symbol, sig, {0.0}});
          const bool rare = word_frequency[word] < options.rare_word_threshold + 0.5;
          m.tokens.push_back({n.symbol, w, sig, seen.first->second, unseen.first->second, rare});
          baseline.token.push_back(0.0);
        }
        n.token = it->second;
        baseline.token[n.token] += 1;
        out.nodes.push_back(n);
        return int32_t(out.nodes.size() - 1);
      }
      std::vector<int32_t> kids;
      for (const Tree& child : node.children) kids.push_back(add(child));
      auto make = [&](int32_t sym, int32_t left, int32_t right) {
        LatentTrainingTree::Node made;
        made.symbol = sym;
        made.left = left;
        made.right = right;
        const int32_t ls = out.nodes[left].symbol;
        if (right < 0) {
          auto [it, inserted] =
              unary_ids.emplace(std::make_pair(sym, ls), int32_t(g.unaries.size()));
          if (inserted) {
            g.unaries.push_back({sym, ls, {0.0}});
            baseline.unary.push_back(0.0);
          }
          made.rule = it->second;
          baseline.unary[made.rule] += 1;
        } else {
          const int32_t rs = out.nodes[right].symbol;
          auto [it, inserted] =
              binary_ids.emplace(std::make_tuple(sym, ls, rs), int32_t(g.binaries.size()));
          if (inserted) {
            g.binaries.push_back({sym, ls, rs, {0.0}});
            baseline.binary.push_back(0.0);
          }
          made.rule = it->second;
          baseline.binary[made.rule] += 1;
        }
        out.nodes.push_back(made);
        return int32_t(out.nodes.size() - 1);
      };
      if (kids.size() == 1) return make(n.symbol, kids[0], -1);
      // X -> @X last, @X -> @X next, ..., @X -> first second (h = 0: plain "@X").
      const int32_t intermediate = kids.size() > 2 ? symbol("@" + node.label) : -1;
      int32_t current = make(kids.size() == 2 ? n.symbol : intermediate, kids[0], kids[1]);
      for (size_t i = 2; i < kids.size(); ++i) {
        current = make(i + 1 == kids.size() ? n.symbol : intermediate, current, kids[i]);
      }
      return current;
    };
    add(tree);
    trainer->trees_.push_back(std::move(out));
  }
  // Words under their own names count in the lexicon even when spelt like a signature.
  m.string_counts.assign(m.strings.size(), 0.0);
  m.split_trees.assign(g.symbol_names.size(), SplitTree{});
  trainer->Layout();
  trainer->MStep(baseline);
  if (options.backend != EStepBackend::kCpu) {
    std::vector<int32_t> token_tags;
    for (const Impl::TokenType& t : m.tokens) token_tags.push_back(t.tag);
    Status made = MakeDeviceShares(g, trainer->trees_, token_tags, options.devices, &m.devices);
    if (!made.ok()) {
      m.devices.clear();
      if (options.backend == EStepBackend::kCuda) return made;
      m.device_note = made.message();
    }
  }
  return trainer;
}

void SplitMergeTrainer::Layout() {
  const auto& n = grammar_.num_substates;
  binary_offset_.assign(grammar_.binaries.size() + 1, 0);
  for (size_t i = 0; i < grammar_.binaries.size(); ++i) {
    const auto& r = grammar_.binaries[i];
    binary_offset_[i + 1] = binary_offset_[i] + int64_t(n[r.parent]) * n[r.left] * n[r.right];
  }
  unary_offset_.assign(grammar_.unaries.size() + 1, 0);
  for (size_t i = 0; i < grammar_.unaries.size(); ++i) {
    const auto& r = grammar_.unaries[i];
    unary_offset_[i + 1] = unary_offset_[i] + int64_t(n[r.parent]) * n[r.child];
  }
  token_offset_.assign(impl_->tokens.size() + 1, 0);
  for (size_t i = 0; i < impl_->tokens.size(); ++i) {
    token_offset_[i + 1] = token_offset_[i] + n[impl_->tokens[i].tag];
  }
}

std::vector<double> SplitMergeTrainer::TokenScores(int32_t token, bool no_smoothing) const {
  const Impl& m = *impl_;
  const Impl::TokenType& t = m.tokens[token];
  const int32_t n = grammar_.num_substates[t.tag];
  std::vector<double> scores(n, 0.0);
  // SophisticatedLexicon.score for a seen word (every training token's word is seen).
  const double c_w = m.string_counts[t.word];
  const double total = m.total_tokens;
  for (int32_t s = 0; s < n; ++s) {
    const double c_t = m.tag_counts[t.tag][s];
    if (c_t == 0) continue;
    const double c_tw = m.seen[t.seen].counts[s];
    const double p_t_u = m.total_unseen == 0 ? 1 : m.unseen_tag_counts[t.tag][s] / m.total_unseen;
    double pb_t_w;
    if (c_w > 100 || no_smoothing) {
      pb_t_w = (no_smoothing && c_w == 0) ? c_tw : (c_tw + 0.0001 * p_t_u) / (c_w + 0.0001);
    } else {
      pb_t_w = (c_tw + m.options.smooth_seen * p_t_u) / (c_w + m.options.smooth_seen);
    }
    if (pb_t_w == 0) continue;
    const double p = pb_t_w * (c_w / total) / (c_t / total);
    scores[s] = p == 0 ? 1e-87 : p;
  }
  if (m.smoothing && n > 1) {
    const std::vector<double>& w = m.lexicon_smoothing[t.tag];
    std::vector<double> smoothed(n, 0.0);
    for (int32_t i = 0; i < n; ++i) {
      for (int32_t k = 0; k < n; ++k) smoothed[i] += w[size_t(i) * n + k] * scores[k];
    }
    scores = std::move(smoothed);
  }
  return scores;
}

namespace {

// Inside and outside scores of one tree's nodes; returns log P(tree) (-inf when it has none).
double InsideOutside(const LatentPcfg& g, const LatentTrainingTree& tree,
                     const std::vector<double>& lexical, const std::vector<int64_t>& token_offset,
                     Scratch* s) {
  const auto& nodes = tree.nodes;
  const auto& n = g.num_substates;
  s->offset.resize(nodes.size() + 1);
  s->offset[0] = 0;
  for (size_t i = 0; i < nodes.size(); ++i) s->offset[i + 1] = s->offset[i] + n[nodes[i].symbol];
  s->in.assign(s->offset.back(), 0.0);
  s->out.assign(s->offset.back(), 0.0);
  s->in_scale.assign(nodes.size(), 0.0);
  s->out_scale.assign(nodes.size(), 0.0);
  auto normalize = [](double* v, int32_t size, double* scale) {
    double top = 0;
    for (int32_t i = 0; i < size; ++i) top = std::max(top, v[i]);
    if (top > 0) {
      for (int32_t i = 0; i < size; ++i) v[i] /= top;
      *scale += std::log(top);
    }
    return top > 0;
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& node = nodes[i];
    const int32_t np = n[node.symbol];
    double* in = &s->in[s->offset[i]];
    if (node.token >= 0) {
      std::copy_n(&lexical[token_offset[node.token]], np, in);
    } else if (node.right < 0) {
      const auto& rule = g.unaries[node.rule];
      const int32_t nc = n[rule.child];
      const double* child = &s->in[s->offset[node.left]];
      for (int32_t p = 0; p < np; ++p) {
        const double* row = &rule.probs[size_t(p) * nc];
        double sum = 0;
        for (int32_t c = 0; c < nc; ++c) sum += row[c] * child[c];
        in[p] = sum;
      }
      s->in_scale[i] = s->in_scale[node.left];
    } else {
      const auto& rule = g.binaries[node.rule];
      const int32_t nl = n[rule.left], nr = n[rule.right];
      const double* left = &s->in[s->offset[node.left]];
      const double* right = &s->in[s->offset[node.right]];
      for (int32_t p = 0; p < np; ++p) {
        double sum = 0;
        for (int32_t l = 0; l < nl; ++l) {
          if (left[l] == 0) continue;
          const double* row = &rule.probs[(size_t(p) * nl + l) * nr];
          double inner = 0;
          for (int32_t r = 0; r < nr; ++r) inner += row[r] * right[r];
          sum += left[l] * inner;
        }
        in[p] = sum;
      }
      s->in_scale[i] = s->in_scale[node.left] + s->in_scale[node.right];
    }
    if (!normalize(in, np, &s->in_scale[i])) return -INFINITY;
  }
  const size_t root = nodes.size() - 1;
  const double log_likelihood = std::log(s->in[s->offset[root]]) + s->in_scale[root];
  s->out[s->offset[root]] = 1.0;
  for (size_t i = nodes.size(); i-- > 0;) {
    const auto& node = nodes[i];
    if (node.token >= 0) continue;
    const int32_t np = n[node.symbol];
    const double* out = &s->out[s->offset[i]];
    if (node.right < 0) {
      const auto& rule = g.unaries[node.rule];
      const int32_t nc = n[rule.child];
      double* child = &s->out[s->offset[node.left]];
      for (int32_t p = 0; p < np; ++p) {
        if (out[p] == 0) continue;
        const double* row = &rule.probs[size_t(p) * nc];
        for (int32_t c = 0; c < nc; ++c) child[c] += out[p] * row[c];
      }
      s->out_scale[node.left] = s->out_scale[i];
      normalize(child, nc, &s->out_scale[node.left]);
    } else {
      const auto& rule = g.binaries[node.rule];
      const int32_t nl = n[rule.left], nr = n[rule.right];
      const double* left_in = &s->in[s->offset[node.left]];
      const double* right_in = &s->in[s->offset[node.right]];
      double* left_out = &s->out[s->offset[node.left]];
      double* right_out = &s->out[s->offset[node.right]];
      for (int32_t p = 0; p < np; ++p) {
        if (out[p] == 0) continue;
        for (int32_t l = 0; l < nl; ++l) {
          const double* row = &rule.probs[(size_t(p) * nl + l) * nr];
          double to_left = 0;
          const double factor = out[p] * left_in[l];
          for (int32_t r = 0; r < nr; ++r) {
            to_left += row[r] * right_in[r];
            right_out[r] += factor * row[r];
          }
          left_out[l] += out[p] * to_left;
        }
      }
      s->out_scale[node.left] = s->out_scale[i] + s->in_scale[node.right];
      s->out_scale[node.right] = s->out_scale[i] + s->in_scale[node.left];
      normalize(left_out, nl, &s->out_scale[node.left]);
      normalize(right_out, nr, &s->out_scale[node.right]);
    }
  }
  return log_likelihood;
}

}  // namespace

namespace {

// ExpectedCounts as one vector (binary, unary, token, log-likelihood, unparsable), and back into
// `counts`, whose arrays have their sizes already.
std::vector<double> Flatten(const SplitMergeTrainer::ExpectedCounts& counts) {
  std::vector<double> flat;
  flat.reserve(counts.binary.size() + counts.unary.size() + counts.token.size() + 2);
  for (const auto* part : {&counts.binary, &counts.unary, &counts.token}) {
    flat.insert(flat.end(), part->begin(), part->end());
  }
  flat.push_back(counts.log_likelihood);
  flat.push_back(counts.unparsable);
  return flat;
}

void Unflatten(const std::vector<double>& flat, SplitMergeTrainer::ExpectedCounts* counts) {
  size_t at = 0;
  for (auto* part : {&counts->binary, &counts->unary, &counts->token}) {
    std::copy(flat.begin() + at, flat.begin() + at + part->size(), part->begin());
    at += part->size();
  }
  counts->log_likelihood = flat[at];
  counts->unparsable = static_cast<int32_t>(flat[at + 1]);
}

}  // namespace

// The seam where the E-step's per-chunk counts are summed. One process: Impl::RunChunks. Several
// (SplitMergeOptions::exchange): this process computes its own chunks, `threads` at a time in
// slots 0.., as RunChunks does; process 0 adds every chunk with `reduce` in chunk order, receiving
// the others' into the last slot, then sends the sums to all.
void SplitMergeTrainer::RunEStepChunks(const Impl& m, std::vector<ExpectedCounts>* slots,
                                       ExpectedCounts* total,
                                       const std::function<void(int chunk, int slot)>& work,
                                       const std::function<void(int slot)>& reduce) {
  if (!m.options.exchange) return m.RunChunks(work, reduce);
  ShardExchange& exchange = *m.options.exchange;
  const int shards = exchange.shards(), shard = exchange.shard();
  const int spare = static_cast<int>(slots->size()) - 1;
  std::vector<int> own;
  for (int c = shard; c < kChunks; c += shards) own.push_back(c);
  int next = 0;  // process 0: the next chunk to add
  std::vector<double> flat;
  auto add_received_before = [&](int end) {
    for (; next < end; ++next) {
      exchange.ReceiveChunk(next % shards, &flat);
      ExpectedCounts& c = (*slots)[spare];
      c.binary.resize(total->binary.size());
      c.unary.resize(total->unary.size());
      c.token.resize(total->token.size());
      Unflatten(flat, &c);
      reduce(spare);
    }
  };
  const int threads = m.pool->threads();
  for (size_t wave = 0; wave < own.size(); wave += threads) {
    const int n = std::min(threads, static_cast<int>(own.size() - wave));
    m.pool->ParallelFor(n, [&](int i, int) { work(own[wave + i], i); });
    for (int i = 0; i < n; ++i) {
      if (shard == 0) {
        add_received_before(own[wave + i]);
        reduce(i);
        next = own[wave + i] + 1;
      } else {
        exchange.SendChunk(Flatten((*slots)[i]));
      }
    }
  }
  if (shard == 0) add_received_before(kChunks);
  flat = Flatten(*total);
  exchange.Broadcast(flat);
  Unflatten(flat, total);
}

SplitMergeTrainer::ExpectedCounts SplitMergeTrainer::EStep() const {
  if (!impl_->devices.empty()) {
    StatusOr<ExpectedCounts> counts = DeviceEStep();
    if (counts.ok()) return std::move(*counts);
    // The device failed (out of memory on a large grammar): the rest of training on the CPU.
    impl_->devices.clear();
    impl_->device_note = counts.status().message();
  }
  return ReferenceEStep();
}

StatusOr<SplitMergeTrainer::ExpectedCounts> SplitMergeTrainer::DeviceEStep() const {
  if (impl_->devices.empty()) {
    return Status::Error(impl_->device_note.empty() ? "the E-step runs on the CPU"
                                                    : impl_->device_note);
  }
  std::vector<double> lexical(token_offset_.back());
  for (int32_t t = 0; t < num_tokens(); ++t) {
    std::vector<double> scores = TokenScores(t, /*no_smoothing=*/true);
    std::copy(scores.begin(), scores.end(), lexical.begin() + token_offset_[t]);
  }
  std::vector<DeviceShare>& shares = impl_->devices;
  auto run = [&](size_t k) {
    return shares[k].estep->Run(grammar_, binary_offset_, unary_offset_, token_offset_, lexical);
  };
  if (shares.size() == 1 && shares[0].device < 0) return run(0);
  std::vector<StatusOr<ExpectedCounts>> parts(shares.size(), Status::Error("not run"));
  {
    std::vector<std::thread> threads;
    for (size_t k = 0; k < shares.size(); ++k) {
      threads.emplace_back([&, k] {
        std::string error;
        if (!cuda::SetDevice(shares[k].device, &error)) {
          parts[k] = Status::Error(error);
        } else {
          parts[k] = run(k);
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  for (size_t k = 0; k < parts.size(); ++k) {
    if (!parts[k].ok()) {
      return Status::Error("device " + std::to_string(shares[k].device) + ": " +
                           parts[k].status().message());
    }
  }
  // In device order: the reference's chunk order, grouped by device.
  ExpectedCounts total = std::move(*parts[0]);
  for (size_t k = 1; k < parts.size(); ++k) AddCounts(*parts[k], *impl_->pool, &total);
  return total;
}

std::string SplitMergeTrainer::estep_backend() const {
  return impl_->devices.empty() ? "cpu" : "cuda";
}
std::string SplitMergeTrainer::estep_note() const { return impl_->device_note; }
std::string SplitMergeTrainer::estep_profile() const {
  std::string profile;
  for (const DeviceShare& share : impl_->devices) {
    if (!profile.empty()) profile += "; ";
    if (share.device >= 0) profile += "device " + std::to_string(share.device) + ": ";
    profile += share.estep->LastRunProfile();
  }
  return profile;
}

SplitMergeTrainer::ExpectedCounts SplitMergeTrainer::ReferenceEStep() const {
  const Impl& m = *impl_;
  const LatentPcfg& g = grammar_;
  const auto& n = g.num_substates;
  std::vector<double> lexical(token_offset_.back());
  for (int32_t t = 0; t < num_tokens(); ++t) {
    std::vector<double> scores = TokenScores(t, /*no_smoothing=*/true);
    std::copy(scores.begin(), scores.end(), lexical.begin() + token_offset_[t]);
  }
  ExpectedCounts total;
  total.binary.assign(binary_offset_.back(), 0.0);
  total.unary.assign(unary_offset_.back(), 0.0);
  total.token.assign(token_offset_.back(), 0.0);
  const int threads = m.pool->threads();
  std::vector<ExpectedCounts> slots(threads + 1);  // the last: a chunk from another process
  std::vector<Scratch> scratch(threads);
  const size_t num_trees = trees_.size();
  RunEStepChunks(
      m, &slots, &total,
      [&](int chunk, int slot) {
        ExpectedCounts& c = slots[slot];
        c.binary.assign(total.binary.size(), 0.0);
        c.unary.assign(total.unary.size(), 0.0);
        c.token.assign(total.token.size(), 0.0);
        c.log_likelihood = 0;
        c.unparsable = 0;
        Scratch& s = scratch[slot];
        const size_t begin = num_trees * chunk / kChunks, end = num_trees * (chunk + 1) / kChunks;
        for (size_t t = begin; t < end; ++t) {
          const LatentTrainingTree& tree = trees_[t];
          const double ll = InsideOutside(g, tree, lexical, token_offset_, &s);
          if (!std::isfinite(ll)) {
            ++c.unparsable;
            continue;
          }
          c.log_likelihood += ll;
          for (size_t i = 0; i < tree.nodes.size(); ++i) {
            const auto& node = tree.nodes[i];
            const int32_t np = n[node.symbol];
            const double* out = &s.out[s.offset[i]];
            const double* in = &s.in[s.offset[i]];
            if (node.token >= 0) {
              const double f = std::exp(s.out_scale[i] + s.in_scale[i] - ll);
              double* dst = &c.token[token_offset_[node.token]];
              for (int32_t k = 0; k < np; ++k) dst[k] += out[k] * in[k] * f;
            } else if (node.right < 0) {
              const auto& rule = g.unaries[node.rule];
              const int32_t nc = n[rule.child];
              const double* child = &s.in[s.offset[node.left]];
              const double f = std::exp(s.out_scale[i] + s.in_scale[node.left] - ll);
              double* dst = &c.unary[unary_offset_[node.rule]];
              for (int32_t p = 0; p < np; ++p) {
                if (out[p] == 0) continue;
                const double* row = &rule.probs[size_t(p) * nc];
                for (int32_t k = 0; k < nc; ++k) dst[p * nc + k] += out[p] * f * row[k] * child[k];
              }
            } else {
              const auto& rule = g.binaries[node.rule];
              const int32_t nl = n[rule.left], nr = n[rule.right];
              const double* left = &s.in[s.offset[node.left]];
              const double* right = &s.in[s.offset[node.right]];
              const double f =
                  std::exp(s.out_scale[i] + s.in_scale[node.left] + s.in_scale[node.right] - ll);
              double* dst = &c.binary[binary_offset_[node.rule]];
              for (int32_t p = 0; p < np; ++p) {
                if (out[p] == 0) continue;
                for (int32_t l = 0; l < nl; ++l) {
                  const double factor = out[p] * f * left[l];
                  if (factor == 0) continue;
                  const size_t base = (size_t(p) * nl + l) * nr;
                  for (int32_t r = 0; r < nr; ++r) {
                    dst[base + r] += factor * rule.probs[base + r] * right[r];
                  }
                }
              }
            }
          }
        }
      },
      [&](int slot) { AddCounts(slots[slot], *m.pool, &total); });  // in slot order
  return total;
}

void SplitMergeTrainer::MStep(const ExpectedCounts& counts) {
  Impl& m = *impl_;
  LatentPcfg& g = grammar_;
  const auto& n = g.num_substates;
  const double threshold = m.options.rule_threshold;
  for (size_t i = 0; i < g.binaries.size(); ++i) {
    g.binaries[i].probs.assign(counts.binary.begin() + binary_offset_[i],
                               counts.binary.begin() + binary_offset_[i + 1]);
  }
  for (size_t i = 0; i < g.unaries.size(); ++i) {
    g.unaries[i].probs.assign(counts.unary.begin() + unary_offset_[i],
                              counts.unary.begin() + unary_offset_[i + 1]);
  }
  // Grammar.normalize: divide by the parent substate's total count; drop values below threshold.
  auto normalize = [&] {
    std::vector<std::vector<double>> parent_total(n.size());
    for (size_t s = 0; s < n.size(); ++s) parent_total[s].assign(n[s], 0.0);
    for (const auto& r : g.binaries) {
      const size_t block = r.probs.size() / n[r.parent];
      for (int32_t p = 0; p < n[r.parent]; ++p) {
        for (size_t k = 0; k < block; ++k) parent_total[r.parent][p] += r.probs[p * block + k];
      }
    }
    for (const auto& r : g.unaries) {
      const size_t block = n[r.child];
      for (int32_t p = 0; p < n[r.parent]; ++p) {
        for (size_t k = 0; k < block; ++k) parent_total[r.parent][p] += r.probs[p * block + k];
      }
    }
    auto apply = [&](int32_t parent, std::vector<double>& probs) {
      const size_t block = probs.size() / n[parent];
      for (int32_t p = 0; p < n[parent]; ++p) {
        const double t = parent_total[parent][p];
        if (t == 0) continue;
        for (size_t k = 0; k < block; ++k) {
          double v = probs[p * block + k] / t;
          if (v < threshold || !std::isfinite(v)) v = 0;
          probs[p * block + k] = v;
        }
      }
    };
    for (auto& r : g.binaries) apply(r.parent, r.probs);
    for (auto& r : g.unaries) apply(r.parent, r.probs);
  };
  normalize();
  if (m.smoothing) {
    // SmoothAcrossParentBits: each parent substate's scores mixed with its branch siblings'.
    auto smooth = [&](int32_t parent, std::vector<double>& probs) {
      const int32_t np = n[parent];
      if (np == 1) return;
      const std::vector<double>& w = m.grammar_smoothing[parent];
      const size_t block = probs.size() / np;
      std::vector<double> mixed(probs.size(), 0.0);
      for (int32_t i = 0; i < np; ++i) {
        for (int32_t k = 0; k < np; ++k) {
          const double weight = w[size_t(i) * np + k];
          if (weight == 0) continue;
          for (size_t j = 0; j < block; ++j) mixed[i * block + j] += weight * probs[k * block + j];
        }
      }
      probs = std::move(mixed);
    };
    for (auto& r : g.binaries) smooth(r.parent, r.probs);
    for (auto& r : g.unaries) smooth(r.parent, r.probs);
    normalize();
  }

  // The lexicon (SophisticatedLexicon.trainTree over all trees, then tieRareWordStats and
  // removeUnlikelyTags).
  for (auto& e : m.seen) e.counts.assign(n[e.tag], 0.0);
  for (auto& e : m.unseen) e.counts.assign(n[e.tag], 0.0);
  m.tag_counts.assign(n.size(), {});
  m.unseen_tag_counts.assign(n.size(), {});
  for (size_t s = 0; s < n.size(); ++s) {
    m.tag_counts[s].assign(n[s], 0.0);
    m.unseen_tag_counts[s].assign(n[s], 0.0);
  }
  std::fill(m.string_counts.begin(), m.string_counts.end(), 0.0);
  m.total_tokens = m.total_unseen = 0;
  for (size_t t = 0; t < m.tokens.size(); ++t) {
    const Impl::TokenType& token = m.tokens[t];
    const double* c = &counts.token[token_offset_[t]];
    for (int32_t s = 0; s < n[token.tag]; ++s) {
      const double w = c[s];
      if (w == 0) continue;
      m.seen[token.seen].counts[s] += w;
      m.tag_counts[token.tag][s] += w;
      m.string_counts[token.word] += w;
      m.total_tokens += w;
      if (token.rare) {
        m.string_counts[token.signature] += w;
        m.unseen[token.unseen].counts[s] += w;
        m.unseen_tag_counts[token.tag][s] += w;
        m.total_unseen += w;
      }
    }
  }
  for (auto& e : m.seen) {
    const auto& unseen = m.unseen_tag_counts[e.tag];
    double unseen_total = 0;
    for (double v : unseen) unseen_total += v;
    if (unseen_total == 0) continue;
    if (m.string_counts[e.string] < m.options.rare_word_threshold + 0.5) {
      double word_total = 0;
      for (double v : e.counts) word_total += v;
      for (size_t s = 0; s < e.counts.size(); ++s) {
        e.counts[s] = unseen[s] * word_total / unseen_total;
      }
    }
  }
  for (auto& e : m.seen) {
    for (double& v : e.counts) {
      if (v < threshold) v = 0;
    }
  }
}

double SplitMergeTrainer::EmIteration() {
  ExpectedCounts counts = EStep();
  MStep(counts);
  return counts.log_likelihood;
}

void SplitMergeTrainer::SetSmoothing(bool on) {
  Impl& m = *impl_;
  m.smoothing = on;
  m.grammar_smoothing.clear();
  m.lexicon_smoothing.clear();
  if (!on) return;
  for (size_t s = 0; s < grammar_.num_substates.size(); ++s) {
    m.grammar_smoothing.push_back(
        SmoothingMatrix(m.split_trees[s], grammar_.num_substates[s], m.options.grammar_smoothing));
    m.lexicon_smoothing.push_back(
        SmoothingMatrix(m.split_trees[s], grammar_.num_substates[s], m.options.lexicon_smoothing));
  }
}

void SplitMergeTrainer::Split() {
  Impl& m = *impl_;
  LatentPcfg& g = grammar_;
  SetSmoothing(false);
  const std::vector<int32_t> old_n = g.num_substates;
  std::vector<int32_t> factor(old_n.size(), 2);
  factor[0] = 1;  // ROOT is never split
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double randomness = m.options.randomness;
  // BinaryRule.splitRule: each score shared among the 2 x 2 child substate pairs, +- a random
  // component per child that cancels in the sum (so parent substates stay normalised).
  for (auto& rule : g.binaries) {
    const int32_t np = old_n[rule.parent], nl = old_n[rule.left], nr = old_n[rule.right];
    const int32_t pf = factor[rule.parent], lf = factor[rule.left], rf = factor[rule.right];
    const int32_t nnl = nl * lf, nnr = nr * rf;
    std::vector<double> split(size_t(np * pf) * nnl * nnr, 0.0);
    const double divide = lf * rf;
    for (int32_t l = 0; l < nl; ++l) {
      for (int32_t r = 0; r < nr; ++r) {
        for (int32_t p = 0; p < np; ++p) {
          const double score = rule.probs[(size_t(p) * nl + l) * nr + r];
          if (score == 0) continue;
          for (int32_t pp = 0; pp < pf; ++pp) {
            double random_left = score / divide * randomness / 100 * (uniform(m.rng) - 0.5);
            for (int32_t lc = 0; lc < lf; ++lc) {
              if (lc == 1) random_left = -random_left;
              if (lf == 1) random_left = 0;
              double random_right = score / divide * randomness / 100 * (uniform(m.rng) - 0.5);
              for (int32_t rc = 0; rc < rf; ++rc) {
                if (rc == 1) random_right = -random_right;
                if (rf == 1) random_right = 0;
                const size_t index =
                    (size_t(p * pf + pp) * nnl + (l * lf + lc)) * nnr + (r * rf + rc);
                split[index] = score / divide + random_left + random_right;
              }
            }
          }
        }
      }
    }
    rule.probs = std::move(split);
  }
  for (auto& rule : g.unaries) {
    const int32_t np = old_n[rule.parent], nc = old_n[rule.child];
    const int32_t pf = factor[rule.parent], cf = factor[rule.child];
    std::vector<double> split(size_t(np * pf) * nc * cf, 0.0);
    for (int32_t c = 0; c < nc; ++c) {
      for (int32_t p = 0; p < np; ++p) {
        const double score = rule.probs[size_t(p) * nc + c];
        if (score == 0) continue;
        for (int32_t pp = 0; pp < pf; ++pp) {
          double random = score / cf * randomness / 100 * (uniform(m.rng) - 0.5);
          for (int32_t cc = 0; cc < cf; ++cc) {
            if (cc == 1) random = -random;
            if (cf == 1) random = 0;
            split[size_t(p * pf + pp) * (nc * cf) + (c * cf + cc)] = score / cf + random;
          }
        }
      }
    }
    rule.probs = std::move(split);
  }
  // The lexicon gives both halves the same scores (counts halved).
  auto halve = [&](int32_t tag, std::vector<double>& counts) {
    if (factor[tag] == 1) return;
    std::vector<double> split(counts.size() * 2);
    for (size_t s = 0; s < counts.size(); ++s) split[2 * s] = split[2 * s + 1] = 0.5 * counts[s];
    counts = std::move(split);
  };
  for (auto& e : m.seen) halve(e.tag, e.counts);
  for (auto& e : m.unseen) halve(e.tag, e.counts);
  for (size_t s = 0; s < old_n.size(); ++s) {
    halve(int32_t(s), m.tag_counts[s]);
    halve(int32_t(s), m.unseen_tag_counts[s]);
    g.num_substates[s] = old_n[s] * factor[s];
    ExtendSplitTree(&m.split_trees[s], factor[s] == 2);
  }
  Layout();
}

namespace {

struct MergePlan {
  std::vector<int32_t> new_count;
  std::vector<std::vector<int32_t>> mapping;  // old substate -> new
  std::vector<std::vector<uint8_t>> keeps;    // old substate starts its group
  std::vector<std::vector<double>> share;     // weight of an old parent substate in its group
};

}  // namespace

void SplitMergeTrainer::MergeAllSiblings() { MergeImpl(true); }
void SplitMergeTrainer::Merge() { MergeImpl(false); }

void SplitMergeTrainer::MergeImpl(bool all) {
  Impl& m = *impl_;
  LatentPcfg& g = grammar_;
  const auto n = g.num_substates;
  const size_t num_symbols = n.size();
  std::vector<double> lexical(token_offset_.back());
  for (int32_t t = 0; t < num_tokens(); ++t) {
    std::vector<double> scores = TokenScores(t, /*no_smoothing=*/false);
    std::copy(scores.begin(), scores.end(), lexical.begin() + token_offset_[t]);
  }
  const int threads = m.pool->threads();
  std::vector<Scratch> scratch(threads);
  const size_t num_trees = trees_.size();
  auto zero_table = [&] {
    std::vector<std::vector<double>> table(num_symbols);
    for (size_t s = 0; s < num_symbols; ++s) table[s].assign(n[s], 0.0);
    return table;
  };
  // Merge weights: P(substate | symbol) over the nodes of the training trees.
  std::vector<std::vector<double>> weights = zero_table();
  std::vector<std::vector<std::vector<double>>> slots(threads);
  m.RunChunks(
      [&](int chunk, int slot) {
        auto& acc = slots[slot];
        acc = zero_table();
        Scratch& s = scratch[slot];
        for (size_t t = num_trees * chunk / kChunks; t < num_trees * (chunk + 1) / kChunks; ++t) {
          const auto& tree = trees_[t];
          if (!std::isfinite(InsideOutside(g, tree, lexical, token_offset_, &s))) continue;
          for (size_t i = 0; i < tree.nodes.size(); ++i) {
            const int32_t sym = tree.nodes[i].symbol;
            const double* in = &s.in[s.offset[i]];
            const double* out = &s.out[s.offset[i]];
            double node_total = 0;
            for (int32_t k = 0; k < n[sym]; ++k) node_total += in[k] * out[k];
            if (node_total == 0) node_total = 1;
            for (int32_t k = 0; k < n[sym]; ++k) acc[sym][k] += in[k] * out[k] / node_total;
          }
        }
      },
      [&](int slot) {
        for (size_t s = 0; s < num_symbols; ++s) {
          for (int32_t k = 0; k < n[s]; ++k) weights[s][k] += slots[slot][s][k];
        }
      });
  for (size_t s = 0; s < num_symbols; ++s) {
    double sum = 0;
    for (double v : weights[s]) sum += v;
    if (sum == 0) sum = 1;
    for (double& v : weights[s]) v /= sum;
  }

  // Deltas: log-likelihood lost by merging the sibling pair (2k, 2k + 1), per symbol.
  std::vector<std::vector<double>> deltas = zero_table();
  m.RunChunks(
      [&](int chunk, int slot) {
        auto& acc = slots[slot];
        acc = zero_table();
        Scratch& s = scratch[slot];
        for (size_t t = num_trees * chunk / kChunks; t < num_trees * (chunk + 1) / kChunks; ++t) {
          const auto& tree = trees_[t];
          if (!std::isfinite(InsideOutside(g, tree, lexical, token_offset_, &s))) continue;
          for (size_t i = 0; i < tree.nodes.size(); ++i) {
            const int32_t sym = tree.nodes[i].symbol;
            const double* in = &s.in[s.offset[i]];
            const double* out = &s.out[s.offset[i]];
            double separated = 0;
            for (int32_t k = 0; k < n[sym]; ++k) separated += in[k] * out[k];
            for (int32_t a = 0; a + 1 < n[sym]; a += 2) {
              const int32_t b = a + 1;
              double weight_sum = weights[sym][a] + weights[sym][b];
              if (weight_sum == 0) weight_sum = 1;
              const double merged_in =
                  in[a] * weights[sym][a] / weight_sum + in[b] * weights[sym][b] / weight_sum;
              const double combined = merged_in * (out[a] + out[b]);
              const double combined_sum = separated - in[a] * out[a] - in[b] * out[b] + combined;
              if (combined != 0 && separated != 0) {
                acc[sym][a / 2] += std::log(separated / combined_sum);
              }
            }
          }
        }
      },
      [&](int slot) {
        for (size_t s = 0; s < num_symbols; ++s) {
          for (int32_t k = 0; k < n[s]; ++k) deltas[s][k] += slots[slot][s][k];
        }
      });

  // Which pairs: all, or those at or below the merge_fraction quantile of the other deltas, and
  // pairs of identical substates. Identical substates (symbols whose split never took: the loss
  // is 0 in exact arithmetic) come out as 0 or as rounding noise of about 1e-15 nats, whose sign
  // and size depend on the order of sums (threads, the cuda E-step): counting such noise among the
  // deltas moved the quantile, and with it the grammar. So a loss below kIdenticalPair nats is
  // taken as none: the pair is merged (it loses nothing, as Berkeley's determineMergePairs merges
  // pairs of delta 0) and left out of the quantile.
  constexpr double kIdenticalPair = 1e-9;
  auto identical = [](double delta) { return std::abs(delta) < kIdenticalPair; };
  std::vector<std::vector<uint8_t>> merge(num_symbols);
  double threshold = INFINITY;
  if (!all) {
    std::vector<double> sorted;
    for (size_t s = 0; s < num_symbols; ++s) {
      for (int32_t a = 0; a + 1 < n[s]; a += 2) {
        if (!identical(deltas[s][a / 2])) sorted.push_back(deltas[s][a / 2]);
      }
    }
    std::sort(sorted.begin(), sorted.end());
    threshold = sorted.empty() ? -INFINITY
                               : sorted[size_t(double(sorted.size()) * m.options.merge_fraction)];
  }
  for (size_t s = 0; s < num_symbols; ++s) {
    merge[s].assign(n[s] / 2, 0);
    for (int32_t a = 0; a + 1 < n[s]; a += 2) {
      merge[s][a / 2] = all || identical(deltas[s][a / 2]) || deltas[s][a / 2] <= threshold;
    }
  }

  MergePlan plan;
  plan.new_count.resize(num_symbols);
  plan.mapping.resize(num_symbols);
  plan.keeps.resize(num_symbols);
  plan.share.resize(num_symbols);
  for (size_t s = 0; s < num_symbols; ++s) {
    int32_t next = 0;
    plan.mapping[s].resize(n[s]);
    plan.keeps[s].assign(n[s], 1);
    plan.share[s].assign(n[s], 1.0);
    for (int32_t k = 0; k < n[s]; ++k) {
      const bool second = k % 2 == 1 && merge[s][k / 2];
      if (second) {
        plan.mapping[s][k] = plan.mapping[s][k - 1];
        plan.keeps[s][k] = 0;
        double sum = weights[s][k - 1] + weights[s][k];
        if (!(sum > 0) || !std::isfinite(sum)) sum = 1;
        plan.share[s][k - 1] = weights[s][k - 1] / sum;
        plan.share[s][k] = weights[s][k] / sum;
      } else {
        plan.mapping[s][k] = next++;
      }
    }
    plan.new_count[s] = next;
  }
  // Grammar.mergeStates: merged children add up, merged parents average with the merge weights.
  for (auto& rule : g.binaries) {
    const int32_t np = n[rule.parent], nl = n[rule.left], nr = n[rule.right];
    const int32_t nnl = plan.new_count[rule.left], nnr = plan.new_count[rule.right];
    std::vector<double> merged(size_t(plan.new_count[rule.parent]) * nnl * nnr, 0.0);
    for (int32_t p = 0; p < np; ++p) {
      const double share = plan.share[rule.parent][p];
      const int32_t mp = plan.mapping[rule.parent][p];
      for (int32_t l = 0; l < nl; ++l) {
        const int32_t ml = plan.mapping[rule.left][l];
        for (int32_t r = 0; r < nr; ++r) {
          merged[(size_t(mp) * nnl + ml) * nnr + plan.mapping[rule.right][r]] +=
              share * rule.probs[(size_t(p) * nl + l) * nr + r];
        }
      }
    }
    rule.probs = std::move(merged);
  }
  for (auto& rule : g.unaries) {
    const int32_t np = n[rule.parent], nc = n[rule.child];
    const int32_t nnc = plan.new_count[rule.child];
    std::vector<double> merged(size_t(plan.new_count[rule.parent]) * nnc, 0.0);
    for (int32_t p = 0; p < np; ++p) {
      for (int32_t c = 0; c < nc; ++c) {
        merged[size_t(plan.mapping[rule.parent][p]) * nnc + plan.mapping[rule.child][c]] +=
            plan.share[rule.parent][p] * rule.probs[size_t(p) * nc + c];
      }
    }
    rule.probs = std::move(merged);
  }
  // SophisticatedLexicon.mergeStates: counts of merged substates add up.
  auto sum_counts = [&](int32_t tag, std::vector<double>& counts) {
    std::vector<double> merged(plan.new_count[tag], 0.0);
    for (size_t k = 0; k < counts.size(); ++k) merged[plan.mapping[tag][k]] += counts[k];
    counts = std::move(merged);
  };
  for (auto& e : m.seen) sum_counts(e.tag, e.counts);
  for (auto& e : m.unseen) sum_counts(e.tag, e.counts);
  for (size_t s = 0; s < num_symbols; ++s) {
    sum_counts(int32_t(s), m.tag_counts[s]);
    sum_counts(int32_t(s), m.unseen_tag_counts[s]);
    PruneSplitTree(&m.split_trees[s], plan.keeps[s], plan.mapping[s]);
    g.num_substates[s] = plan.new_count[s];
  }
  Layout();
  if (m.smoothing) SetSmoothing(true);
}

Status SplitMergeTrainer::Train(const std::function<void(const SplitMergeProgress&)>& progress) {
  auto run = [&](int cycle, const char* phase, int iterations) {
    for (int it = 1; it <= iterations; ++it) {
      const auto start = std::chrono::steady_clock::now();
      const double ll = EmIteration();
      if (progress) {
        progress({cycle, phase, it, ll,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
      }
    }
  };
  const SplitMergeOptions& o = impl_->options;
  for (int cycle = 1; cycle <= o.cycles; ++cycle) {
    Split();
    run(cycle, "split", o.split_iterations);
    if (o.merge_fraction > 0) {
      Merge();
      run(cycle, "merge", o.merge_iterations);
    }
    if (o.smooth_iterations > 0) {
      SetSmoothing(true);
      run(cycle, "smooth", o.smooth_iterations);
    }
  }
  return Status();
}

StatusOr<BerkeleyModel> SplitMergeTrainer::Export() const {
  const Impl& m = *impl_;
  const LatentPcfg& g = grammar_;
  const auto& n = g.num_substates;
  const int32_t num_symbols = int32_t(n.size());
  GrammarBuilder builder;
  std::vector<int32_t> ids(num_symbols);
  for (int32_t s = 0; s < num_symbols; ++s) {
    ids[s] = builder.AddSymbol(g.symbol_names[s]);
    builder.SetNumSubstates(ids[s], n[s]);
    builder.SetSplitTree(ids[s], SplitTreeText(m.split_trees[s]));
  }
  std::vector<uint8_t> is_parent(num_symbols, 0);
  for (const auto& r : g.binaries) {
    is_parent[r.parent] = 1;
    const int32_t nl = n[r.left], nr = n[r.right];
    for (int32_t p = 0; p < n[r.parent]; ++p) {
      for (int32_t l = 0; l < nl; ++l) {
        for (int32_t c = 0; c < nr; ++c) {
          const double prob = r.probs[(size_t(p) * nl + l) * nr + c];
          if (prob > 0) builder.AddBinary(ids[r.parent], p, ids[r.left], l, ids[r.right], c, prob);
        }
      }
    }
  }
  // Grammar.computePairsOfUnaries: for every pair of symbols P != C, the direct rule and every
  // chain P -> I -> C, summed (closedSumRules) and maximised (closedViterbiRules) over the
  // intermediate substates; the sum closure remembers the intermediate with most mass.
  std::vector<std::vector<int32_t>> by_parent(num_symbols);
  std::map<std::pair<int32_t, int32_t>, int32_t> unary_index;
  for (size_t i = 0; i < g.unaries.size(); ++i) {
    by_parent[g.unaries[i].parent].push_back(int32_t(i));
    unary_index[{g.unaries[i].parent, g.unaries[i].child}] = int32_t(i);
    is_parent[g.unaries[i].parent] = 1;
  }
  // The base unaries themselves, for P(tree, words) (parser/tree_likelihood.h).
  for (const auto& rule : g.unaries) {
    const int32_t nc = n[rule.child];
    for (int32_t p = 0; p < n[rule.parent]; ++p) {
      for (int32_t c = 0; c < nc; ++c) {
        const double prob = rule.probs[size_t(p) * nc + c];
        if (prob > 0) builder.AddBaseUnary(ids[rule.parent], p, ids[rule.child], c, prob);
      }
    }
  }
  for (int32_t parent = 0; parent < num_symbols; ++parent) {
    if (by_parent[parent].empty()) continue;
    const int32_t np = n[parent];
    for (int32_t child = 0; child < num_symbols; ++child) {
      if (child == parent) continue;
      const int32_t nc = n[child];
      std::vector<double> sum(size_t(np) * nc, 0.0), best(size_t(np) * nc, 0.0);
      double best_total = -1;
      int32_t best_intermediate = -1;
      bool any_max = false;
      for (int32_t rule_index : by_parent[parent]) {
        const auto& first = g.unaries[rule_index];
        const int32_t middle = first.child;
        if (middle == child) {
          double total = 0;
          for (size_t k = 0; k < sum.size(); ++k) {
            sum[k] += first.probs[k];
            total += first.probs[k];
            if (first.probs[k] > best[k]) best[k] = first.probs[k];
          }
          any_max = true;
          if (total > best_total) {
            best_total = total;
            best_intermediate = -1;
          }
          continue;
        }
        auto second_it = unary_index.find({middle, child});
        if (second_it == unary_index.end()) continue;
        const auto& second = g.unaries[second_it->second];
        const int32_t nm = n[middle];
        double total = 0;
        for (int32_t p = 0; p < np; ++p) {
          for (int32_t c = 0; c < nc; ++c) {
            double chain_sum = 0, chain_max = 0;
            for (int32_t k = 0; k < nm; ++k) {
              const double v = first.probs[size_t(p) * nm + k] * second.probs[size_t(k) * nc + c];
              chain_sum += v;
              chain_max = std::max(chain_max, v);
            }
            sum[size_t(p) * nc + c] += chain_sum;
            total += chain_sum;
            best[size_t(p) * nc + c] = std::max(best[size_t(p) * nc + c], chain_max);
          }
        }
        any_max = true;
        if (total > best_total) {
          best_total = total;
          best_intermediate = middle;
        }
      }
      if (!any_max) continue;
      for (int32_t p = 0; p < np; ++p) {
        for (int32_t c = 0; c < nc; ++c) {
          if (best[size_t(p) * nc + c] > 0) {
            builder.AddUnary(ids[parent], p, ids[child], c, best[size_t(p) * nc + c]);
          }
          if (sum[size_t(p) * nc + c] > 0) {
            builder.AddSumUnary(ids[parent], p, ids[child], c, sum[size_t(p) * nc + c]);
          }
        }
      }
      if (best_intermediate >= 0) {
        builder.SetUnaryIntermediate(ids[parent], ids[child], ids[best_intermediate]);
      }
    }
  }
  BerkeleyModel model;
  std::vector<int32_t> final_ids;
  model.grammar = builder.Finish(&final_ids);
  const int32_t final_symbols = model.grammar.num_symbols();
  auto final_of = [&](int32_t s) { return final_ids[ids[s]]; };

  BerkeleyLexiconCounts counts;
  for (const auto& e : m.seen)
    counts.seen.push_back({final_of(e.tag), m.strings[e.string], e.counts});
  for (const auto& e : m.unseen) {
    counts.unseen.push_back({final_of(e.tag), m.strings[e.string], e.counts});
  }
  for (size_t i = 0; i < m.strings.size(); ++i) {
    counts.word_counts.emplace_back(m.strings[i], m.string_counts[i]);
  }
  counts.tag_counts.assign(final_symbols, {});
  counts.unseen_tag_counts.assign(final_symbols, {});
  counts.smoothing_weights.assign(final_symbols, {});
  counts.lexical_symbols.assign(final_symbols, 0);
  for (int32_t s = 0; s < num_symbols; ++s) {
    const int32_t f = final_of(s);
    counts.tag_counts[f] = m.tag_counts[s];
    counts.unseen_tag_counts[f] = m.unseen_tag_counts[s];
    if (m.smoothing) counts.smoothing_weights[f] = m.lexicon_smoothing[s];
    counts.lexical_symbols[f] = m.is_tag[s] && !is_parent[s] && s != 0;
  }
  counts.total_tokens = m.total_tokens;
  counts.total_unseen_tokens = m.total_unseen;
  counts.smooth_unseen = m.options.smooth_unseen;
  counts.smooth_seen = m.options.smooth_seen;
  counts.smooth_in_unknowns_threshold = 100;
  counts.unknown_level = 5;
  model.lexicon_counts = std::move(counts);
  auto rows = BerkeleyExportRows(model);
  if (!rows.ok()) return rows.status();
  // Without rare words there is no unknown-word model: its rows would be 0 / 0.
  for (LexiconRow& row : *rows) {
    if (std::all_of(row.probs.begin(), row.probs.end(),
                    [](double p) { return std::isfinite(p); })) {
      model.lexicon.push_back(std::move(row));
    }
  }
  std::set<std::string> words(m.strings.begin(), m.strings.end());
  model.known_words.assign(words.begin(), words.end());
  model.h_markov = 0;
  model.v_markov = 1;
  model.binarization = "RIGHT";
  return model;
}

}  // namespace cky
