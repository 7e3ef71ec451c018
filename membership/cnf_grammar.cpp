// Our plain-text CNF grammar format, read by ParseCnfGrammar and written by WriteCnfGrammar:
//
//   # Balanced parentheses, at least one pair.    <- '#' starts a comment, to the end of the line
//   start S                                        <- the start symbol (exactly one declaration)
//   S -> L R                                       <- binary rule: three nonterminal names
//   S -> L X
//   X -> S R
//   S -> S S
//   L -> '('                                       <- terminal rule: a quoted terminal
//   R -> ')'
//   T -> S                                         <- chain rule (optional; closed transitively)
//
// Names are whitespace-free tokens; a terminal is written between single quotes and may contain any
// character except whitespace (the quotes are the first and last characters of its token, so
// 'don't' is the terminal don't). Blank lines are ignored. Errors name the file and the line.
#include "membership/cnf_grammar.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "common/input_file.h"
#include "grammar_io/grammar_argument.h"
#include "lexicon/berkeley_lexicon.h"

namespace cky {
namespace {

std::vector<std::string_view> SplitWhitespace(std::string_view line) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t begin = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > begin) tokens.push_back(line.substr(begin, i - begin));
  }
  return tokens;
}

bool IsQuotedTerminal(std::string_view token) {
  return token.size() >= 3 && token.front() == '\'' && token.back() == '\'';
}

template <typename T>
void SortUnique(std::vector<T>* values) {
  std::sort(values->begin(), values->end());
  values->erase(std::unique(values->begin(), values->end()), values->end());
}

}  // namespace

int32_t CnfGrammar::FindNonterminal(std::string_view name) const {
  auto it = nonterminal_index_.find(std::string(name));
  return it == nonterminal_index_.end() ? -1 : it->second;
}

int32_t CnfGrammar::TerminalId(std::string_view word) const {
  auto it = terminal_index_.find(std::string(word));
  return it == terminal_index_.end() ? kUnknownTerminal : it->second;
}

std::vector<int32_t> CnfGrammar::Tokenize(std::string_view line) const {
  std::vector<int32_t> ids;
  for (std::string_view token : SplitWhitespace(line)) ids.push_back(TerminalId(token));
  return ids;
}

void CnfGrammar::Finish() {
  if (terminal_names.empty() || terminal_names[0] != "<unk>") {
    terminal_names.insert(terminal_names.begin(), "<unk>");
    terminal_parents.insert(terminal_parents.begin(), std::vector<int32_t>{});
  }
  terminal_parents.resize(terminal_names.size());
  for (auto& parents : terminal_parents) SortUnique(&parents);
  SortUnique(&binary_rules);

  // Transitive closure of the chain rules (Warshall on a boolean matrix; grammars have at most a
  // few hundred nonterminals).
  const int32_t n = num_nonterminals();
  if (!unary_closure.empty()) {
    std::vector<uint8_t> reach(static_cast<size_t>(n) * n, 0);
    for (const CnfUnaryRule& rule : unary_closure) reach[rule.parent * n + rule.child] = 1;
    for (int32_t k = 0; k < n; ++k) {
      for (int32_t i = 0; i < n; ++i) {
        if (!reach[i * n + k]) continue;
        for (int32_t j = 0; j < n; ++j) reach[i * n + j] |= reach[k * n + j];
      }
    }
    unary_closure.clear();
    for (int32_t i = 0; i < n; ++i) {
      for (int32_t j = 0; j < n; ++j) {
        if (i != j && reach[i * n + j]) unary_closure.push_back({i, j});
      }
    }
  }

  nonterminal_index_.clear();
  for (int32_t i = 0; i < n; ++i) nonterminal_index_.emplace(nonterminal_names[i], i);
  terminal_index_.clear();
  for (int32_t i = 1; i < num_terminals(); ++i) terminal_index_.emplace(terminal_names[i], i);
}

StatusOr<CnfGrammar> ParseCnfGrammar(std::istream& in, const std::string& file_name) {
  CnfGrammar grammar;
  grammar.terminal_names.push_back("<unk>");
  grammar.terminal_parents.emplace_back();
  std::unordered_map<std::string, int32_t> nonterminals;
  std::unordered_map<std::string, int32_t> terminals;
  auto nonterminal = [&](std::string_view name) {
    auto [it, inserted] =
        nonterminals.emplace(std::string(name), static_cast<int32_t>(nonterminals.size()));
    if (inserted) grammar.nonterminal_names.emplace_back(name);
    return it->second;
  };
  std::string start_name;
  long start_line = 0;
  std::string line;
  long line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    std::string_view text = line;
    if (size_t hash = text.find('#'); hash != std::string_view::npos) {
      // A '#' inside a quoted terminal is part of the terminal, not a comment.
      bool in_terminal = false;
      for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\'' && (i == 0 || std::isspace(static_cast<unsigned char>(text[i - 1])))) {
          in_terminal = true;
        } else if (in_terminal && std::isspace(static_cast<unsigned char>(text[i]))) {
          in_terminal = false;
        } else if (!in_terminal && text[i] == '#') {
          text = text.substr(0, i);
          break;
        }
      }
    }
    std::vector<std::string_view> tokens = SplitWhitespace(text);
    if (tokens.empty()) continue;
    if (tokens[0] == "start") {
      if (tokens.size() != 2 || IsQuotedTerminal(tokens[1])) {
        return LineError(file_name, line_number, "expected 'start NAME'");
      }
      if (!start_name.empty()) {
        return LineError(
            file_name, line_number,
            "second start declaration (the first is on line " + std::to_string(start_line) + ")");
      }
      start_name = tokens[1];
      start_line = line_number;
      continue;
    }
    if (tokens.size() < 3 || tokens[1] != "->") {
      return LineError(file_name, line_number,
                       "expected 'A -> B C', 'A -> 'a'', 'A -> B' or 'start A', got '" +
                           std::string(text) + "'");
    }
    if (IsQuotedTerminal(tokens[0]) || tokens[0].front() == '\'') {
      return LineError(file_name, line_number, "the left-hand side must be a nonterminal");
    }
    for (size_t i = 2; i < tokens.size(); ++i) {
      if (tokens[i].front() == '\'' && !IsQuotedTerminal(tokens[i])) {
        return LineError(file_name, line_number,
                         "malformed terminal " + std::string(tokens[i]) + " (write 'word')");
      }
    }
    const int32_t parent = nonterminal(tokens[0]);
    if (tokens.size() == 3 && IsQuotedTerminal(tokens[2])) {
      std::string word(tokens[2].substr(1, tokens[2].size() - 2));
      auto [it, inserted] = terminals.emplace(word, grammar.num_terminals());
      if (inserted) {
        grammar.terminal_names.push_back(word);
        grammar.terminal_parents.emplace_back();
      }
      grammar.terminal_parents[it->second].push_back(parent);
    } else if (tokens.size() == 3) {
      const int32_t child = nonterminal(tokens[2]);
      if (child != parent) grammar.unary_closure.push_back({parent, child});
    } else if (tokens.size() == 4 && !IsQuotedTerminal(tokens[2]) && !IsQuotedTerminal(tokens[3])) {
      const int32_t left = nonterminal(tokens[2]);
      const int32_t right = nonterminal(tokens[3]);
      grammar.binary_rules.push_back({parent, left, right});
    } else {
      return LineError(file_name, line_number,
                       "a rule has one terminal or one or two nonterminals on its right-hand side "
                       "(Chomsky normal form)");
    }
  }
  if (in.bad()) return Status::Error(file_name + ": read error");
  if (start_name.empty()) {
    return Status::Error(file_name + ": no 'start NAME' declaration");
  }
  auto it = nonterminals.find(start_name);
  if (it == nonterminals.end()) {
    return LineError(file_name, start_line, "start symbol '" + start_name + "' appears in no rule");
  }
  grammar.start = it->second;
  grammar.Finish();
  return grammar;
}

StatusOr<CnfGrammar> ReadCnfGrammarFile(const std::string& path) {
  auto file = InputFile::Open(path);
  if (!file.ok()) return file.status();
  auto grammar = ParseCnfGrammar((*file)->stream(), path);
  CKY_RETURN_IF_ERROR((*file)->ReadStatus());  // damaged or truncated before the grammar's end
  return grammar;
}

void WriteCnfGrammar(const CnfGrammar& grammar, std::ostream& out) {
  const auto& names = grammar.nonterminal_names;
  out << "# CNF grammar: " << grammar.num_nonterminals() << " nonterminals, "
      << grammar.binary_rules.size() << " binary rules, " << grammar.num_terminals() - 1
      << " terminals\n";
  out << "start " << names[grammar.start] << "\n";
  for (const CnfBinaryRule& rule : grammar.binary_rules) {
    out << names[rule.parent] << " -> " << names[rule.left] << " " << names[rule.right] << "\n";
  }
  for (const CnfUnaryRule& rule : grammar.unary_closure) {
    out << names[rule.parent] << " -> " << names[rule.child] << "\n";
  }
  for (int32_t t = 1; t < grammar.num_terminals(); ++t) {
    for (int32_t parent : grammar.terminal_parents[t]) {
      out << names[parent] << " -> '" << grammar.terminal_names[t] << "'\n";
    }
  }
}

namespace {

// LexiconTerminalParents for a model with the lexicon's counts (a .gr file or a cache of one),
// which has no rows: the tags the parser's exact scorer (lexicon/berkeley_lexicon.h, built as
// lexicon/lexicon.h builds it) gives a positive score, for each seen word and, for the unknown
// terminal, each signature. False when the scorer cannot be built.
bool CountsTerminalParents(const BerkeleyModel& model, CnfGrammar* grammar) {
  const BerkeleyLexiconCounts& counts = *model.lexicon_counts;
  auto lexicon = BerkeleyLexicon::Build(model.grammar, counts);
  if (!lexicon.ok()) return false;
  const Grammar& g = model.grammar;
  std::vector<double> scores;
  auto positive_tags = [&](const std::string& word, bool is_signature,
                           std::vector<int32_t>* parents) {
    for (int32_t s = 0; s < g.num_symbols(); ++s) {
      if (s >= static_cast<int32_t>(counts.lexical_symbols.size()) || !counts.lexical_symbols[s]) {
        continue;
      }
      scores.assign(g.symbol_num_substates[s], 0.0);
      lexicon->ScoreTag(word, 0, s, is_signature, scores);
      if (std::any_of(scores.begin(), scores.end(), [](double p) { return p > 0.0; })) {
        parents->push_back(s);
      }
    }
  };
  std::unordered_map<std::string, int32_t> index;
  for (const BerkeleyLexiconCounts::Entry& entry : counts.seen) {
    if (!index.emplace(entry.word, grammar->num_terminals()).second) continue;
    grammar->terminal_names.push_back(entry.word);
    grammar->terminal_parents.emplace_back();
    positive_tags(entry.word, false, &grammar->terminal_parents.back());
  }
  std::unordered_map<std::string, bool> signatures;
  for (const BerkeleyLexiconCounts::Entry& entry : counts.unseen) {
    if (!signatures.emplace(entry.word, true).second) continue;
    positive_tags(entry.word, true, &grammar->terminal_parents[CnfGrammar::kUnknownTerminal]);
  }
  return true;
}

}  // namespace

void LexiconTerminalParents(const BerkeleyModel& model, CnfGrammar* grammar) {
  grammar->terminal_names.assign(1, "<unk>");
  grammar->terminal_parents.assign(1, {});
  if (model.lexicon_counts && CountsTerminalParents(model, grammar)) return;
  std::unordered_map<std::string, int32_t> index;
  for (const LexiconRow& row : model.lexicon) {
    const bool positive =
        std::any_of(row.probs.begin(), row.probs.end(), [](double p) { return p > 0.0; });
    if (!positive) continue;
    if (row.word.starts_with("UNK")) {
      grammar->terminal_parents[CnfGrammar::kUnknownTerminal].push_back(row.symbol);
      continue;
    }
    auto [it, inserted] = index.emplace(row.word, grammar->num_terminals());
    if (inserted) {
      grammar->terminal_names.push_back(row.word);
      grammar->terminal_parents.emplace_back();
    }
    grammar->terminal_parents[it->second].push_back(row.symbol);
  }
}

CnfGrammar ProjectBerkeleyModel(const BerkeleyModel& model) {
  const Grammar& g = model.grammar;
  CnfGrammar cnf;
  cnf.nonterminal_names = g.symbol_names;
  cnf.start = g.state_symbol[Grammar::kRootState];
  for (int64_t r = 0; r < g.num_binary_rules(); ++r) {
    if (std::isinf(g.binary_log_prob[r])) continue;  // probability 0
    cnf.binary_rules.push_back({g.state_symbol[g.binary_parent[r]],
                                g.state_symbol[g.binary_left[r]],
                                g.state_symbol[g.binary_right[r]]});
  }
  for (int64_t r = 0; r < g.num_unary_rules(); ++r) {
    if (std::isinf(g.unary_log_prob[r])) continue;
    const int32_t parent = g.state_symbol[g.unary_parent[r]];
    const int32_t child = g.state_symbol[g.unary_child[r]];
    if (parent != child) cnf.unary_closure.push_back({parent, child});
  }
  LexiconTerminalParents(model, &cnf);
  cnf.Finish();
  return cnf;
}

StatusOr<CnfGrammar> LoadRecognitionGrammar(const std::string& spec) {
  // A file in no Berkeley format (.gr, cache, text-export prefix) is in ours.
  if (spec == "-" || (FileExists(spec) && DetectGrammarFormat(spec) == GrammarFormat::kUnknown)) {
    return ReadCnfGrammarFile(spec);
  }
  // Every rule, whatever the format: the projection keeps any rule with a nonzero probability.
  auto model = LoadGrammarArgument(spec, {.min_rule_prob = 0.0});
  if (!model.ok()) return model.status();
  return ProjectBerkeleyModel(*model);
}

CnfGrammar RandomCnfGrammar(const RandomCnfGrammarOptions& options) {
  CnfGrammar grammar;
  const int32_t n = std::max<int32_t>(1, options.nonterminals);
  std::mt19937_64 rng(options.seed);
  grammar.nonterminal_names.push_back("S");
  for (int32_t i = 1; i < n; ++i) grammar.nonterminal_names.push_back("N" + std::to_string(i));
  grammar.start = 0;
  const int64_t possible = static_cast<int64_t>(n) * n * n;
  const int64_t wanted = std::min(options.rules, possible);
  // Distinct rules drawn uniformly: rejection when sparse, a shuffled prefix when dense.
  std::vector<int64_t> codes;
  if (wanted * 2 <= possible) {
    std::set<int64_t> chosen;
    std::uniform_int_distribution<int64_t> any(0, possible - 1);
    while (static_cast<int64_t>(chosen.size()) < wanted) chosen.insert(any(rng));
    codes.assign(chosen.begin(), chosen.end());
  } else {
    codes.resize(possible);
    for (int64_t i = 0; i < possible; ++i) codes[i] = i;
    std::shuffle(codes.begin(), codes.end(), rng);
    codes.resize(wanted);
  }
  for (int64_t code : codes) {
    grammar.binary_rules.push_back({static_cast<int32_t>(code / (int64_t{n} * n)),
                                    static_cast<int32_t>(code / n % n),
                                    static_cast<int32_t>(code % n)});
  }
  grammar.terminal_names.push_back("<unk>");
  grammar.terminal_parents.emplace_back();
  std::uniform_int_distribution<int32_t> any_nonterminal(0, n - 1);
  std::uniform_int_distribution<int32_t> parent_count(1, std::min(3, n));
  for (int32_t t = 0; t < std::max(1, options.terminals); ++t) {
    grammar.terminal_names.push_back("t" + std::to_string(t));
    std::vector<int32_t> parents;
    for (int32_t k = parent_count(rng); k > 0; --k) parents.push_back(any_nonterminal(rng));
    grammar.terminal_parents.push_back(std::move(parents));
  }
  grammar.Finish();
  return grammar;
}

namespace {

// Samples derivations of exact lengths. derivable_[l][A]: A derives some string of length l
// without a chain rule at the top; reachable_[l][A]: with chain rules.
class DerivationSampler {
 public:
  DerivationSampler(const CnfGrammar& grammar, int32_t max_length) : g_(grammar) {
    const int32_t n = g_.num_nonterminals();
    rules_of_.resize(n);
    for (size_t r = 0; r < g_.binary_rules.size(); ++r) {
      rules_of_[g_.binary_rules[r].parent].push_back(static_cast<int32_t>(r));
    }
    terminals_of_.resize(n);
    for (int32_t t = 1; t < g_.num_terminals(); ++t) {
      for (int32_t a : g_.terminal_parents[t]) terminals_of_[a].push_back(t);
    }
    chain_children_.resize(n);
    for (int32_t a = 0; a < n; ++a) chain_children_[a].push_back(a);
    for (const CnfUnaryRule& u : g_.unary_closure) chain_children_[u.parent].push_back(u.child);
    direct_.assign(max_length + 1, std::vector<uint8_t>(n, 0));
    reach_.assign(max_length + 1, std::vector<uint8_t>(n, 0));
    for (int32_t l = 1; l <= max_length; ++l) {
      for (int32_t a = 0; a < n; ++a) {
        if (l == 1) {
          direct_[l][a] = !terminals_of_[a].empty();
          continue;
        }
        for (int32_t r : rules_of_[a]) {
          const CnfBinaryRule& rule = g_.binary_rules[r];
          for (int32_t m = 1; m < l && !direct_[l][a]; ++m) {
            direct_[l][a] = reach_[m][rule.left] && reach_[l - m][rule.right];
          }
          if (direct_[l][a]) break;
        }
      }
      for (int32_t a = 0; a < n; ++a) {
        for (int32_t c : chain_children_[a]) reach_[l][a] |= direct_[l][c];
      }
    }
  }

  bool CanDerive(int32_t symbol, int32_t length) const { return reach_[length][symbol]; }

  // Appends a string of `length` terminals derived from `symbol` (CanDerive must hold).
  void Sample(int32_t symbol, int32_t length, std::mt19937_64& rng, std::vector<int32_t>* out) {
    std::vector<int32_t> heads;
    for (int32_t c : chain_children_[symbol]) {
      if (direct_[length][c]) heads.push_back(c);
    }
    const int32_t head = heads[rng() % heads.size()];
    if (length == 1) {
      const auto& words = terminals_of_[head];
      out->push_back(words[rng() % words.size()]);
      return;
    }
    const auto& rules = rules_of_[head];
    // Rejection first (dense grammars), then enumeration of the feasible choices.
    for (int attempt = 0; attempt < 64; ++attempt) {
      const CnfBinaryRule& rule = g_.binary_rules[rules[rng() % rules.size()]];
      const int32_t m = 1 + static_cast<int32_t>(rng() % (length - 1));
      if (reach_[m][rule.left] && reach_[length - m][rule.right]) {
        Sample(rule.left, m, rng, out);
        Sample(rule.right, length - m, rng, out);
        return;
      }
    }
    std::vector<std::pair<int32_t, int32_t>> feasible;
    for (int32_t r : rules) {
      const CnfBinaryRule& rule = g_.binary_rules[r];
      for (int32_t m = 1; m < length; ++m) {
        if (reach_[m][rule.left] && reach_[length - m][rule.right]) feasible.push_back({r, m});
      }
    }
    auto [r, m] = feasible[rng() % feasible.size()];
    Sample(g_.binary_rules[r].left, m, rng, out);
    Sample(g_.binary_rules[r].right, length - m, rng, out);
  }

 private:
  const CnfGrammar& g_;
  std::vector<std::vector<int32_t>> rules_of_, terminals_of_, chain_children_;
  std::vector<std::vector<uint8_t>> direct_, reach_;
};

}  // namespace

std::vector<std::vector<int32_t>> RandomStrings(const CnfGrammar& grammar,
                                                const RandomStringOptions& options) {
  std::mt19937_64 rng(options.seed);
  const int32_t min_length = std::max(1, options.min_length);
  const int32_t max_length = std::max(min_length, options.max_length);
  DerivationSampler sampler(grammar, max_length);
  std::uniform_int_distribution<int32_t> length_of(min_length, max_length);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int32_t num_words = grammar.num_terminals() - 1;
  std::vector<std::vector<int32_t>> strings;
  strings.reserve(options.count);
  for (int64_t s = 0; s < options.count; ++s) {
    const int32_t length = length_of(rng);
    std::vector<int32_t> string;
    string.reserve(length);
    if (unit(rng) < options.member_fraction && sampler.CanDerive(grammar.start, length)) {
      sampler.Sample(grammar.start, length, rng, &string);
    } else if (num_words > 0) {
      for (int32_t i = 0; i < length; ++i)
        string.push_back(1 + static_cast<int32_t>(rng() % num_words));
    } else {
      string.assign(length, CnfGrammar::kUnknownTerminal);
    }
    strings.push_back(std::move(string));
  }
  return strings;
}

std::string JoinTerminals(const CnfGrammar& grammar, std::span<const int32_t> string) {
  std::string text;
  for (size_t i = 0; i < string.size(); ++i) {
    if (i) text += ' ';
    text += grammar.terminal_names[string[i]];
  }
  return text;
}

}  // namespace cky
