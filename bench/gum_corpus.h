// GUM sentences for the benchmarks: the document lists of shared/treebanks/gum/splits.md and the
// words (and tags) of each tree, read with the treebank reader.
#pragma once

#include <string>
#include <vector>

namespace cky::bench {

// The documents listed under "## <section>" (test, dev, train, test2) of GUM's splits.md, reddit
// documents left out (their words are masked). Empty when the file cannot be read.
std::vector<std::string> GumDocuments(const std::string& splits_path, const std::string& section);

struct TaggedWord {
  std::string tag;
  std::string word;
};

// The (tag, word) leaves of every tree in a bracketed file, one vector per tree; empty when the
// file cannot be read. Trees the reader rejects are skipped.
std::vector<std::vector<TaggedWord>> TreebankTaggedWords(const std::string& path);

// The words only.
std::vector<std::vector<std::string>> TreebankWords(const std::string& path);

}  // namespace cky::bench
