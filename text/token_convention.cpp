#include "text/token_convention.h"

#include <array>
#include <unordered_map>

namespace cky {
namespace {

// How much the grammar's treebank used each word: its count (a .gr file or a cache of one), or
// for a text export, which holds no counts, the sum over its lexicon rows of the mean P(word |
// tag substate). 0 for a word the grammar does not know. Signatures ("UNK-...") are left out.
class WordWeights {
 public:
  explicit WordWeights(const BerkeleyModel& model) {
    if (model.lexicon_counts) {
      for (const auto& [word, count] : model.lexicon_counts->word_counts) Add(word, count);
    } else {
      for (const LexiconRow& row : model.lexicon) {
        double sum = 0;
        for (double p : row.probs) sum += p;
        if (!row.probs.empty()) Add(row.word, sum / static_cast<double>(row.probs.size()));
      }
    }
  }
  double operator()(const std::string& word) const {
    auto it = weights_.find(word);
    return it == weights_.end() ? 0.0 : it->second;
  }
  const std::unordered_map<std::string, double>& all() const { return weights_; }

 private:
  void Add(const std::string& word, double weight) {
    if (weight > 0 && !word.starts_with("UNK")) weights_[word] += weight;
  }
  std::unordered_map<std::string, double> weights_;
};

// Whether the grammar's treebank split hyphenated words (see GrammarTokenConvention).
bool SplitsHyphens(const WordWeights& weights) {
  if (weights("-") == 0) return false;  // "-" would be an unknown word
  auto whole = Tokenizer::Create({.split_hyphens = false});
  auto split = Tokenizer::Create({.split_hyphens = true});
  if (!whole.ok() || !split.ok()) return false;
  size_t known = 0, broken = 0;
  for (const auto& [word, weight] : weights.all()) {
    ++known;
    if (word.size() < 3 || word.find('-') == std::string::npos || word.front() == '-' ||
        word.back() == '-') {
      continue;
    }
    // A word the plain tokenizer keeps whole and the splitting one breaks at a hyphen.
    if (whole->Tokenize(word).size() != 1) continue;
    const std::vector<std::string> parts = split->Tokenize(word);
    for (const std::string& part : parts) {
      if (part == "-") {
        ++broken;
        break;
      }
    }
  }
  return broken * 100 < known;
}

// Whether `parts` are `token` cut at its hyphens and nothing else: word, "-", word, ..., word.
bool SplitAtHyphensOnly(const std::string& token, const std::vector<std::string>& parts) {
  if (parts.size() < 3 || parts.size() % 2 == 0) return false;
  std::string joined;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool hyphen = parts[i] == "-";
    if (hyphen != (i % 2 == 1)) return false;
    joined += parts[i];
  }
  return joined == token;
}

bool IsDoubleQuote(const std::string& t) {
  return t == "\"" || t == "``" || t == "''" || t == "\u201C" || t == "\u201D" || t == "\u201E";
}

}  // namespace

TokenConvention ConventionOfStyle(TokenStyle style, bool split_hyphens) {
  TokenConvention convention;
  convention.quotes = style;
  convention.backtick = style == TokenStyle::kPtb;
  convention.escaped_square = style == TokenStyle::kPtb;
  convention.escaped_curly = true;
  convention.split_hyphens = split_hyphens;
  return convention;
}

TokenConvention GrammarTokenConvention(const BerkeleyModel& model) {
  const WordWeights w(model);
  TokenConvention convention;
  convention.quotes = w("\"") > w("``") + w("''") ? TokenStyle::kGum : TokenStyle::kPtb;
  convention.backtick = w("`") > 0 || w("'") == 0;
  convention.escaped_square = !(w("[") + w("]") > w("-LSB-") + w("-RSB-"));
  convention.escaped_curly = !(w("{") + w("}") > w("-LCB-") + w("-RCB-"));
  convention.split_hyphens = SplitsHyphens(w);
  return convention;
}

StatusOr<TokenConvention> ResolveTokenConvention(std::string_view token_style,
                                                 std::string_view hyphens,
                                                 const BerkeleyModel& model) {
  if (token_style != "auto" && token_style != "ptb" && token_style != "gum" &&
      token_style != "given") {
    return Status::Error("token style '" + std::string(token_style) +
                         "': expected auto, ptb, gum or given");
  }
  if (hyphens != "auto" && hyphens != "keep" && hyphens != "split") {
    return Status::Error("hyphens '" + std::string(hyphens) + "': expected auto, keep or split");
  }
  TokenConvention convention;
  if (token_style == "auto" || hyphens == "auto") convention = GrammarTokenConvention(model);
  if (token_style != "auto") {
    convention = ConventionOfStyle(token_style == "gum" ? TokenStyle::kGum : TokenStyle::kPtb,
                                   convention.split_hyphens);
    convention.rewrite = token_style != "given";
  }
  if (hyphens != "auto") convention.split_hyphens = hyphens == "split";
  convention.split_given_tokens = hyphens == "split";
  if (convention.split_hyphens) {
    const WordWeights weights(model);
    for (const auto& [word, weight] : weights.all()) {
      if (word.find('-') != std::string::npos) convention.whole_words.insert(word);
    }
  }
  return convention;
}

TokenizerOptions TokenizerOptionsFor(const TokenConvention& convention) {
  TokenizerOptions options;
  options.style = convention.quotes;
  options.split_hyphens = convention.split_hyphens;
  return options;
}

void ApplyTokenConvention(const TokenConvention& convention, std::vector<std::string>* tokens,
                          Tokenizer* splitter) {
  if (!convention.rewrite) {
    for (std::string& token : *tokens) {
      if (token == "(") token = "-LRB-";
      if (token == ")") token = "-RRB-";
    }
    return;
  }
  if (convention.split_hyphens && convention.split_given_tokens && splitter) {
    std::vector<std::string> split;
    split.reserve(tokens->size());
    for (std::string& token : *tokens) {
      if (token.size() >= 3 && token.front() != '-' && token.back() != '-' &&
          token.find('-') != std::string::npos && token.find("--") == std::string::npos &&
          convention.whole_words.count(token) == 0) {
        std::vector<std::string> parts = splitter->Tokenize(token);
        if (SplitAtHyphensOnly(token, parts)) {
          for (std::string& part : parts) split.push_back(std::move(part));
          continue;
        }
      }
      split.push_back(std::move(token));
    }
    *tokens = std::move(split);
  }
  const bool gum_quotes = convention.quotes == TokenStyle::kGum;
  int double_quotes = 0;  // before the current token
  for (std::string& token : *tokens) {
    if (IsDoubleQuote(token)) {
      if (gum_quotes) {
        token = "\"";
      } else if (token == "\u201C" || token == "\u201E") {
        token = "``";
      } else if (token == "\u201D") {
        token = "''";
      } else if (token == "\"") {
        token = double_quotes % 2 == 0 ? "``" : "''";
      }
      ++double_quotes;
    } else if (token == "(") {
      token = "-LRB-";
    } else if (token == ")") {
      token = "-RRB-";
    } else if (token == "[" || token == "-LSB-") {
      token = convention.escaped_square ? "-LSB-" : "[";
    } else if (token == "]" || token == "-RSB-") {
      token = convention.escaped_square ? "-RSB-" : "]";
    } else if (token == "{" || token == "-LCB-") {
      token = convention.escaped_curly ? "-LCB-" : "{";
    } else if (token == "}" || token == "-RCB-") {
      token = convention.escaped_curly ? "-RCB-" : "}";
    } else if (token == "`" || token == "\u2018") {
      token = convention.backtick ? "`" : "'";
    } else if (token == "\u2019") {
      token = "'";
    }
  }
}

bool LooksTokenized(std::string_view line, std::string* evidence) {
  static constexpr std::array<std::string_view, 8> kEscapes = {"-LRB-", "-RRB-", "-LSB-", "-RSB-",
                                                               "-LCB-", "-RCB-", "``",    "''"};
  static constexpr std::array<std::string_view, 7> kClitics = {"n't", "'s", "'re", "'ll",
                                                               "'ve", "'m", "'d"};
  std::vector<std::string_view> tokens;
  for (size_t i = 0; i < line.size();) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) tokens.push_back(line.substr(start, i - start));
  }
  for (size_t k = 0; k < tokens.size(); ++k) {
    for (std::string_view escape : kEscapes) {
      if (tokens[k] == escape) {
        *evidence = std::string(escape);
        return true;
      }
    }
    if (k == 0) continue;  // a clitic follows its word
    for (std::string_view clitic : kClitics) {
      if (tokens[k] == clitic) {
        *evidence = std::string(clitic);
        return true;
      }
    }
  }
  // "... the end ." : a sentence's final punctuation split off.
  std::string_view trimmed = line;
  while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\t')) {
    trimmed.remove_suffix(1);
  }
  if (tokens.size() >= 2 && trimmed.size() >= 2 &&
      (trimmed.back() == '.' || trimmed.back() == '?' || trimmed.back() == '!') &&
      (trimmed[trimmed.size() - 2] == ' ' || trimmed[trimmed.size() - 2] == '\t')) {
    *evidence = std::string("a space before the final '") + trimmed.back() + "'";
    return true;
  }
  return false;
}

}  // namespace cky
