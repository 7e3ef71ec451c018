// How well does our tokenizer reproduce GUM's own tokens?
//
// For each sentence of the GUM test documents (or --split dev/train/test2; reddit files skipped:
// their words are hidden), the tree's leaves are detokenized into plausible raw text ("`` Hi , ''
// he said" -> "\"Hi,\" he said"), tokenized again with cky::Tokenizer, and compared with GUM's
// tokens. GUM keeps some characters that PTB tokenizers normalize (“ ” ’s [ — …), so both sides are
// compared in one canonical form (`` '' 's -LSB- -- ...). Printed per tokenizer setting:
//   - sentence match: Tokenize(detokenized sentence) equals GUM's tokens exactly;
//   - token recall / precision: longest common subsequence of the two token lists;
//   - split+tokenize match: SplitAndTokenize of the sentence alone gives exactly one sentence,
//     equal to GUM's tokens (so the splitter did not cut it);
//   - document recall: all sentences of a document joined with spaces into paragraphs (a
//     sentence without final punctuation, i.e. a heading, stands alone between blank lines), then
//     SplitAndTokenize; the share of GUM sentences that come out exactly as one sentence.
// Then the speed of SplitAndTokenize over the same documents, one thread.
//
// GUM files (../shared/treebanks/gum/const/*.ptb) hold one bracketed tree over several lines:
//
//   (ROOT
//     (S (NP (PRP I)) (VP (VBP do) (RB n't)) (. .)))
//
// Trees are read with the treebank reader (bench/gum_corpus.h).
//
// Usage: tokenizer_gum [--gum DIR] [--split test|dev|train|test2] [--show-failures N]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/gum_corpus.h"
#include "text/tokenizer.h"

namespace {

using Leaf = cky::bench::TaggedWord;
using Sentence = std::vector<Leaf>;

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

// GUM's word in the canonical form our tokenizer prints with default options.
std::string Canonical(const std::string& tag, const std::string& word) {
  static const std::map<std::string, std::string> kSame = {
      {"\u201C", "``"}, {"\u201D", "''"}, {"\u2018", "`"},  {"\u2019", "'"},   {"[", "-LSB-"},
      {"]", "-RSB-"},   {"{", "-LCB-"},   {"}", "-RCB-"},   {"(", "-LRB-"},    {")", "-RRB-"},
      {"\u2014", "--"}, {"\u2013", "--"}, {"\u2015", "--"}, {"\u2026", "..."},
  };
  if (tag == "``") return word == "`" || word == "\u2018" || word == "'" ? "`" : "``";
  if (tag == "''") return word == "'" || word == "\u2019" ? "'" : "''";
  if (auto it = kSame.find(word); it != kSame.end()) return it->second;
  if (StartsWith(word, "\u2019") || word == "n\u2019t" || word == "N\u2019T") {
    return ReplaceAll(word, "\u2019", "'");
  }
  return word;
}

bool IsClitic(const std::string& word) {
  static const std::set<std::string> kClitics = {"'s", "'re", "'ll", "'ve", "'m", "'d", "n't",
                                                 "'S", "'RE", "'LL", "'VE", "'M", "'D", "N'T"};
  return kClitics.count(ReplaceAll(word, "\u2019", "'")) > 0;
}

// Plausible raw text for a sentence's leaves.
std::string Detokenize(const Sentence& leaves) {
  static const std::map<std::string, std::string> kRaw = {
      {"-LRB-", "("}, {"-RRB-", ")"}, {"-LSB-", "["}, {"-RSB-", "]"},
      {"-LCB-", "{"}, {"-RCB-", "}"}, {"``", "\""},   {"''", "\""},
  };
  static const std::set<std::string> kAttachLeft = {",", ".", ";", ":",   "!",      "?",  ")",
                                                    "]", "}", "%", "...", "\u2026", "?!", "!!"};
  static const std::set<std::string> kAttachRight = {"(", "[", "{", "$", "#", "\u00A3", "\u20AC"};
  std::string text;
  bool glue_next = true;  // no space before the first token
  std::string previous_lower;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Leaf& leaf = leaves[i];
    std::string raw = leaf.word;
    if (auto it = kRaw.find(raw); it != kRaw.end()) raw = it->second;
    if (leaf.word == "`") raw = "'";
    std::string lower = leaf.word;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    bool joined_word = (lower == "na" && (previous_lower == "gon" || previous_lower == "wan")) ||
                       (lower == "ta" && previous_lower == "got") ||
                       (lower == "not" && previous_lower == "can");
    bool glue = glue_next || kAttachLeft.count(raw) > 0 || leaf.tag == "''" || leaf.tag == "POS" ||
                IsClitic(leaf.word) || leaf.tag == "HYPH" || leaf.word == "/" ||
                leaf.word == "\u2014" || joined_word;
    if (!glue) text += ' ';
    text += raw;
    glue_next = leaf.tag == "``" || kAttachRight.count(raw) > 0 || leaf.tag == "HYPH" ||
                leaf.word == "/" || leaf.word == "\u2014";
    previous_lower = lower;
  }
  return text;
}

// Length of the longest common subsequence of two token lists.
size_t CommonTokens(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<size_t> row(b.size() + 1, 0), next(b.size() + 1, 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      next[j] = a[i - 1] == b[j - 1] ? row[j - 1] + 1 : std::max(row[j], next[j - 1]);
    }
    std::swap(row, next);
  }
  return row[b.size()];
}

std::string Join(const std::vector<std::string>& tokens) {
  std::string out;
  for (const std::string& token : tokens) out += (out.empty() ? "" : " ") + token;
  return out;
}

// Whether a sentence ending in `token` could be followed by another one on the same line.
bool IsSentenceEnd(const std::string& token) {
  static const std::set<std::string> kEnds = {".",     "?",   "!", "''", "'",  "-RRB-",
                                              "-RSB-", "...", ":", ";",  "?!", "!!"};
  return kEnds.count(token) > 0 || (token.size() > 1 && token.back() == '.');
}

struct Counts {
  long sentences = 0, exact = 0, split_exact = 0, document_found = 0;
  long gold_tokens = 0, our_tokens = 0, common_tokens = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Tokenizer accuracy on GUM test sentences (detokenized, then re-tokenized)"};
  std::string gum = "../shared/treebanks/gum";
  int show_failures = 0;
  std::string split = "test";
  int show_split_failures = 0;
  int show_document_failures = 0;
  app.add_option("--gum", gum, "GUM folder with splits.md and const/*.ptb")->capture_default_str();
  app.add_option("--split", split, "Which documents of splits.md: test, dev, train or test2")
      ->capture_default_str();
  app.add_option("--show-failures", show_failures,
                 "Print this many mismatching sentences per setting (GUM's, detokenized, ours)");
  app.add_option("--show-split-failures", show_split_failures,
                 "Print this many sentences, tokenized right, that SplitAndTokenize cuts apart");
  app.add_option("--show-document-failures", show_document_failures,
                 "Print this many sentences of the whole-document run that are not GUM sentences");
  std::string fixture;
  std::vector<std::string> fixture_documents;
  app.add_option("--write-fixture", fixture,
                 "Instead of measuring, write 'raw text<TAB>GUM tokens' lines of the documents "
                 "given with --documents to this file (for text/testdata/)");
  app.add_option("--documents", fixture_documents, "GUM documents for --write-fixture")
      ->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  if (!fixture.empty()) {
    std::ofstream out(fixture);
    out << "# Sentences of GUM (https://gucorpling.org/gum/; Zeldes 2017, \"The GUM Corpus\"), "
           "one\n"
           "# per line: raw text made by bench/tokenizer_gum's detokenizer, a tab, GUM's tokens "
           "in\n"
           "# the canonical form cky's tokenizer prints. Annotations: CC-BY 4.0. Texts: see the\n"
           "# licence of each document's genre in GUM's LICENSE.txt (academic and court: CC-BY "
           "4.0;\n"
           "# Wikinews news and interviews: CC-BY 2.5). Regenerate with:\n"
           "#   tokenizer_gum --write-fixture FILE --documents DOC,DOC\n";
    for (const std::string& document : fixture_documents) {
      std::string path = gum + "/const/" + document + ".ptb";
      if (!std::filesystem::exists(path)) {
        std::cerr << "missing " << path << "\n";
        return 1;
      }
      out << "# " << document << "\n";
      for (const Sentence& sentence : cky::bench::TreebankTaggedWords(path)) {
        std::vector<std::string> gold;
        for (const Leaf& leaf : sentence) gold.push_back(Canonical(leaf.tag, leaf.word));
        out << Detokenize(sentence) << "\t" << Join(gold) << "\n";
      }
    }
    return out ? 0 : 1;
  }

  std::vector<std::string> documents = cky::bench::GumDocuments(gum + "/splits.md", split);
  if (documents.empty()) {
    std::cerr << "no " << split << " documents found in " << gum << "/splits.md\n";
    return 1;
  }
  std::vector<std::vector<Sentence>> corpus;
  for (const std::string& document : documents) {
    std::string path = gum + "/const/" + document + ".ptb";
    if (!std::filesystem::exists(path)) {
      std::cerr << "missing " << path << "\n";
      return 1;
    }
    corpus.push_back(cky::bench::TreebankTaggedWords(path));
  }

  std::printf("GUM %s documents: %zu (reddit skipped)\n\n", split.c_str(), documents.size());
  std::printf("%-22s %9s %14s %12s %12s %16s %14s\n", "setting", "sentences", "sentence match",
              "tok recall", "tok precis.", "split+tok match", "document recall");
  for (bool split_hyphens : {false, true}) {
    cky::TokenizerOptions options;
    options.split_hyphens = split_hyphens;
    cky::StatusOr<cky::Tokenizer> tokenizer = cky::Tokenizer::Create(options);
    if (!tokenizer.ok()) {
      std::cerr << tokenizer.status().message() << "\n";
      return 1;
    }
    Counts counts;
    int failures_shown = 0;
    int split_failures_shown = 0;
    int document_failures_shown = 0;
    std::ostringstream failures;
    for (const std::vector<Sentence>& document : corpus) {
      std::string paragraph;
      std::multiset<std::string> gold_sentences;
      for (const Sentence& sentence : document) {
        std::vector<std::string> gold;
        for (const Leaf& leaf : sentence) gold.push_back(Canonical(leaf.tag, leaf.word));
        std::string raw = Detokenize(sentence);
        std::vector<std::string> ours = tokenizer->Tokenize(raw);
        ++counts.sentences;
        counts.gold_tokens += static_cast<long>(gold.size());
        counts.our_tokens += static_cast<long>(ours.size());
        counts.common_tokens += static_cast<long>(CommonTokens(gold, ours));
        if (ours == gold) {
          ++counts.exact;
        } else if (failures_shown < show_failures) {
          ++failures_shown;
          failures << "  gum:  " << Join(gold) << "\n  raw:  " << raw << "\n  ours: " << Join(ours)
                   << "\n\n";
        }
        auto split = tokenizer->SplitAndTokenize(raw);
        if (split.size() == 1 && split[0] == gold) {
          ++counts.split_exact;
        } else if (ours == gold && split_failures_shown < show_split_failures) {
          ++split_failures_shown;
          failures << "  split: " << raw << "\n";
          for (const auto& piece : split) failures << "    -> " << Join(piece) << "\n";
        }
        // A heading (no final punctuation) stands on a line of its own, as in the source text.
        paragraph += raw;
        paragraph += IsSentenceEnd(gold.back()) ? " " : "\n\n";
        gold_sentences.insert(Join(gold));
      }
      std::vector<std::string> unmatched_ours;
      for (const auto& sentence : tokenizer->SplitAndTokenize(paragraph)) {
        auto it = gold_sentences.find(Join(sentence));
        if (it != gold_sentences.end()) {
          ++counts.document_found;
          gold_sentences.erase(it);
        } else {
          unmatched_ours.push_back(Join(sentence));
        }
      }
      for (const std::string& sentence : unmatched_ours) {
        if (document_failures_shown >= show_document_failures) break;
        ++document_failures_shown;
        failures << "  document, not in GUM: " << sentence << "\n";
      }
    }
    auto percent = [](long part, long whole) { return whole ? 100.0 * part / whole : 0.0; };
    std::printf("%-22s %9ld %13.1f%% %11.1f%% %11.1f%% %15.1f%% %14.1f%%\n",
                split_hyphens ? "split_hyphens=true" : "split_hyphens=false", counts.sentences,
                percent(counts.exact, counts.sentences),
                percent(counts.common_tokens, counts.gold_tokens),
                percent(counts.common_tokens, counts.our_tokens),
                percent(counts.split_exact, counts.sentences),
                percent(counts.document_found, counts.sentences));
    std::cout << failures.str();
  }

  // Speed: SplitAndTokenize of every document (one thread, default options), best of 3.
  cky::StatusOr<cky::Tokenizer> tokenizer = cky::Tokenizer::Create();
  if (!tokenizer.ok()) return 1;
  std::vector<std::string> texts;
  size_t bytes = 0;
  for (const std::vector<Sentence>& document : corpus) {
    std::string text;
    for (const Sentence& sentence : document) text += Detokenize(sentence) + " ";
    bytes += text.size();
    texts.push_back(std::move(text));
  }
  double best_seconds = 1e30;
  size_t sentences = 0;
  for (int repeat = 0; repeat < 3; ++repeat) {
    auto start = std::chrono::steady_clock::now();
    sentences = 0;
    for (const std::string& text : texts) sentences += tokenizer->SplitAndTokenize(text).size();
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    best_seconds = std::min(best_seconds, elapsed.count());
  }
  std::printf("\nSplitAndTokenize speed (1 thread): %.0f sentences/s, %.2f MB/s\n",
              sentences / best_seconds, bytes / best_seconds / 1e6);
  return 0;
}
