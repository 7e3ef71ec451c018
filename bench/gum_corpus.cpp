#include "bench/gum_corpus.h"

#include <cctype>
#include <fstream>

#include "treebank/reader.h"

namespace cky::bench {

std::vector<std::string> GumDocuments(const std::string& splits_path, const std::string& section) {
  std::ifstream in(splits_path);
  std::vector<std::string> documents;
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) {
      in_section = line == "## " + section;
      continue;
    }
    const size_t star = line.find("* ");
    if (!in_section || star == std::string::npos) continue;
    std::string name = line.substr(star + 2);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
    if (name.find("reddit") == std::string::npos) documents.push_back(name);
  }
  return documents;
}

namespace {

void Collect(const Tree& node, std::vector<TaggedWord>* out) {
  if (node.is_preterminal()) {
    out->push_back({node.label, node.children[0].label});
    return;
  }
  for (const Tree& child : node.children) Collect(child, out);
}

}  // namespace

std::vector<std::vector<TaggedWord>> TreebankTaggedWords(const std::string& path) {
  std::vector<std::vector<TaggedWord>> sentences;
  ReadTreebankOptions options;
  options.continue_on_error = true;
  auto trees = ReadTreebankFile(path, options);
  if (!trees.ok()) return sentences;
  for (const Tree& tree : *trees) {
    std::vector<TaggedWord> words;
    Collect(tree, &words);
    if (!words.empty()) sentences.push_back(std::move(words));
  }
  return sentences;
}

std::vector<std::vector<std::string>> TreebankWords(const std::string& path) {
  std::vector<std::vector<std::string>> sentences;
  for (const auto& tagged : TreebankTaggedWords(path)) {
    std::vector<std::string> words;
    for (const TaggedWord& w : tagged) words.push_back(w.word);
    sentences.push_back(std::move(words));
  }
  return sentences;
}

}  // namespace cky::bench
