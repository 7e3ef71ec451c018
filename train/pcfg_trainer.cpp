#include "train/pcfg_trainer.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_set>

#include "common/output_file.h"
#include "lexicon/signature.h"
#include "treebank/transforms.h"

namespace cky {
namespace {

constexpr char kRoot[] = "ROOT";

// Shortest round-trip decimal form; Java's Double.parseDouble and our loader read it.
std::string FormatProbability(double p) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), p);
  return std::string(buffer, end);
}

// Removes X -> X unary self-chains (left by stripping function tags or empty elements).
void CollapseSelfUnaries(Tree* node) {
  if (node->is_leaf()) return;
  while (node->children.size() == 1 && !node->children[0].is_leaf() &&
         !node->children[0].is_preterminal() && node->children[0].label == node->label) {
    Tree child = std::move(node->children[0]);
    node->children = std::move(child.children);
  }
  for (Tree& child : node->children) CollapseSelfUnaries(&child);
}

bool IsPhrasal(const Tree& node) { return !node.is_leaf() && !node.is_preterminal(); }

// "IN" under PP -> "IN^PP". Bracket tags ("-LRB-") stay whole: output keeps such labels uncut.
void AnnotateTags(Tree* node) {
  for (Tree& child : node->children) {
    if (child.is_preterminal()) {
      if (!child.label.empty() && child.label[0] != '-') child.label += "^" + node->label;
    } else if (!child.is_leaf()) {
      AnnotateTags(&child);
    }
  }
}

struct Counts {
  std::map<std::string, double> parent_total;
  std::map<std::tuple<std::string, std::string, std::string>, double> binary;
  std::map<std::pair<std::string, std::string>, double> unary;
  std::set<std::string> symbols;
  std::map<std::string, double> tag_total;
  std::map<std::pair<std::string, std::string>, double> tag_word;
};

class RuleCollector {
 public:
  RuleCollector(const PcfgTrainerOptions& options, Counts* counts)
      : options_(options), counts_(*counts) {}

  // Counts the rules of a normalised tree rooted at ROOT.
  void Collect(const Tree& root) {
    std::vector<std::string> ancestors;
    Visit(root, kRoot, ancestors);
  }

 private:
  // `label` is the node's annotated label; `ancestors` its ancestors' plain labels, nearest first.
  void Visit(const Tree& node, const std::string& label, std::vector<std::string>& ancestors) {
    counts_.symbols.insert(label);
    ancestors.insert(ancestors.begin(), node.label);
    std::vector<std::string> child_labels;
    for (const Tree& child : node.children) {
      child_labels.push_back(IsPhrasal(child) ? Annotate(child.label, ancestors) : child.label);
      if (!IsPhrasal(child)) counts_.symbols.insert(child.label);
    }
    EmitRules(label, child_labels);
    for (size_t i = 0; i < node.children.size(); ++i) {
      if (IsPhrasal(node.children[i])) Visit(node.children[i], child_labels[i], ancestors);
    }
    ancestors.erase(ancestors.begin());
  }

  std::string Annotate(const std::string& label, const std::vector<std::string>& ancestors) const {
    std::string out = label;
    for (int i = 0; i + 1 < options_.vertical_markovization && i < int(ancestors.size()); ++i) {
      out += '^';
      out += ancestors[i];
    }
    return out;
  }

  // The @ label of an intermediate covering children [0, covered) of a rule of `parent`.
  std::string Intermediate(const std::string& parent, const std::vector<std::string>& children,
                           size_t covered) const {
    std::string out = "@" + parent;
    const int h = options_.horizontal_markovization;
    if (h == 0) return out;
    size_t end = h < 0 ? children.size() : std::min(children.size(), covered + size_t(h));
    out += "->";
    for (size_t i = covered; i < end; ++i) out += "_" + children[i];
    return out;
  }

  void EmitRules(const std::string& parent, const std::vector<std::string>& children) {
    if (children.size() == 1) {
      AddUnary(parent, children[0]);
      return;
    }
    // X -> @X last; @X -> @X next; ...; the lowest @X -> first second.
    std::string current = parent;
    for (size_t covered = children.size(); covered > 2; --covered) {
      std::string left = Intermediate(parent, children, covered - 1);
      counts_.symbols.insert(left);
      AddBinary(current, left, children[covered - 1]);
      current = left;
    }
    AddBinary(current, children[0], children[1]);
  }

  void AddUnary(const std::string& parent, const std::string& child) {
    counts_.unary[{parent, child}] += 1;
    counts_.parent_total[parent] += 1;
  }
  void AddBinary(const std::string& parent, const std::string& left, const std::string& right) {
    counts_.binary[{parent, left, right}] += 1;
    counts_.parent_total[parent] += 1;
  }

  const PcfgTrainerOptions& options_;
  Counts& counts_;
};

void CollectTagsAndWords(const Tree& node, std::vector<std::pair<std::string, std::string>>* out) {
  if (node.is_preterminal()) {
    out->emplace_back(node.label, node.children[0].label);
    return;
  }
  for (const Tree& child : node.children) CollectTagsAndWords(child, out);
}

// A leaf directly under a phrasal node (no POS tag) cannot be trained on.
bool HasBareLeaves(const Tree& node) {
  if (node.is_leaf() || node.is_preterminal()) return false;
  for (const Tree& child : node.children) {
    if (child.is_leaf() || HasBareLeaves(child)) return true;
  }
  return false;
}

// Max-product closure of the unary rules: best chain probability for every pair A != B that a
// chain connects (Dijkstra on -log p from each parent).
std::map<std::pair<std::string, std::string>, double> CloseUnaries(
    const std::map<std::pair<std::string, std::string>, double>& unary) {
  std::map<std::string, std::vector<std::pair<std::string, double>>> edges;
  for (const auto& [rule, p] : unary) {
    if (rule.first != rule.second) edges[rule.first].emplace_back(rule.second, p);
  }
  std::map<std::pair<std::string, std::string>, double> closed;
  for (const auto& [source, unused] : edges) {
    std::map<std::string, double> best;           // probability of the best chain found
    using Item = std::pair<double, std::string>;  // (-log p, symbol)
    std::priority_queue<Item, std::vector<Item>, std::greater<>> queue;
    queue.emplace(0.0, source);
    best[source] = 1.0;
    std::set<std::string> done;
    while (!queue.empty()) {
      auto [cost, symbol] = queue.top();
      queue.pop();
      if (!done.insert(symbol).second) continue;
      auto it = edges.find(symbol);
      if (it == edges.end()) continue;
      for (const auto& [child, p] : it->second) {
        double prob = best[symbol] * p;
        auto found = best.find(child);
        if (found == best.end() || prob > found->second) {
          best[child] = prob;
          queue.emplace(-std::log(prob), child);
        }
      }
    }
    for (const auto& [target, p] : best) {
      if (target != source) closed[{source, target}] = p;
    }
  }
  return closed;
}

}  // namespace

bool NormalizeTrainingTree(Tree* tree) {
  if (!StripEmptyElements(tree)) return false;
  StripFunctionTags(tree);
  SetRootLabel(tree, kRoot);
  // ROOT must rewrite through one unary: several top constituents get a FRAG above them.
  if (tree->children.size() > 1) {
    Tree frag("FRAG", std::move(tree->children));
    tree->children.clear();
    tree->children.push_back(std::move(frag));
  }
  CollapseSelfUnaries(tree);
  return !tree->children.empty();
}

StatusOr<BerkeleyTextExport> TrainPcfg(const std::vector<Tree>& trees,
                                       const PcfgTrainerOptions& options) {
  if (options.vertical_markovization < 1) {
    return Status::Error("vertical markovization must be at least 1");
  }
  if (options.rare_word_max_count < 0 || !(options.signature_smoothing >= 0)) {
    return Status::Error("rare word count and signature smoothing must not be negative");
  }
  Counts counts;
  RuleCollector collector(options, &counts);
  std::vector<std::vector<std::pair<std::string, std::string>>> sentences;
  std::map<std::string, double> word_count;
  for (const Tree& original : trees) {
    Tree tree = original;
    if (!NormalizeTrainingTree(&tree) || HasBareLeaves(tree)) continue;
    if (options.tag_parent_annotation) AnnotateTags(&tree);
    collector.Collect(tree);
    std::vector<std::pair<std::string, std::string>> tagged;
    CollectTagsAndWords(tree, &tagged);
    for (const auto& [tag, word] : tagged) {
      counts.tag_total[tag] += 1;
      counts.tag_word[{tag, word}] += 1;
      word_count[word] += 1;
    }
    sentences.push_back(std::move(tagged));
  }
  if (sentences.empty()) return Status::Error("no training tree has words");

  // Rare tokens, by tag and signature.
  auto is_known = [&](const std::string& w) { return word_count.count(w) > 0; };
  std::map<std::string, double> rare_by_tag;
  std::map<std::string, double> rare_by_signature;
  std::map<std::pair<std::string, std::string>, double> rare_tag_signature;
  double rare_total = 0;
  for (const auto& sentence : sentences) {
    for (size_t i = 0; i < sentence.size(); ++i) {
      const auto& [tag, word] = sentence[i];
      if (word_count[word] > options.rare_word_max_count) continue;
      std::string signature = UnknownWordSignature(word, int(i), is_known);
      rare_by_tag[tag] += 1;
      rare_by_signature[signature] += 1;
      rare_tag_signature[{tag, signature}] += 1;
      rare_total += 1;
    }
  }

  BerkeleyTextExport out;
  // Binary rules, then closed unaries with identities.
  for (const auto& [rule, count] : counts.binary) {
    const auto& [parent, left, right] = rule;
    out.grammar += parent + "_0 -> " + left + "_0 " + right + "_0 " +
                   FormatProbability(count / counts.parent_total[parent]) + "\n";
  }
  std::map<std::pair<std::string, std::string>, double> unary_probs;
  for (const auto& [rule, count] : counts.unary) {
    unary_probs[rule] = count / counts.parent_total[rule.first];
  }
  auto closed = CloseUnaries(unary_probs);
  for (const std::string& symbol : counts.symbols) closed[{symbol, symbol}] = 1.0;
  for (const auto& [rule, p] : closed) {
    out.grammar += rule.first + "_0 -> " + rule.second + "_0 " + FormatProbability(p) + "\n";
  }

  // Lexicon rows, sorted by tag then word (known words and signatures together).
  std::map<std::pair<std::string, std::string>, double> rows;
  auto lambda_of = [&](const std::string& tag) {
    auto it = rare_by_tag.find(tag);
    return it == rare_by_tag.end() ? 0.0 : it->second / counts.tag_total[tag];
  };
  for (const auto& [pair, count] : counts.tag_word) {
    const std::string& tag = pair.first;
    if (word_count[pair.second] > options.smoothed_word_max_count) {
      rows[pair] = (1 - lambda_of(tag)) * count / counts.tag_total[tag];
    }
  }
  // Rare known words: P(T | w) smoothed towards the tags of rare words, P(w | T) by Bayes.
  const double s = options.word_smoothing;
  for (const auto& [word, word_total] : word_count) {
    if (word_total > options.smoothed_word_max_count) continue;
    for (const auto& [tag, tag_total] : counts.tag_total) {
      auto it = counts.tag_word.find({tag, word});
      double own = it == counts.tag_word.end() ? 0.0 : it->second;
      auto rare = rare_by_tag.find(tag);
      double tag_given_unknown = rare == rare_by_tag.end() ? 0.0 : rare->second / rare_total;
      double tag_given_word = (own + s * tag_given_unknown) / (word_total + s);
      double p = (1 - lambda_of(tag)) * tag_given_word * word_total / tag_total;
      if (p > 0) rows[{tag, word}] = p;
    }
  }
  const double a = options.signature_smoothing;
  for (const auto& [tag, rare] : rare_by_tag) {
    double lambda = rare / counts.tag_total[tag];
    for (const auto& [signature, signature_rare] : rare_by_signature) {
      auto it = rare_tag_signature.find({tag, signature});
      double own = it == rare_tag_signature.end() ? 0.0 : it->second;
      double p = lambda * (own + a * signature_rare / rare_total) / (rare + a);
      if (p > 0) rows[{tag, signature}] += p;  // a word spelt like a signature shares its row
    }
  }
  for (const auto& [pair, p] : rows) {
    // A tag whose tokens are all rare leaves its words no mass: they score through signatures.
    if (p <= 0) continue;
    out.lexicon += pair.first + " " + pair.second + " [" + FormatProbability(p) + "]\n";
  }

  // Every symbol has a one-leaf split tree; ROOT gets no line, as in Berkeley's exports.
  for (const std::string& symbol : counts.symbols) {
    if (symbol != kRoot) out.splits += symbol + "\t0\n";
  }
  std::set<std::string> words;
  for (const auto& [word, count] : word_count) words.insert(word);
  for (const auto& [signature, count] : rare_by_signature) words.insert(signature);
  for (const std::string& word : words) out.words += word + "\n";
  return out;
}

Status WriteBerkeleyTextExport(const BerkeleyTextExport& text, const std::string& prefix) {
  const std::pair<const char*, const std::string*> parts[] = {{".grammar", &text.grammar},
                                                              {".lexicon", &text.lexicon},
                                                              {".splits", &text.splits},
                                                              {".words", &text.words}};
  // Not a structured binding: clang 14 cannot capture one in the lambda.
  for (const auto& part : parts) {
    const std::string& content = *part.second;
    CKY_RETURN_IF_ERROR(WriteFileAtomically(prefix + part.first, [&](std::ostream& out) {
      out << content;
      return Status();
    }));
  }
  return Status();
}

}  // namespace cky
