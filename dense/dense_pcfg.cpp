#include "dense/dense_pcfg.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "common/input_file.h"
#include "common/output_file.h"
#include "grammar_io/berkeley_model.h"

namespace cky {

void DensePcfg::IndexWords() {
  word_ids_.clear();
  word_ids_.reserve(words.size());
  for (size_t w = 0; w < words.size(); ++w) word_ids_.emplace(words[w], static_cast<int>(w));
}

int DensePcfg::WordId(const std::string& word) const {
  auto it = word_ids_.find(word);
  return it == word_ids_.end() ? unknown_word : it->second;
}

std::vector<int> DensePcfg::WordIds(const std::vector<std::string>& sentence) const {
  std::vector<int> ids;
  ids.reserve(sentence.size());
  for (const std::string& word : sentence) ids.push_back(WordId(word));
  return ids;
}

Status ValidateDensePcfg(const DensePcfg& g) {
  const size_t m = static_cast<size_t>(g.num_nonterminals);
  if (g.num_nonterminals < 1) return Status::Error("a dense grammar needs at least 1 nonterminal");
  if (g.words.empty()) return Status::Error("a dense grammar needs at least one word");
  if (g.unknown_word < 0 || g.unknown_word >= g.vocabulary_size()) {
    return Status::Error("the unknown word id is outside the vocabulary");
  }
  if (g.rules.size() != m * m * m) return Status::Error("the rule tensor is not m x m x m");
  if (g.terminals.size() != g.words.size() * m) {
    return Status::Error("the terminal table is not vocabulary x m");
  }
  for (double p : g.rules) {
    if (!std::isfinite(p) || p < 0 || p > 1)
      return Status::Error("a rule probability is not in [0, 1]");
  }
  for (double p : g.terminals) {
    if (!std::isfinite(p) || p < 0 || p > 1) {
      return Status::Error("a terminal probability is not in [0, 1]");
    }
  }
  std::unordered_map<std::string, int> seen;
  for (const std::string& w : g.words) {
    if (w.empty() || w.find_first_of(" \t\r\n") != std::string::npos) {
      return Status::Error("vocabulary word '" + w + "' is empty or holds whitespace");
    }
    if (!seen.emplace(w, 0).second) return Status::Error("vocabulary word '" + w + "' is repeated");
  }
  return Status();
}

// The text format. Whitespace-separated fields, one statement a line; '#' starts a comment line.
// Probabilities are plain decimals; rules left out have probability 0. Example (a complete file):
//
//   # two nonterminals; A0 is the start symbol
//   dense-pcfg 2          <- must come first: the number of nonterminals m
//   unknown *UNK*         <- the unknown-word token (becomes a vocabulary word)
//   word the              <- optional: declares a word (keeps its id, even with no rules)
//   binary 0 0 1 0.25     <- P(A0 -> A0 A1) = 0.25 (parent, left, right by index)
//   binary 0 1 1 0.25
//   binary 1 1 0 0.5
//   lexical 0 the 0.5     <- P(A0 -> the) = 0.5 (parent index, word, probability)
//   lexical 1 dog 0.4
//   lexical 1 *UNK* 0.1
//
// Word ids follow first mention ("unknown", "word" or "lexical" lines). A rule given twice is an
// error; so is any index outside [0, m).
StatusOr<DensePcfg> ReadDensePcfgText(const std::string& path) {
  StatusOr<std::unique_ptr<InputFile>> file = InputFile::Open(path);
  if (!file.ok()) return file.status();
  std::istream& in = (*file)->stream();
  DensePcfg g;
  std::vector<uint8_t> rule_seen;
  std::unordered_map<std::string, int> word_ids;
  std::vector<std::vector<std::pair<int, double>>> lexical;  // word id -> (a, p)
  bool have_unknown = false;
  auto word_id = [&](const std::string& word) {
    auto [it, added] = word_ids.emplace(word, static_cast<int>(g.words.size()));
    if (added) {
      g.words.push_back(word);
      lexical.emplace_back();
    }
    return it->second;
  };
  std::string line;
  long line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    std::istringstream fields(line);
    std::string keyword;
    if (!(fields >> keyword) || keyword[0] == '#') continue;
    auto error = [&](const std::string& message) { return LineError(path, line_number, message); };
    const int m = g.num_nonterminals;
    if (m == 0 && keyword != "dense-pcfg") {
      return error("expected 'dense-pcfg M' before '" + keyword + "'");
    }
    auto valid_nonterminal = [&](long a) { return a >= 0 && a < m; };
    std::string extra;
    if (keyword == "dense-pcfg") {
      long count = 0;
      if (m != 0) return error("'dense-pcfg' given twice");
      if (!(fields >> count) || count < 1 || count > 4096) {
        return error("'dense-pcfg' needs a nonterminal count in [1, 4096]");
      }
      g.num_nonterminals = static_cast<int>(count);
      g.rules.assign(static_cast<size_t>(count) * count * count, 0.0);
      rule_seen.assign(g.rules.size(), 0);
    } else if (keyword == "unknown") {
      std::string word;
      if (have_unknown) return error("'unknown' given twice");
      if (!(fields >> word)) return error("'unknown' needs a word");
      g.unknown_word = word_id(word);
      have_unknown = true;
    } else if (keyword == "word") {
      std::string word;
      if (!(fields >> word)) return error("'word' needs a word");
      word_id(word);
    } else if (keyword == "binary") {
      long a, b, c;
      double p;
      if (!(fields >> a >> b >> c >> p)) return error("expected 'binary PARENT LEFT RIGHT PROB'");
      if (!valid_nonterminal(a) || !valid_nonterminal(b) || !valid_nonterminal(c)) {
        return error("nonterminal index outside [0, " + std::to_string(m) + ")");
      }
      if (!std::isfinite(p) || p < 0 || p > 1) return error("probability not in [0, 1]");
      const size_t index = (static_cast<size_t>(a) * m + b) * m + c;
      if (rule_seen[index]) return error("binary rule given twice");
      rule_seen[index] = 1;
      g.rules[index] = p;
    } else if (keyword == "lexical") {
      long a;
      std::string word;
      double p;
      if (!(fields >> a >> word >> p)) return error("expected 'lexical PARENT WORD PROB'");
      if (!valid_nonterminal(a)) {
        return error("nonterminal index outside [0, " + std::to_string(m) + ")");
      }
      if (!std::isfinite(p) || p < 0 || p > 1) return error("probability not in [0, 1]");
      const int w = word_id(word);
      for (const auto& [seen_a, seen_p] : lexical[w]) {
        if (seen_a == a) return error("lexical rule given twice");
      }
      lexical[w].emplace_back(static_cast<int>(a), p);
    } else {
      return error("unknown statement '" + keyword + "'");
    }
    if (fields >> extra) return error("unexpected '" + extra + "' at the end of the line");
  }
  CKY_RETURN_IF_ERROR((*file)->ReadStatus());
  if (g.num_nonterminals == 0) return Status::Error(path + ": no 'dense-pcfg M' line");
  if (!have_unknown) return Status::Error(path + ": no 'unknown WORD' line");
  const int m = g.num_nonterminals;
  g.terminals.assign(g.words.size() * m, 0.0);
  for (size_t w = 0; w < lexical.size(); ++w) {
    for (const auto& [a, p] : lexical[w]) g.terminals[w * m + a] = p;
  }
  g.IndexWords();
  Status valid = ValidateDensePcfg(g);
  if (!valid.ok()) return Status::Error(path + ": " + valid.message());
  return g;
}

namespace {

// The binary form: the magic, then little-endian uint32 m, vocabulary size V and unknown-word id,
// V words as (uint32 length, bytes), then m^3 float64 rules and V*m float64 terminals, in the
// DensePcfg layouts.
constexpr char kBinaryMagic[8] = {'C', 'K', 'Y', 'D', 'E', 'N', 'S', '1'};

template <typename T>
void AppendRaw(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

Status WriteStringToFile(const std::string& path, const std::string& content) {
  return WriteFileAtomically(path, [&](std::ostream& out) {
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    return Status();
  });
}

}  // namespace

StatusOr<DensePcfg> ReadDensePcfgBinary(const std::string& path) {
  StatusOr<std::string> content = ReadWholeFile(path);
  if (!content.ok()) return content.status();
  const std::string& data = *content;
  size_t pos = 0;
  auto truncated = [&] { return Status::Error(path + ": truncated dense grammar file"); };
  auto read_u32 = [&](uint32_t* value) {
    if (pos + 4 > data.size()) return false;
    std::memcpy(value, data.data() + pos, 4);
    pos += 4;
    return true;
  };
  if (data.size() < sizeof(kBinaryMagic) ||
      std::memcmp(data.data(), kBinaryMagic, sizeof(kBinaryMagic)) != 0) {
    return Status::Error(path + ": not a binary dense grammar (bad magic)");
  }
  pos = sizeof(kBinaryMagic);
  uint32_t m = 0, vocabulary = 0, unknown = 0;
  if (!read_u32(&m) || !read_u32(&vocabulary) || !read_u32(&unknown)) return truncated();
  if (m < 1 || m > 4096) return Status::Error(path + ": nonterminal count out of range");
  DensePcfg g;
  g.num_nonterminals = static_cast<int>(m);
  g.unknown_word = static_cast<int>(unknown);
  for (uint32_t w = 0; w < vocabulary; ++w) {
    uint32_t length = 0;
    if (!read_u32(&length) || pos + length > data.size()) return truncated();
    g.words.emplace_back(data.data() + pos, length);
    pos += length;
  }
  const size_t rule_count = static_cast<size_t>(m) * m * m;
  const size_t terminal_count = static_cast<size_t>(vocabulary) * m;
  if (data.size() - pos != (rule_count + terminal_count) * sizeof(double)) {
    return Status::Error(path + ": dense grammar file has the wrong size for its header");
  }
  g.rules.resize(rule_count);
  g.terminals.resize(terminal_count);
  std::memcpy(g.rules.data(), data.data() + pos, rule_count * sizeof(double));
  pos += rule_count * sizeof(double);
  std::memcpy(g.terminals.data(), data.data() + pos, terminal_count * sizeof(double));
  g.IndexWords();
  Status valid = ValidateDensePcfg(g);
  if (!valid.ok()) return Status::Error(path + ": " + valid.message());
  return g;
}

StatusOr<DensePcfg> LoadDensePcfg(const std::string& path) {
  // A Berkeley grammar has unary rules and thousands of latent states: no dense CNF grammar.
  if (path != "-" && DetectGrammarFormat(path) != GrammarFormat::kUnknown) {
    return Status::Error(path +
                         ": a Berkeley grammar (.gr, text export or .ckybin cache), which has "
                         "unary rules and latent states; the dense inside algorithm takes a "
                         "dense CNF PCFG in cky's dense format (make one with `cky inside "
                         "--generate M --save-grammar FILE`; parse with a Berkeley grammar with "
                         "`cky parse --grammar`)");
  }
  StatusOr<std::unique_ptr<InputFile>> file = InputFile::Open(path);
  if (!file.ok()) return file.status();
  char head[sizeof(kBinaryMagic)] = {};
  (*file)->stream().read(head, sizeof(head));
  const bool binary = (*file)->stream().gcount() == static_cast<std::streamsize>(sizeof(head)) &&
                      std::memcmp(head, kBinaryMagic, sizeof(head)) == 0;
  file.value().reset();  // close before reopening
  return binary ? ReadDensePcfgBinary(path) : ReadDensePcfgText(path);
}

Status WriteDensePcfgText(const DensePcfg& g, const std::string& path) {
  CKY_RETURN_IF_ERROR(ValidateDensePcfg(g));
  const int m = g.num_nonterminals;
  std::string out;
  char number[64];
  auto probability = [&](double p) {
    std::snprintf(number, sizeof(number), "%.17g", p);
    return std::string(number);
  };
  out += "# dense PCFG: " + std::to_string(m) + " nonterminals, " + std::to_string(g.words.size()) +
         " words; A0 is the start symbol\n";
  out += "dense-pcfg " + std::to_string(m) + "\n";
  out += "unknown " + g.words[g.unknown_word] + "\n";
  for (const std::string& word : g.words) out += "word " + word + "\n";
  for (int a = 0; a < m; ++a) {
    for (int b = 0; b < m; ++b) {
      for (int c = 0; c < m; ++c) {
        const double p = g.Rule(a, b, c);
        if (p <= 0) continue;
        out += "binary " + std::to_string(a) + " " + std::to_string(b) + " " + std::to_string(c) +
               " " + probability(p) + "\n";
      }
    }
  }
  for (int w = 0; w < g.vocabulary_size(); ++w) {
    for (int a = 0; a < m; ++a) {
      const double p = g.Terminal(w, a);
      if (p <= 0) continue;
      out += "lexical " + std::to_string(a) + " " + g.words[w] + " " + probability(p) + "\n";
    }
  }
  return WriteStringToFile(path, out);
}

Status WriteDensePcfgBinary(const DensePcfg& g, const std::string& path) {
  CKY_RETURN_IF_ERROR(ValidateDensePcfg(g));
  std::string out(kBinaryMagic, sizeof(kBinaryMagic));
  AppendRaw(out, static_cast<uint32_t>(g.num_nonterminals));
  AppendRaw(out, static_cast<uint32_t>(g.words.size()));
  AppendRaw(out, static_cast<uint32_t>(g.unknown_word));
  for (const std::string& word : g.words) {
    AppendRaw(out, static_cast<uint32_t>(word.size()));
    out += word;
  }
  out.append(reinterpret_cast<const char*>(g.rules.data()), g.rules.size() * sizeof(double));
  out.append(reinterpret_cast<const char*>(g.terminals.data()),
             g.terminals.size() * sizeof(double));
  return WriteStringToFile(path, out);
}

Status WriteDensePcfgAsBerkeley(const DensePcfg& g, const std::string& prefix) {
  CKY_RETURN_IF_ERROR(ValidateDensePcfg(g));
  const int m = g.num_nonterminals;
  char number[64];
  auto probability = [&](double p) {
    std::snprintf(number, sizeof(number), "%.17g", p);
    return std::string(number);
  };
  auto state = [](int a) { return DensePcfg::NonterminalName(a) + "_0"; };
  std::string grammar;
  for (int a = 0; a < m; ++a) {
    for (int b = 0; b < m; ++b) {
      for (int c = 0; c < m; ++c) {
        const double p = g.Rule(a, b, c);
        if (p > 0)
          grammar += state(a) + " -> " + state(b) + " " + state(c) + " " + probability(p) + "\n";
      }
    }
  }
  grammar += "ROOT_0 -> ROOT_0 1.0\n";
  grammar += "ROOT_0 -> " + state(0) + " 1.0\n";
  for (int a = 0; a < m; ++a) grammar += state(a) + " -> " + state(a) + " 1.0\n";
  std::string lexicon;
  for (int w = 0; w < g.vocabulary_size(); ++w) {
    for (int a = 0; a < m; ++a) {
      const double p = g.Terminal(w, a);
      if (p > 0)
        lexicon += DensePcfg::NonterminalName(a) + " " + g.words[w] + " [" + probability(p) + "]\n";
    }
  }
  std::string splits;
  for (int a = 0; a < m; ++a) splits += DensePcfg::NonterminalName(a) + "\t0\n";
  std::string words;
  for (const std::string& word : g.words) words += word + "\n";
  CKY_RETURN_IF_ERROR(WriteStringToFile(prefix + ".grammar", grammar));
  CKY_RETURN_IF_ERROR(WriteStringToFile(prefix + ".lexicon", lexicon));
  CKY_RETURN_IF_ERROR(WriteStringToFile(prefix + ".splits", splits));
  return WriteStringToFile(prefix + ".words", words);
}

std::vector<std::string> BuildDenseVocabulary(
    const std::vector<std::vector<std::string>>& sentences, int min_count) {
  std::unordered_map<std::string, int> counts;
  std::vector<std::string> order;
  for (const auto& sentence : sentences) {
    for (const std::string& word : sentence) {
      if (counts[word]++ == 0) order.push_back(word);
    }
  }
  std::vector<std::string> vocabulary = {kDenseUnknownWord};
  for (const std::string& word : order) {
    if (word != kDenseUnknownWord && counts[word] >= min_count) vocabulary.push_back(word);
  }
  return vocabulary;
}

DensePcfg GenerateDensePcfg(const DenseGeneratorOptions& options,
                            std::vector<std::string> vocabulary) {
  DensePcfg g;
  const int m = options.num_nonterminals;
  g.num_nonterminals = m;
  bool has_unknown = false;
  for (size_t w = 0; w < vocabulary.size(); ++w) {
    if (vocabulary[w] == kDenseUnknownWord) {
      g.unknown_word = static_cast<int>(w);
      has_unknown = true;
    }
  }
  if (!has_unknown) {
    vocabulary.insert(vocabulary.begin(), kDenseUnknownWord);
    g.unknown_word = 0;
  }
  g.words = std::move(vocabulary);
  const size_t vocabulary_size = g.words.size();
  // mt19937_64 is specified exactly by the standard, and the weight is built from its raw bits,
  // so a seed names the same grammar with every standard library.
  std::mt19937_64 random(options.seed);
  auto weight = [&] { return 0.05 + static_cast<double>(random() >> 11) * 0x1.0p-53; };
  g.rules.resize(static_cast<size_t>(m) * m * m);
  g.terminals.assign(vocabulary_size * m, 0.0);
  for (int a = 0; a < m; ++a) {
    double* row = g.rules.data() + static_cast<size_t>(a) * m * m;
    double total = 0;
    for (size_t bc = 0; bc < static_cast<size_t>(m) * m; ++bc) total += row[bc] = weight();
    for (size_t bc = 0; bc < static_cast<size_t>(m) * m; ++bc)
      row[bc] *= options.binary_mass / total;
  }
  std::vector<double> column(vocabulary_size);
  for (int a = 0; a < m; ++a) {
    double total = 0;
    for (size_t w = 0; w < vocabulary_size; ++w) total += column[w] = weight();
    for (size_t w = 0; w < vocabulary_size; ++w) {
      g.terminals[w * m + a] = column[w] * (1.0 - options.binary_mass) / total;
    }
  }
  g.IndexWords();
  return g;
}

}  // namespace cky
