#include "treebank/reader.h"

#include <sstream>
#include <utility>

#include "common/input_file.h"

namespace cky {
namespace {

// C's isspace in the "C" locale, which is what EVALB tokenizes with; UTF-8 bytes are never blank.
bool IsBlank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool IsAtomByte(char c) { return !IsBlank(c) && c != '(' && c != ')'; }

bool IsBlankLine(const std::string& line) {
  for (char c : line) {
    if (!IsBlank(c)) return false;
  }
  return true;
}

// Net brackets a line leaves open.
long OpenBrackets(const std::string& line) {
  long depth = 0;
  for (char c : line) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
  }
  return depth;
}

constexpr int kAutoLookaheadLines = 200;

}  // namespace

TreeReader::TreeReader(std::istream& in, std::string file_name, TreeReaderOptions options)
    : in_(in),
      file_name_(std::move(file_name)),
      layout_(options.layout),
      several_trees_per_line_(options.several_trees_per_line) {}

bool TreeReader::ReadRawLine(std::string* line) {
  if (!std::getline(in_, *line)) return false;
  // A byte-order mark (Windows editors write one) is no part of the first tree.
  if (!read_a_line_) StripByteOrderMark(line);
  read_a_line_ = true;
  return true;
}

bool TreeReader::FetchLine() {
  if (!lookahead_.empty()) {
    line_ = std::move(lookahead_.front());
    lookahead_.pop_front();
  } else if (!ReadRawLine(&line_)) {
    have_line_ = false;
    return false;
  }
  ++line_number_;
  pos_ = 0;
  have_line_ = true;
  return true;
}

void TreeReader::ResolveLayout() {
  if (layout_ != TreeLayout::kAuto) return;
  // A tree continues on the next line when a line leaves brackets open and the next non-blank line
  // does not start a tree in its first column. (A lone unbalanced line in a one-per-line file is
  // followed by a line starting with "(", so it does not make the file multi-line.)
  layout_ = TreeLayout::kOnePerLine;
  int non_blank = 0;
  bool previous_left_open = false;
  std::string line;
  while (non_blank < kAutoLookaheadLines && ReadRawLine(&line)) {
    lookahead_.push_back(line);
    if (IsBlankLine(line)) continue;
    ++non_blank;
    if (previous_left_open && line[0] != '(') {
      layout_ = TreeLayout::kMultiLine;
      return;
    }
    previous_left_open = OpenBrackets(line) > 0;
  }
}

namespace {

// Builds one tree from tokens; constituents are closed bottom-up.
class TreeBuilder {
 public:
  void Open(std::string label, long line) {
    stack_.emplace_back(std::move(label));
    open_lines_.push_back(line);
  }
  void AddWord(std::string word) { stack_.back().children.emplace_back(std::move(word)); }
  // Closes the innermost constituent; true when that completes the tree.
  bool Close() {
    Tree node = std::move(stack_.back());
    long line = open_lines_.back();
    stack_.pop_back();
    open_lines_.pop_back();
    const bool is_root = stack_.empty();
    if (node.children.empty()) {
      // "(X)" and "()" span no words; EVALB discards such brackets, and so do we.
    } else if (node.label.empty() && !is_root) {
      if (first_error_.empty()) {
        first_error_line_ = line;
        first_error_ = "empty label on a constituent below the root";
      }
      stack_.back().children.push_back(std::move(node));
    } else if (is_root) {
      root_ = std::move(node);
      has_root_ = true;
    } else {
      stack_.back().children.push_back(std::move(node));
    }
    return is_root;
  }
  size_t depth() const { return stack_.size(); }
  bool has_root() const { return has_root_; }
  Tree TakeRoot() { return std::move(root_); }
  const std::string& first_error() const { return first_error_; }
  long first_error_line() const { return first_error_line_; }

 private:
  std::vector<Tree> stack_;
  std::vector<long> open_lines_;
  Tree root_;
  bool has_root_ = false;
  std::string first_error_;
  long first_error_line_ = 0;
};

// Feeds the token at s[*p] (a blank, "(LABEL", ")" or a word) to `builder` and moves past it.
// Returns true when a ')' closed the tree's outermost bracket.
bool ConsumeToken(const std::string& s, size_t* p, long line_number, TreeBuilder* builder) {
  const char c = s[*p];
  if (IsBlank(c)) {
    ++*p;
  } else if (c == '(') {
    const size_t begin = ++*p;
    while (*p < s.size() && IsAtomByte(s[*p])) ++*p;
    builder->Open(s.substr(begin, *p - begin), line_number);
  } else if (c == ')') {
    ++*p;
    return builder->Close();
  } else {
    const size_t begin = *p;
    while (*p < s.size() && IsAtomByte(s[*p])) ++*p;
    builder->AddWord(s.substr(begin, *p - begin));
  }
  return false;
}

}  // namespace

bool TreeReader::Next(TreeItem* item) {
  ResolveLayout();
  *item = TreeItem();
  return layout_ == TreeLayout::kOnePerLine ? NextOnePerLine(item) : NextMultiLine(item);
}

bool TreeReader::NextOnePerLine(TreeItem* item) {
  if (!FetchLine()) return false;
  item->line = line_number_;
  auto fail = [&](const std::string& message) {
    item->status = LineError(file_name_, line_number_, message);
    return true;
  };
  const std::string& s = line_;
  size_t& p = pos_;
  while (p < s.size() && IsBlank(s[p])) ++p;
  if (p == s.size()) {
    item->empty = true;
    return true;
  }
  if (s[p] != '(') {
    return fail(s[p] == ')' ? "unbalanced brackets: ')' without a matching '('"
                            : "text outside brackets");
  }
  std::vector<Tree> trees;
  for (;;) {
    TreeBuilder builder;
    bool complete = false;
    while (p < s.size() && !complete) complete = ConsumeToken(s, &p, line_number_, &builder);
    if (!complete) {
      return fail("unbalanced brackets: " + std::to_string(builder.depth()) +
                  " not closed at the end of the line");
    }
    if (!builder.first_error().empty()) return fail(builder.first_error());
    if (builder.has_root()) trees.push_back(builder.TakeRoot());
    while (p < s.size() && IsBlank(s[p])) ++p;
    if (p == s.size()) break;
    if (s[p] == ')') return fail("unbalanced brackets: ')' without a matching '('");
    if (s[p] != '(') return fail("text outside brackets");
    if (!several_trees_per_line_) return fail("more than one tree on the line");
  }
  if (trees.empty()) {
    item->empty = true;
  } else {
    item->tree = std::move(trees[0]);
    item->more_trees.assign(std::make_move_iterator(trees.begin() + 1),
                            std::make_move_iterator(trees.end()));
  }
  return true;
}

bool TreeReader::NextMultiLine(TreeItem* item) {
  // Find the start of the next tree.
  for (;;) {
    if (!have_line_ || pos_ >= line_.size()) {
      if (!FetchLine()) return false;
      continue;
    }
    if (IsBlank(line_[pos_])) {
      ++pos_;
      continue;
    }
    if (line_[pos_] == '(') break;
    item->line = line_number_;
    item->status = LineError(file_name_, line_number_,
                             line_[pos_] == ')' ? "unbalanced brackets: ')' without a matching '('"
                                                : "text outside brackets");
    pos_ = line_.size();  // resume on the next line
    return true;
  }
  item->line = line_number_;
  TreeBuilder builder;
  for (;;) {
    if (pos_ >= line_.size()) {
      if (!FetchLine()) {
        item->status = LineError(file_name_, item->line,
                                 "unbalanced brackets: " + std::to_string(builder.depth()) +
                                     " still open at the end of the file");
        return true;
      }
      if (!line_.empty() && line_[0] == '(') {
        // A new tree starts in column 0: the one above lacks closing brackets. Resume here.
        item->status = LineError(file_name_, item->line,
                                 "unbalanced brackets: " + std::to_string(builder.depth()) +
                                     " still open where the next tree starts (line " +
                                     std::to_string(line_number_) + ")");
        return true;
      }
      continue;
    }
    if (ConsumeToken(line_, &pos_, line_number_, &builder)) break;
  }
  if (!builder.first_error().empty()) {
    item->status = LineError(file_name_, builder.first_error_line(), builder.first_error());
  } else if (!builder.has_root()) {
    item->empty = true;
  } else {
    item->tree = builder.TakeRoot();
  }
  return true;
}

namespace {

StatusOr<std::vector<Tree>> ReadAll(TreeReader& reader, const ReadTreebankOptions& options,
                                    std::vector<Status>* errors) {
  std::vector<Tree> trees;
  TreeItem item;
  while (reader.Next(&item)) {
    if (!item.status.ok()) {
      if (!options.continue_on_error) return item.status;
      if (errors != nullptr) errors->push_back(item.status);
      continue;
    }
    if (item.empty) continue;
    trees.push_back(std::move(item.tree));
    for (Tree& more : item.more_trees) trees.push_back(std::move(more));
  }
  return trees;
}

}  // namespace

StatusOr<std::vector<Tree>> ReadTreebankFile(const std::string& path,
                                             const ReadTreebankOptions& options,
                                             std::vector<Status>* errors) {
  auto file = InputFile::Open(path);
  if (!file.ok()) return file.status();
  TreeReader reader((*file)->stream(), path, options.reader);
  auto trees = ReadAll(reader, options, errors);
  if (!trees.ok()) return trees;
  CKY_RETURN_IF_ERROR((*file)->ReadStatus());
  return trees;
}

StatusOr<std::vector<Tree>> ReadTreesFromString(const std::string& text,
                                                const ReadTreebankOptions& options,
                                                std::vector<Status>* errors) {
  std::istringstream in(text);
  TreeReader reader(in, "<string>", options.reader);
  return ReadAll(reader, options, errors);
}

}  // namespace cky
