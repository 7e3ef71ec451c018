#include "grammar_io/berkeley_model.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <istream>
#include <memory>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/input_file.h"
#include "common/output_file.h"
#include "grammar_io/berkeley_gr.h"

namespace cky {
namespace {

namespace fs = std::filesystem;

// Resolves PREFIX.ext or PREFIX.ext.gz; empty when neither exists.
std::string FindPart(const std::string& prefix, const std::string& ext) {
  if (FileExists(prefix + ext)) return prefix + ext;
  if (FileExists(prefix + ext + ".gz")) return prefix + ext + ".gz";
  return "";
}

// Calls `on_line(line_view, line_number)` for every line of a stream; `name` names it in errors.
Status ForEachLine(std::istream& stream, const std::string& name,
                   const std::function<Status(std::string_view, long)>& on_line) {
  std::string line;
  long number = 0;
  while (std::getline(stream, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    CKY_RETURN_IF_ERROR(on_line(line, number));
  }
  if (stream.bad())
    return Status::Error(name + ": read error after line " + std::to_string(number));
  return Status();
}

// The same for a (possibly gzipped) file.
Status ForEachLine(const std::string& path,
                   const std::function<Status(std::string_view, long)>& on_line) {
  auto in = InputFile::Open(path);
  if (!in.ok()) return in.status();
  const Status status = ForEachLine((*in)->stream(), path, on_line);
  // A line's own error comes first; else why reading stopped early ("truncated", "damaged").
  if (!status.ok() && !(*in)->stream().bad()) return status;
  CKY_RETURN_IF_ERROR((*in)->ReadStatus());
  return status;
}

// A part of an export: an open stream (named for error messages), or a file path to open.
struct TextSource {
  std::istream* stream = nullptr;
  std::string name;  // the path when stream is null
};

Status ForEachLine(const TextSource& source,
                   const std::function<Status(std::string_view, long)>& on_line) {
  if (source.stream) return ForEachLine(*source.stream, source.name, on_line);
  return ForEachLine(source.name, on_line);
}

// Whitespace tokenizer over a line.
class Fields {
 public:
  explicit Fields(std::string_view line) : rest_(line) {}
  bool Next(std::string_view* field) {
    size_t begin = rest_.find_first_not_of(" \t");
    if (begin == std::string_view::npos) return false;
    size_t end = rest_.find_first_of(" \t", begin);
    if (end == std::string_view::npos) end = rest_.size();
    *field = rest_.substr(begin, end - begin);
    rest_ = rest_.substr(end);
    return true;
  }
  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

bool ParseProbability(std::string_view text, double* value) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && ptr == text.data() + text.size() && *value >= 0 &&
         *value <= 1.0 + 1e-9;
}

// What the files of one export must agree on, checked as they are read so that a disagreement is
// an error at its file and line (a mismatch found later, when the grammar is built, cannot say
// where it came from).
struct ExportCheck {
  // Substate counts the .splits or .numstates file declares, and that file's name.
  std::unordered_map<std::string, int32_t> declared;
  std::string declared_in;
  std::unordered_set<std::string> rule_symbols;  // symbols that occur in a rule
  std::string rules_in;                          // the rule files, for messages
  int64_t rules = 0;                             // rule lines read
};

bool ParseState(GrammarBuilder& builder, std::string_view text, std::string_view* name,
                int32_t* symbol, int32_t* sub) {
  if (!SplitStateName(text, name, sub) || *sub >= kMaxSubstatesPerSymbol) return false;
  *symbol = builder.AddSymbol(*name);
  return true;
}

// A grammar without rules parses nothing: an error, not "(())" for every sentence.
Status NoRules(const ExportCheck& check) {
  if (check.rules > 0) return Status();
  return Status::Error(check.rules_in + ": no rules (an empty grammar file)");
}

// "substate 99 of VP, which has 2 substates in g.splits", or "" when `sub` is declared (or the
// symbol's count is not).
std::string SubstateOutOfRange(const ExportCheck& check, std::string_view name, int32_t count) {
  auto it = check.declared.find(std::string(name));
  if (it == check.declared.end() || count <= it->second) return "";
  return "substate " + std::to_string(count - 1) + " of " + std::string(name) + ", which has " +
         std::to_string(it->second) + (it->second == 1 ? " substate" : " substates") + " in " +
         check.declared_in;
}

// Counts the leaves of a split tree "(0 (0 0 1) (1 2))": numbers not directly after '('.
int32_t CountSplitLeaves(std::string_view tree) {
  int32_t leaves = 0;
  bool after_open = false;
  for (size_t i = 0; i < tree.size();) {
    char c = tree[i];
    if (c == '(') {
      after_open = true;
      ++i;
    } else if (c >= '0' && c <= '9') {
      while (i < tree.size() && tree[i] >= '0' && tree[i] <= '9') ++i;
      if (!after_open) ++leaves;
      after_open = false;
    } else {
      ++i;
    }
  }
  return leaves;
}

// Binary or unary rule lines. `arrow` says whether "->" separates parent and children.
Status ReadRuleFile(const TextSource& source, bool arrow, int expected_children,
                    const LoadOptions& options, GrammarBuilder& builder, ExportCheck* check) {
  const std::string& path = source.name;
  check->rules_in += (check->rules_in.empty() ? "" : " and ") + path;
  return ForEachLine(source, [&](std::string_view line, long number) -> Status {
    Fields fields(line);
    std::string_view tokens[5];
    int count = 0;
    std::string_view token;
    while (count < 5 && fields.Next(&token)) tokens[count++] = token;
    if (count == 0) return Status();  // blank line
    if (fields.Next(&token)) return LineError(path, number, "too many fields in rule line");
    int first_child = 1;
    if (arrow) {
      if (count < 2 || tokens[1] != "->")
        return LineError(path, number, "expected 'PARENT -> ...'");
      first_child = 2;
    }
    int children = count - first_child - 1;
    if (children < 1 || children > 2 || (expected_children && children != expected_children)) {
      return LineError(path, number,
                       "expected a parent, " +
                           std::string(expected_children == 1   ? "one child"
                                       : expected_children == 2 ? "two children"
                                                                : "one or two children") +
                           " and a probability");
    }
    double prob;
    if (!ParseProbability(tokens[count - 1], &prob)) {
      return LineError(path, number, "bad probability '" + std::string(tokens[count - 1]) + "'");
    }
    int32_t sym[3], sub[3];
    std::string_view names[3] = {tokens[0], tokens[first_child],
                                 children == 2 ? tokens[first_child + 1] : std::string_view()};
    for (int i = 0; i <= children; ++i) {
      std::string_view name;
      if (!ParseState(builder, names[i], &name, &sym[i], &sub[i])) {
        return LineError(
            path, number,
            "bad state name '" + std::string(names[i]) + "' (expected SYMBOL_substate)");
      }
      if (std::string why = SubstateOutOfRange(*check, name, sub[i] + 1); !why.empty()) {
        return LineError(path, number, why);
      }
      check->rule_symbols.emplace(name);
    }
    ++check->rules;
    if (children == 2) {
      if (prob >= options.min_binary_prob) {
        builder.AddBinary(sym[0], sub[0], sym[1], sub[1], sym[2], sub[2], prob);
      } else {
        // Still record that these substates exist.
        builder.SetNumSubstates(sym[0], sub[0] + 1);
        builder.SetNumSubstates(sym[1], sub[1] + 1);
        builder.SetNumSubstates(sym[2], sub[2] + 1);
      }
    } else {
      builder.AddUnary(sym[0], sub[0], sym[1], sub[1], prob);
    }
    return Status();
  });
}

// .splits / .hierarchy lines: TAG<TAB>(tree), and .numstates lines: TAG<TAB>n.
enum class SplitFileKind {
  kSplitTree,          // .splits: the tree's leaves are the substates
  kHierarchyTreeOnly,  // DumpGrammar's .hierarchy: kept as text; .numstates gives the counts
  kNumStates,          // .numstates
};

Status ReadSplitFile(const TextSource& source, SplitFileKind kind, GrammarBuilder& builder,
                     ExportCheck* check) {
  const std::string& path = source.name;
  const bool numstates = kind == SplitFileKind::kNumStates;
  if (kind != SplitFileKind::kHierarchyTreeOnly) check->declared_in = path;
  return ForEachLine(source, [&](std::string_view line, long number) -> Status {
    Fields fields(line);
    std::string_view tag;
    if (!fields.Next(&tag)) return Status();
    std::string_view rest = fields.rest();
    size_t begin = rest.find_first_not_of(" \t");
    if (begin == std::string_view::npos) return LineError(path, number, "missing value after tag");
    rest = rest.substr(begin);
    int32_t symbol = builder.AddSymbol(tag);
    if (numstates) {
      int32_t count;
      auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), count);
      if (ec != std::errc() || count < 1 || count > kMaxSubstatesPerSymbol) {
        return LineError(path, number, "bad substate count");
      }
      builder.SetNumSubstates(symbol, count);
      check->declared[std::string(tag)] = count;
    } else {
      int32_t leaves = CountSplitLeaves(rest);
      if (leaves < 1) return LineError(path, number, "split tree has no leaves");
      if (leaves > kMaxSubstatesPerSymbol) return LineError(path, number, "split tree too large");
      // A projected grammar's hierarchy is the original's, with more leaves than substates.
      if (kind == SplitFileKind::kSplitTree) {
        builder.SetNumSubstates(symbol, leaves);
        check->declared[std::string(tag)] = leaves;
      }
      builder.SetSplitTree(symbol, std::string(rest));
    }
    return Status();
  });
}

struct RawLexiconRow {
  int32_t symbol;
  std::string word;
  std::vector<double> probs;
  long line = 0;  // in the .lexicon file
};

Status ReadLexiconFile(const TextSource& source, GrammarBuilder& builder,
                       std::vector<RawLexiconRow>* rows, const ExportCheck& check) {
  const std::string& path = source.name;
  return ForEachLine(source, [&](std::string_view line, long number) -> Status {
    Fields fields(line);
    std::string_view tag, word;
    if (!fields.Next(&tag)) return Status();
    if (!fields.Next(&word)) return LineError(path, number, "expected 'TAG word [p0, p1, ...]'");
    // A row for a tag no rule uses could never be part of a tree: a misspelt tag, or a lexicon of
    // another grammar.
    if (check.rule_symbols.count(std::string(tag)) == 0) {
      return LineError(path, number,
                       "tag '" + std::string(tag) + "' occurs in no rule of " + check.rules_in);
    }
    std::string_view rest = fields.rest();
    size_t open = rest.find('[');
    size_t close = rest.rfind(']');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open ||
        rest.substr(0, open).find_first_not_of(" \t") != std::string_view::npos) {
      return LineError(path, number, "expected a bracketed list of probabilities after the word");
    }
    RawLexiconRow row{builder.AddSymbol(tag), std::string(word), {}, number};
    std::string_view list = rest.substr(open + 1, close - open - 1);
    while (!list.empty()) {
      size_t comma = list.find(',');
      std::string_view item = list.substr(0, comma);
      size_t b = item.find_first_not_of(" \t");
      size_t e = item.find_last_not_of(" \t");
      if (b == std::string_view::npos) return LineError(path, number, "empty probability");
      double p;
      if (!ParseProbability(item.substr(b, e - b + 1), &p)) {
        return LineError(path, number, "bad probability '" + std::string(item) + "'");
      }
      row.probs.push_back(p);
      if (comma == std::string_view::npos) break;
      list = list.substr(comma + 1);
    }
    if (row.probs.empty()) return LineError(path, number, "empty probability list");
    const int32_t count = static_cast<int32_t>(row.probs.size());
    if (std::string why = SubstateOutOfRange(check, tag, count); !why.empty()) {
      return LineError(path, number, std::to_string(count) + " probabilities: " + why);
    }
    builder.SetNumSubstates(row.symbol, count);
    rows->push_back(std::move(row));
    return Status();
  });
}

Status ReadWordsFile(const TextSource& source, std::vector<std::string>* words) {
  return ForEachLine(source, [&](std::string_view line, long) -> Status {
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string_view::npos) return Status();
    size_t e = line.find_last_not_of(" \t");
    words->emplace_back(line.substr(b, e - b + 1));
    return Status();
  });
}

// Finishes the builder and maps lexicon rows to the final symbol ids. Fails, naming the row's file
// and line, when a row does not hold one probability per substate of its tag.
StatusOr<BerkeleyModel> Assemble(GrammarBuilder& builder, std::vector<RawLexiconRow> raw_rows,
                                 std::vector<std::string> words, const ExportCheck& check,
                                 const std::string& lexicon_path) {
  BerkeleyModel model;
  std::vector<int32_t> final_ids;
  model.grammar = builder.Finish(&final_ids);
  model.lexicon.reserve(raw_rows.size());
  for (RawLexiconRow& row : raw_rows) {
    const int32_t symbol = final_ids[row.symbol];
    const int32_t substates = model.grammar.symbol_num_substates[symbol];
    if (static_cast<int32_t>(row.probs.size()) != substates) {
      return LineError(lexicon_path, row.line,
                       std::to_string(row.probs.size()) + " probabilities for " +
                           model.grammar.symbol_names[symbol] + ", which has " +
                           std::to_string(substates) + " substates in the grammar");
    }
    model.lexicon.push_back({symbol, std::move(row.word), std::move(row.probs)});
  }
  model.known_words = std::move(words);
  return model;
}

// Files that make up a text export, in the order they must be read (sizes before rules).
struct ExportParts {
  std::string splits, numstates, binary, unary, grammar, lexicon, words;
};

Status Missing(const std::string& prefix, const std::string& ext) {
  return Status::Error("grammar file " + prefix + ext + " (or " + prefix + ext + ".gz) not found");
}

// --- binary cache ---------------------------------------------------------------------------

constexpr char kCacheMagic[8] = {'C', 'K', 'Y', 'M', 'O', 'D', 'E', 'L'};
// 3: lexicon counts and .gr settings (2: projected DumpGrammar exports such as wsj_1 take their
// substate counts from .numstates; older caches may hold wrong counts). 4: closed sum-product
// unaries; 5: base unaries; 6: a checksum at the end.
constexpr uint32_t kCacheVersion = 6;
// Version 5 is version 6 without the checksum: read only when asked for (cky convert), to turn it
// into version 6.
constexpr uint32_t kUncheckedCacheVersion = 5;
// The checksum: XXH3's 128-bit hash of every byte before it, low half first, little-endian. It
// catches damage (a flipped bit, a torn write); it is no signature: a private cache directory
// keeps others' files out (CacheDirectory below).
constexpr size_t kChecksumBytes = 16;
constexpr size_t kCacheHeaderBytes = sizeof(kCacheMagic) + sizeof(uint32_t);

std::string Checksum(std::string_view bytes) {
  const XXH128_hash_t hash = XXH3_128bits(bytes.data(), bytes.size());
  std::string out(kChecksumBytes, '\0');
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<char>((hash.low64 >> (8 * i)) & 0xff);
    out[8 + i] = static_cast<char>((hash.high64 >> (8 * i)) & 0xff);
  }
  return out;
}

std::string HexHash(const XXH128_hash_t& hash) {
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(hash.high64),
                static_cast<unsigned long long>(hash.low64));
  return hex;
}

class CacheWriter {
 public:
  explicit CacheWriter(std::ostream& out) : out_(out) {}
  template <typename T>
  void Pod(const T& value) {
    out_.write(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  template <typename T>
  void Vector(const std::vector<T>& values) {
    Pod<uint64_t>(values.size());
    out_.write(reinterpret_cast<const char*>(values.data()),
               static_cast<std::streamsize>(values.size() * sizeof(T)));
  }
  void String(const std::string& text) {
    Pod<uint64_t>(text.size());
    out_.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  void Strings(const std::vector<std::string>& texts) {
    Pod<uint64_t>(texts.size());
    for (const std::string& t : texts) String(t);
  }

 private:
  std::ostream& out_;
};

// Reads from a memory buffer; every read is bounds-checked so a truncated file fails cleanly.
class CacheReader {
 public:
  explicit CacheReader(std::string_view data) : data_(data) {}
  bool ok() const { return ok_; }
  template <typename T>
  T Pod() {
    T value{};
    if (!Take(sizeof(T))) return value;
    std::memcpy(&value, data_.data() + pos_ - sizeof(T), sizeof(T));
    return value;
  }
  template <typename T>
  std::vector<T> Vector() {
    uint64_t n = Pod<uint64_t>();
    std::vector<T> values;
    if (!ok_ || n > (data_.size() - pos_) / sizeof(T)) {
      ok_ = false;
      return values;
    }
    values.resize(n);
    // An empty vector's data() may be null, and memcpy's pointers must never be.
    if (n > 0) std::memcpy(values.data(), data_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return values;
  }
  std::string String() {
    uint64_t n = Pod<uint64_t>();
    if (!ok_ || n > data_.size() - pos_) {
      ok_ = false;
      return {};
    }
    std::string text(data_.substr(pos_, n));
    pos_ += n;
    return text;
  }
  std::vector<std::string> Strings() {
    uint64_t n = Pod<uint64_t>();
    std::vector<std::string> texts;
    if (!ok_ || n > data_.size() - pos_) {
      ok_ = false;
      return texts;
    }
    texts.reserve(n);
    for (uint64_t i = 0; i < n && ok_; ++i) texts.push_back(String());
    return texts;
  }
  bool AtEnd() const { return pos_ == data_.size(); }

 private:
  bool Take(size_t n) {
    if (!ok_ || n > data_.size() - pos_) {
      ok_ = false;
      return false;
    }
    pos_ += n;
    return true;
  }
  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Where caches live: $XDG_CACHE_HOME/cky, else ~/.cache/cky ($HOME, else the home directory of
// the user's passwd entry). Never a shared directory such as /tmp, where another user could plant
// a cache: with no home there is no cache ("").
std::string CacheDirectory() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/cky";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/cky";
  if (const passwd* entry = ::getpwuid(::geteuid()); entry && entry->pw_dir && *entry->pw_dir) {
    return std::string(entry->pw_dir) + "/.cache/cky";
  }
  return "";
}

// Makes the cache directory (its parents as usual, itself 0700) or checks the one there: a
// directory, not a link, owned by this user and writable by no one else. Returns why it cannot be
// used, or "".
std::string PrepareCacheDirectory(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(fs::path(dir).parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return dir + ": cannot create the cache directory: " + std::strerror(errno);
  }
  struct stat info {};
  if (::lstat(dir.c_str(), &info) != 0) return dir + ": " + std::strerror(errno);
  if (!S_ISDIR(info.st_mode)) return dir + ": not a directory (a link or a file)";
  if (info.st_uid != ::geteuid()) return dir + ": owned by another user";
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return dir + ": others may write to it (chmod 700 it to use it)";
  }
  return "";
}

// The XXH3 128-bit hash of a file's bytes, in hex; empty when it cannot be read.
std::string FileHash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> state(XXH3_createState(),
                                                                        XXH3_freeState);
  XXH3_128bits_reset(state.get());
  std::vector<char> buffer(1 << 16);
  while (in.read(buffer.data(), buffer.size()) || in.gcount() > 0) {
    XXH3_128bits_update(state.get(), buffer.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return "";
  return HexHash(XXH3_128bits_digest(state.get()));
}

// The grammar text files a text export `prefix` consists of.
std::vector<std::string> SourceParts(const std::string& prefix) {
  std::vector<std::string> parts;
  for (const char* ext : {".grammar", ".lexicon", ".splits", ".words", ".binary", ".unary",
                          ".numstates", ".hierarchy"}) {
    std::string part = FindPart(prefix, ext);
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// A cache is keyed by what produced it: the content of every source file (its size and hash, so
// that a file replaced by one with an older or equal modification time, as `cp -p` leaves it, is
// not mistaken for the old one), the format and the load options. Empty when a source file cannot
// be read.
std::string CacheKey(const std::string& prefix, GrammarFormat format, const LoadOptions& options) {
  char min_prob[64];
  std::snprintf(min_prob, sizeof(min_prob), "%.17g", options.min_binary_prob);
  std::string key = std::to_string(static_cast<int>(format)) + "|" + min_prob;
  // Every part is hashed on a thread of its own: the key is computed at every load, and
  // en_sm6s's .grammar.gz and .lexicon.gz (15 and 10 MB) took 0.15 s one after the other.
  const std::vector<std::string> parts = SourceParts(prefix);
  std::vector<std::future<std::string>> hashes;
  for (const std::string& part : parts)
    hashes.push_back(std::async(std::launch::async, FileHash, part));
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    std::error_code ec;
    const auto size = fs::file_size(part, ec);
    const std::string hash = hashes[i].get();
    if (ec || hash.empty()) return "";
    // Which part (by extension, not by path: a copy elsewhere shares the cache) and its content.
    key += "|" +
           fs::path(part).filename().string().substr(fs::path(prefix).filename().string().size()) +
           ":" + std::to_string(size) + ":" + hash;
  }
  return key;
}

// The cache file's name: the hash of its key.
std::string CacheFileName(const std::string& key) {
  return HexHash(XXH3_128bits(key.data(), key.size())) + ".ckybin";
}

// The cache file's bytes: magic, version, the model, then the checksum of all that.
std::string SerializeCache(const BerkeleyModel& model, const std::string& key) {
  std::ostringstream out;
  CacheWriter w(out);
  out.write(kCacheMagic, sizeof(kCacheMagic));
  w.Pod(kCacheVersion);
  w.String(key);
  const Grammar& g = model.grammar;
  w.Strings(g.symbol_names);
  w.Vector(g.symbol_num_substates);
  w.Vector(g.symbol_first_state);
  w.Vector(g.symbol_is_phrasal);
  w.Strings(g.symbol_split_trees);
  w.Vector(g.state_symbol);
  w.Vector(g.state_substate);
  w.Vector(g.binary_parent);
  w.Vector(g.binary_left);
  w.Vector(g.binary_right);
  w.Vector(g.binary_log_prob);
  w.Vector(g.binary_parent_begin);
  w.Vector(g.unary_parent);
  w.Vector(g.unary_child);
  w.Vector(g.unary_log_prob);
  w.Vector(g.unary_parent_begin);
  w.Vector(g.sum_unary_parent);
  w.Vector(g.sum_unary_child);
  w.Vector(g.sum_unary_log_prob);
  w.Vector(g.sum_unary_parent_begin);
  w.Pod<uint8_t>(g.sum_unaries_exact ? 1 : 0);
  w.Vector(g.unary_intermediate);
  w.Vector(g.base_unary_parent);
  w.Vector(g.base_unary_child);
  w.Vector(g.base_unary_log_prob);
  w.Vector(g.base_unary_parent_begin);
  w.Pod<uint8_t>(g.base_unaries_known ? 1 : 0);
  w.Pod<uint64_t>(model.lexicon.size());
  for (const LexiconRow& row : model.lexicon) {
    w.Pod(row.symbol);
    w.String(row.word);
    w.Vector(row.probs);
  }
  w.Strings(model.known_words);
  w.Pod<int32_t>(model.h_markov);
  w.Pod<int32_t>(model.v_markov);
  w.String(model.binarization);
  w.Pod<uint8_t>(model.lexicon_counts ? 1 : 0);
  if (model.lexicon_counts) {
    const BerkeleyLexiconCounts& c = *model.lexicon_counts;
    for (const auto* entries : {&c.seen, &c.unseen}) {
      w.Pod<uint64_t>(entries->size());
      for (const auto& e : *entries) {
        w.Pod(e.symbol);
        w.String(e.word);
        w.Vector(e.counts);
      }
    }
    w.Pod<uint64_t>(c.word_counts.size());
    for (const auto& [word, count] : c.word_counts) {
      w.String(word);
      w.Pod(count);
    }
    for (const auto* table : {&c.tag_counts, &c.unseen_tag_counts, &c.smoothing_weights}) {
      w.Pod<uint64_t>(table->size());
      for (const auto& row : *table) w.Vector(row);
    }
    w.Vector(c.lexical_symbols);
    w.Pod(c.total_tokens);
    w.Pod(c.total_unseen_tokens);
    w.Pod(c.smooth_unseen);
    w.Pod(c.smooth_seen);
    w.Pod(c.smooth_in_unknowns_threshold);
    w.Pod(c.unknown_level);
  }
  std::string bytes = std::move(out).str();
  bytes += Checksum(bytes);
  return bytes;
}

// Writes the cache to `path` through a temporary file (nothing is left of a failed write), 0600
// in the cache directory.
Status WriteCacheWithKey(const BerkeleyModel& model, const std::string& key,
                         const std::string& path, const OutputFileOptions& file_options = {}) {
  const std::string bytes = SerializeCache(model, key);
  return WriteFileAtomically(
      path,
      [&](std::ostream& out) {
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        return Status();
      },
      file_options);
}

// The cache is never gzipped: read it in one go, without a filtering stream.
StatusOr<std::string> ReadBinaryFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return FileError(path, "cannot open for reading");
  std::string data(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  if (!in) return Status::Error(path + ": read error");
  return data;
}

// Why a cache file was not read.
enum class CacheFault { kNone, kNotACache, kOldVersion, kDamaged };

// `path` names the data in error messages. Verifies the checksum before anything is read; version
// 5 (no checksum) only with `unchecked_version_5`.
StatusOr<BerkeleyModel> ReadCacheBytes(std::string_view data, const std::string& path,
                                       std::string* key, bool unchecked_version_5 = false,
                                       CacheFault* fault = nullptr) {
  auto fail = [&](CacheFault why, const std::string& message) {
    if (fault) *fault = why;
    return Status::Error(path + ": " + message);
  };
  if (data.size() < sizeof(kCacheMagic) ||
      std::memcmp(data.data(), kCacheMagic, sizeof(kCacheMagic)) != 0) {
    return fail(CacheFault::kNotACache, "not a cky grammar cache (bad magic number)");
  }
  uint32_t version = 0;
  if (data.size() >= kCacheHeaderBytes) {
    std::memcpy(&version, data.data() + sizeof(kCacheMagic), sizeof(version));
  }
  if (version == kCacheVersion) {
    if (data.size() < kCacheHeaderBytes + kChecksumBytes ||
        Checksum(data.substr(0, data.size() - kChecksumBytes)) !=
            data.substr(data.size() - kChecksumBytes)) {
      return fail(CacheFault::kDamaged,
                  "damaged grammar cache (checksum mismatch: the file was changed or cut short "
                  "after it was written)");
    }
    data.remove_suffix(kChecksumBytes);
  } else if (!(version == kUncheckedCacheVersion && unchecked_version_5)) {
    return fail(CacheFault::kOldVersion,
                "grammar cache format version " + std::to_string(version) +
                    ", this build reads version " + std::to_string(kCacheVersion) +
                    (version == kUncheckedCacheVersion
                         ? " (version 5 has no checksum: `cky convert FILE -o NEW.ckybin` "
                           "rewrites it as version 6)"
                         : ""));
  }
  CacheReader r(data.substr(kCacheHeaderBytes));
  BerkeleyModel model;
  *key = r.String();
  Grammar& g = model.grammar;
  g.symbol_names = r.Strings();
  g.symbol_num_substates = r.Vector<int32_t>();
  g.symbol_first_state = r.Vector<int32_t>();
  g.symbol_is_phrasal = r.Vector<uint8_t>();
  g.symbol_split_trees = r.Strings();
  g.state_symbol = r.Vector<int32_t>();
  g.state_substate = r.Vector<int32_t>();
  g.binary_parent = r.Vector<int32_t>();
  g.binary_left = r.Vector<int32_t>();
  g.binary_right = r.Vector<int32_t>();
  g.binary_log_prob = r.Vector<double>();
  g.binary_parent_begin = r.Vector<int32_t>();
  g.unary_parent = r.Vector<int32_t>();
  g.unary_child = r.Vector<int32_t>();
  g.unary_log_prob = r.Vector<double>();
  g.unary_parent_begin = r.Vector<int32_t>();
  g.sum_unary_parent = r.Vector<int32_t>();
  g.sum_unary_child = r.Vector<int32_t>();
  g.sum_unary_log_prob = r.Vector<double>();
  g.sum_unary_parent_begin = r.Vector<int32_t>();
  g.sum_unaries_exact = r.Pod<uint8_t>() != 0;
  g.unary_intermediate = r.Vector<int32_t>();
  g.base_unary_parent = r.Vector<int32_t>();
  g.base_unary_child = r.Vector<int32_t>();
  g.base_unary_log_prob = r.Vector<double>();
  g.base_unary_parent_begin = r.Vector<int32_t>();
  g.base_unaries_known = r.Pod<uint8_t>() != 0;
  uint64_t rows = r.Pod<uint64_t>();
  for (uint64_t i = 0; i < rows && r.ok(); ++i) {
    LexiconRow row;
    row.symbol = r.Pod<int32_t>();
    row.word = r.String();
    row.probs = r.Vector<double>();
    model.lexicon.push_back(std::move(row));
  }
  model.known_words = r.Strings();
  model.h_markov = r.Pod<int32_t>();
  model.v_markov = r.Pod<int32_t>();
  model.binarization = r.String();
  if (r.Pod<uint8_t>() && r.ok()) {
    BerkeleyLexiconCounts c;
    for (auto* entries : {&c.seen, &c.unseen}) {
      uint64_t n = r.Pod<uint64_t>();
      for (uint64_t i = 0; i < n && r.ok(); ++i) {
        BerkeleyLexiconCounts::Entry e;
        e.symbol = r.Pod<int32_t>();
        e.word = r.String();
        e.counts = r.Vector<double>();
        entries->push_back(std::move(e));
      }
    }
    uint64_t words = r.Pod<uint64_t>();
    for (uint64_t i = 0; i < words && r.ok(); ++i) {
      std::string word = r.String();
      double count = r.Pod<double>();
      c.word_counts.emplace_back(std::move(word), count);
    }
    for (auto* table : {&c.tag_counts, &c.unseen_tag_counts, &c.smoothing_weights}) {
      uint64_t n = r.Pod<uint64_t>();
      for (uint64_t i = 0; i < n && r.ok(); ++i) table->push_back(r.Vector<double>());
    }
    c.lexical_symbols = r.Vector<uint8_t>();
    c.total_tokens = r.Pod<double>();
    c.total_unseen_tokens = r.Pod<double>();
    c.smooth_unseen = r.Pod<double>();
    c.smooth_seen = r.Pod<double>();
    c.smooth_in_unknowns_threshold = r.Pod<double>();
    c.unknown_level = r.Pod<int32_t>();
    model.lexicon_counts = std::move(c);
  }
  if (!r.ok() || !r.AtEnd())
    return fail(CacheFault::kDamaged, "truncated or corrupt grammar cache");
  // Structural checks, so that a damaged cache cannot send a parser out of bounds.
  const int64_t states = g.num_states();
  const int64_t symbols = g.num_symbols();
  bool sane =
      symbols > 0 && g.symbol_num_substates.size() == size_t(symbols) &&
      g.symbol_first_state.size() == size_t(symbols) &&
      g.symbol_is_phrasal.size() == size_t(symbols) &&
      g.symbol_split_trees.size() == size_t(symbols) && g.state_substate.size() == size_t(states) &&
      g.binary_left.size() == g.binary_parent.size() &&
      g.binary_right.size() == g.binary_parent.size() &&
      g.binary_log_prob.size() == g.binary_parent.size() &&
      g.binary_parent_begin.size() == size_t(states + 1) &&
      g.unary_child.size() == g.unary_parent.size() &&
      g.unary_log_prob.size() == g.unary_parent.size() &&
      g.unary_parent_begin.size() == size_t(states + 1) &&
      g.sum_unary_child.size() == g.sum_unary_parent.size() &&
      g.sum_unary_log_prob.size() == g.sum_unary_parent.size() &&
      g.sum_unary_parent_begin.size() == size_t(states + 1) &&
      (g.unary_intermediate.empty() || g.unary_intermediate.size() == size_t(symbols * symbols)) &&
      g.base_unary_child.size() == g.base_unary_parent.size() &&
      g.base_unary_log_prob.size() == g.base_unary_parent.size() &&
      g.base_unary_parent_begin.size() == size_t(states + 1);
  auto in_range = [&](const std::vector<int32_t>& ids, int64_t limit) {
    for (int32_t id : ids) {
      if (id < 0 || id >= limit) return false;
    }
    return true;
  };
  sane = sane && in_range(g.state_symbol, symbols) && in_range(g.binary_parent, states) &&
         in_range(g.binary_left, states) && in_range(g.binary_right, states) &&
         in_range(g.unary_parent, states) && in_range(g.unary_child, states) &&
         in_range(g.sum_unary_parent, states) && in_range(g.sum_unary_child, states) &&
         in_range(g.base_unary_parent, states) && in_range(g.base_unary_child, states);
  for (int32_t m : g.unary_intermediate) sane = sane && m >= -1 && m < symbols;
  for (const LexiconRow& row : model.lexicon) {
    sane = sane && row.symbol >= 0 && row.symbol < symbols &&
           row.probs.size() == size_t(g.symbol_num_substates[row.symbol]);
  }
  if (model.lexicon_counts) {
    const BerkeleyLexiconCounts& c = *model.lexicon_counts;
    for (const auto* entries : {&c.seen, &c.unseen}) {
      for (const auto& e : *entries) {
        sane = sane && e.symbol >= 0 && e.symbol < symbols &&
               e.counts.size() == size_t(g.symbol_num_substates[e.symbol]);
      }
    }
    sane = sane && c.lexical_symbols.size() == size_t(symbols) &&
           c.smoothing_weights.size() == size_t(symbols);
    // Row sizes of the tag tables are checked when the lexicon is built.
  }
  if (!sane) return fail(CacheFault::kDamaged, "inconsistent grammar cache");
  g.IndexSymbols();
  return model;
}

// A file's bytes mapped read-only into memory, for as long as the object lives: the cache is read
// where the page cache holds it, without a zero-filled buffer and a copy (60 MB for en_sm6s: the
// cache read took 1.0 s with them and 0.5 s without on the development machine). Caches are
// replaced by renaming a new file over them (WriteCacheWithKey), never rewritten in place, so a
// mapped one does not shrink under its reader.
class MappedFile {
 public:
  // `private_file`: the file must be a regular file (not a link) owned by this user and writable
  // by no one else, as files in the cache directory are; else error() says why not.
  MappedFile(const std::string& path, bool private_file) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (private_file ? O_NOFOLLOW : 0));
    if (fd < 0) {
      error_ = FileError(path, "cannot open for reading");
      return;
    }
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
      error_ = FileError(path, "cannot read");
    } else if (private_file && (!S_ISREG(info.st_mode) || info.st_uid != ::geteuid() ||
                                (info.st_mode & (S_IWGRP | S_IWOTH)) != 0)) {
      error_ = Status::Error(path + (info.st_uid != ::geteuid()
                                         ? ": owned by another user"
                                         : ": not a regular file only its owner may write"));
    } else if (info.st_size > 0) {
      void* address =
          ::mmap(nullptr, static_cast<size_t>(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (address != MAP_FAILED) {
        address_ = address;
        size_ = static_cast<size_t>(info.st_size);
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (address_ != nullptr) ::munmap(address_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  bool ok() const { return address_ != nullptr; }
  // Set when the file cannot be opened or is not private as asked.
  const Status& error() const { return error_; }
  std::string_view bytes() const { return {static_cast<const char*>(address_), size_}; }

 private:
  void* address_ = nullptr;
  size_t size_ = 0;
  Status error_;
};

StatusOr<BerkeleyModel> ReadCacheWithKey(const std::string& path, std::string* key,
                                         bool unchecked_version_5 = false,
                                         bool private_file = false, CacheFault* fault = nullptr) {
  MappedFile mapped(path, private_file);
  if (!mapped.error().ok()) return mapped.error();
  if (mapped.ok()) return ReadCacheBytes(mapped.bytes(), path, key, unchecked_version_5, fault);
  auto data = ReadBinaryFile(path);  // an empty file, or one that cannot be mapped
  if (!data.ok()) return data.status();
  return ReadCacheBytes(*data, path, key, unchecked_version_5, fault);
}

}  // namespace

namespace {

// Reads a WriteGrammarToTextFile export; `splits` and `words` are optional (empty name, no stream).
StatusOr<BerkeleyModel> ReadWriteGrammarText(const TextSource& grammar, const TextSource& lexicon,
                                             const TextSource& splits, const TextSource& words,
                                             const LoadOptions& options) {
  GrammarBuilder builder;
  builder.AddSymbol("ROOT");
  ExportCheck check;
  if (splits.stream || !splits.name.empty()) {
    CKY_RETURN_IF_ERROR(ReadSplitFile(splits, SplitFileKind::kSplitTree, builder, &check));
  }
  CKY_RETURN_IF_ERROR(ReadRuleFile(grammar, /*arrow=*/true, 0, options, builder, &check));
  CKY_RETURN_IF_ERROR(NoRules(check));
  std::vector<RawLexiconRow> rows;
  CKY_RETURN_IF_ERROR(ReadLexiconFile(lexicon, builder, &rows, check));
  std::vector<std::string> word_list;
  if (words.stream || !words.name.empty()) CKY_RETURN_IF_ERROR(ReadWordsFile(words, &word_list));
  return Assemble(builder, std::move(rows), std::move(word_list), check, lexicon.name);
}

}  // namespace

StatusOr<BerkeleyModel> ReadWriteGrammarTextFiles(const std::string& prefix,
                                                  const LoadOptions& options) {
  std::string grammar = FindPart(prefix, ".grammar");
  std::string lexicon = FindPart(prefix, ".lexicon");
  if (grammar.empty()) return Missing(prefix, ".grammar");
  if (lexicon.empty()) return Missing(prefix, ".lexicon");
  return ReadWriteGrammarText({nullptr, grammar}, {nullptr, lexicon},
                              {nullptr, FindPart(prefix, ".splits")},
                              {nullptr, FindPart(prefix, ".words")}, options);
}

StatusOr<BerkeleyModel> ReadWriteGrammarTextFromStreams(std::istream& grammar,
                                                        std::istream& lexicon, std::istream* splits,
                                                        std::istream* words,
                                                        const std::string& name,
                                                        const LoadOptions& options) {
  return ReadWriteGrammarText({&grammar, name + ".grammar"}, {&lexicon, name + ".lexicon"},
                              {splits, splits ? name + ".splits" : ""},
                              {words, words ? name + ".words" : ""}, options);
}

StatusOr<BerkeleyModel> ReadDumpGrammarFiles(const std::string& prefix,
                                             const LoadOptions& options) {
  std::string binary = FindPart(prefix, ".binary");
  std::string unary = FindPart(prefix, ".unary");
  std::string lexicon = FindPart(prefix, ".lexicon");
  if (binary.empty()) return Missing(prefix, ".binary");
  if (unary.empty()) return Missing(prefix, ".unary");
  if (lexicon.empty()) return Missing(prefix, ".lexicon");
  GrammarBuilder builder;
  builder.AddSymbol("ROOT");
  ExportCheck check;
  if (std::string numstates = FindPart(prefix, ".numstates"); !numstates.empty()) {
    CKY_RETURN_IF_ERROR(
        ReadSplitFile({nullptr, numstates}, SplitFileKind::kNumStates, builder, &check));
  }
  if (std::string hierarchy = FindPart(prefix, ".hierarchy"); !hierarchy.empty()) {
    CKY_RETURN_IF_ERROR(
        ReadSplitFile({nullptr, hierarchy}, SplitFileKind::kHierarchyTreeOnly, builder, &check));
  }
  CKY_RETURN_IF_ERROR(
      ReadRuleFile({nullptr, binary}, /*arrow=*/false, 2, options, builder, &check));
  CKY_RETURN_IF_ERROR(ReadRuleFile({nullptr, unary}, /*arrow=*/false, 1, options, builder, &check));
  CKY_RETURN_IF_ERROR(NoRules(check));
  std::vector<RawLexiconRow> rows;
  CKY_RETURN_IF_ERROR(ReadLexiconFile({nullptr, lexicon}, builder, &rows, check));
  std::vector<std::string> words;
  if (std::string words_file = FindPart(prefix, ".words"); !words_file.empty()) {
    CKY_RETURN_IF_ERROR(ReadWordsFile({nullptr, words_file}, &words));
  }
  return Assemble(builder, std::move(rows), std::move(words), check, lexicon);
}

Status WriteGrammarTextFiles(const BerkeleyModel& model, const std::string& prefix) {
  const Grammar& g = model.grammar;
  char number[64];
  auto prob_text = [&](double log_prob) {
    std::snprintf(number, sizeof(number), "%.17g", std::exp(log_prob));
    return number;
  };
  // Each file through a temporary one: a failed write leaves no half-written file.
  CKY_RETURN_IF_ERROR(WriteFileAtomically(prefix + ".grammar", [&](std::ostream& out) {
    for (int64_t i = 0; i < g.num_binary_rules(); ++i) {
      out << g.StateName(g.binary_parent[i]) << " -> " << g.StateName(g.binary_left[i]) << " "
          << g.StateName(g.binary_right[i]) << " " << prob_text(g.binary_log_prob[i]) << "\n";
    }
    for (int32_t state = 0; state < g.num_states(); ++state) {
      out << g.StateName(state) << " -> " << g.StateName(state) << " 1.0\n";
      for (int32_t i = g.unary_parent_begin[state]; i < g.unary_parent_begin[state + 1]; ++i) {
        out << g.StateName(state) << " -> " << g.StateName(g.unary_child[i]) << " "
            << prob_text(g.unary_log_prob[i]) << "\n";
      }
    }
    return Status();
  }));
  CKY_RETURN_IF_ERROR(WriteFileAtomically(prefix + ".lexicon", [&](std::ostream& out) {
    for (const LexiconRow& row : model.lexicon) {
      out << g.symbol_names[row.symbol] << " " << row.word << " [";
      for (size_t k = 0; k < row.probs.size(); ++k) {
        std::snprintf(number, sizeof(number), "%.17g", row.probs[k]);
        out << (k ? ", " : "") << number;
      }
      out << "]\n";
    }
    return Status();
  }));
  CKY_RETURN_IF_ERROR(WriteFileAtomically(prefix + ".splits", [&](std::ostream& out) {
    for (int32_t s = 1; s < g.num_symbols(); ++s) {
      // Without a recorded tree, a flat one still gives the substate count.
      std::string tree = g.symbol_split_trees[s];
      if (tree.empty()) {
        tree = g.symbol_num_substates[s] == 1 ? "0" : "(0";
        if (g.symbol_num_substates[s] > 1) {
          for (int32_t k = 0; k < g.symbol_num_substates[s]; ++k) tree += " " + std::to_string(k);
          tree += ")";
        }
      }
      out << g.symbol_names[s] << "\t" << tree << "\n";
    }
    return Status();
  }));
  return WriteFileAtomically(prefix + ".words", [&](std::ostream& out) {
    for (const std::string& word : model.known_words) out << word << "\n";
    return Status();
  });
}

Status WriteModelCache(const BerkeleyModel& model, const std::string& path) {
  return WriteCacheWithKey(model, "", path);
}

std::string ModelCacheBytes(const BerkeleyModel& model) { return SerializeCache(model, ""); }

StatusOr<BerkeleyModel> ReadModelCache(const std::string& path, bool unchecked_version_5) {
  std::string key;
  // A compressed cache (FILE.ckybin.gz, as the built-in grammar is kept) is read whole through
  // the decompressor, as any compressed input is.
  auto input = InputFile::Open(path);
  if (input.ok() && !(*input)->compression().empty()) {
    auto data = ReadWholeFile(path);
    if (!data.ok()) return data.status();
    return ReadCacheBytes(*data, path, &key, unchecked_version_5);
  }
  return ReadCacheWithKey(path, &key, unchecked_version_5);
}

std::string AppendCacheChecksum(std::string unchecked) {
  unchecked += Checksum(unchecked);
  return unchecked;
}

namespace {

// Whether `path` is a compressed file whose content starts as a cache does.
bool IsCompressedCache(const std::string& path) {
  auto input = InputFile::Open(path);
  if (!input.ok() || (*input)->compression().empty()) return false;
  char magic[sizeof(kCacheMagic)] = {};
  (*input)->stream().read(magic, sizeof(magic));
  return (*input)->stream().gcount() == sizeof(magic) &&
         std::memcmp(magic, kCacheMagic, sizeof(magic)) == 0;
}

}  // namespace

StatusOr<BerkeleyModel> ReadModelCacheFromMemory(std::string_view data, const std::string& name) {
  std::string key;
  return ReadCacheBytes(data, name, &key);
}

GrammarFormat DetectGrammarFormat(const std::string& spec) {
  if (FileExists(spec)) {
    std::ifstream in(spec, std::ios::binary);
    char magic[sizeof(kCacheMagic)] = {};
    in.read(magic, sizeof(magic));
    if (in && std::memcmp(magic, kCacheMagic, sizeof(magic)) == 0) return GrammarFormat::kCache;
    if (LooksLikeJavaSerializedGrammar(spec)) return GrammarFormat::kJavaSerialized;
    if (IsCompressedCache(spec)) return GrammarFormat::kCache;
  }
  if (!FindPart(spec, ".grammar").empty()) return GrammarFormat::kWriteGrammarText;
  if (!FindPart(spec, ".binary").empty()) return GrammarFormat::kDumpGrammar;
  return GrammarFormat::kUnknown;
}

StatusOr<BerkeleyModel> LoadBerkeleyModel(const std::string& spec, const LoadOptions& options) {
  GrammarFormat format = DetectGrammarFormat(spec);
  if (format == GrammarFormat::kCache) return ReadModelCache(spec, options.unchecked_version_5);
  // A .gr reads in well under a second even for large grammars: no cache needed.
  if (format == GrammarFormat::kJavaSerialized) return ReadBerkeleyGrFile(spec, options);
  if (format == GrammarFormat::kUnknown) {
    if (FileExists(spec)) {
      return Status::Error("'" + spec +
                           "' is neither a cky cache file nor a Berkeley .gr file (gzipped Java "
                           "serialization), nor the prefix of a text export");
    }
    return Status::Error("no grammar at '" + spec +
                         "': expected a cky cache file, a Berkeley .gr file, "
                         "PREFIX.grammar + PREFIX.lexicon "
                         "(WriteGrammarToTextFile) or PREFIX.binary + PREFIX.unary (DumpGrammar)");
  }
  auto read_text = [&]() {
    return format == GrammarFormat::kWriteGrammarText ? ReadWriteGrammarTextFiles(spec, options)
                                                      : ReadDumpGrammarFiles(spec, options);
  };
  if (!options.use_cache) return read_text();
  auto warn = [&](const std::string& message) {
    if (options.on_cache_warning) options.on_cache_warning(message);
  };

  const std::string key = CacheKey(spec, format, options);
  const std::string directory = CacheDirectory();
  if (key.empty() || directory.empty()) return read_text();
  if (std::string why = PrepareCacheDirectory(directory); !why.empty()) {
    warn("not using the grammar cache: " + why);
    return read_text();
  }
  const std::string cache_path = directory + "/" + CacheFileName(key);
  struct stat info {};
  if (::lstat(cache_path.c_str(), &info) == 0) {
    std::string stored_key;
    CacheFault fault = CacheFault::kNone;
    auto cached = ReadCacheWithKey(cache_path, &stored_key, /*unchecked_version_5=*/false,
                                   /*private_file=*/true, &fault);
    if (cached.ok() && stored_key == key) return cached;
    // An older format is replaced without a word; anything else is worth one.
    if (!cached.ok() && fault != CacheFault::kOldVersion) {
      warn(cached.status().message() +
           "; not used, the grammar is read from its files and the "
           "cache written again");
    }
  }
  auto model = read_text();
  if (!model.ok()) return model;
  // A cache we cannot write (read-only home, full disk) only costs speed next time.
  Status written = WriteCacheWithKey(*model, key, cache_path, {.mode = 0600, .apply_umask = false});
  if (written.ok() && options.on_cache_written) options.on_cache_written(cache_path);
  if (!written.ok()) warn("grammar cache not written: " + written.message());
  return model;
}

}  // namespace cky
