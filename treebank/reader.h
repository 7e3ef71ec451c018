// Reading Penn Treebank bracketed files, tree by tree.
//
// Two layouts occur in practice. The raw treebank (.mrg) and GUM's .ptb spread one tree over
// several indented lines; the raw treebank wraps each tree in an unlabelled root and keeps function
// tags, coindexation and traces:
//
//   ( (S
//       (NP-SBJ-1 (NNP Mary) )
//       (VP (VBD was)
//         (VP (VBN seen)
//           (NP (-NONE- *-1) )))
//       (. .) ))
//
// Parser output and EVALB's input hold one tree per line, usually under TOP or ROOT; a blank line
// there stands for a sentence without a parse, and "(())" is what some parsers print on failure:
//
//   (TOP (S (NP (NNP Mary)) (VP (VBD was) (VP (VBN seen))) (. .)))
//
//   (())
//
// Tokens are "(", ")" and runs of other non-blank bytes (UTF-8 passes through untouched; a UTF-8
// byte-order mark at the start of the input is dropped). As in
// EVALB, a label is the token written directly after "(" ("( (S" has an empty root label; "(NP"
// has label NP). Leaves are words; "(NN dog)" is a preterminal. A constituent without children,
// "(X)" or "()", spans no words and is dropped; a tree left with no words reads as an empty item.
// Only the root may have an empty label.
#pragma once

#include <deque>
#include <istream>
#include <string>
#include <vector>

#include "common/status.h"
#include "treebank/tree.h"

namespace cky {

enum class TreeLayout {
  kAuto,        // multi-line if a tree in the first 200 non-blank lines continues on an indented
                // (or ")"-led) line, else one per line
  kOnePerLine,  // every line is one item: a tree, or (blank line) an empty item
  kMultiLine,   // trees may span lines; blank lines separate nothing and are skipped
};

struct TreeReaderOptions {
  TreeLayout layout = TreeLayout::kAuto;
  // One-per-line layout: accept several trees on a line as one item (EVALB scores
  // "(A x) (B y)" as one sentence); the trees after the first go to TreeItem::more_trees.
  bool several_trees_per_line = false;
};

// One item of a treebank file.
struct TreeItem {
  Tree tree;                     // the tree, when status is OK and !empty
  std::vector<Tree> more_trees;  // further trees of the line (see several_trees_per_line)
  bool empty = false;  // a blank line (one-per-line layout) or a tree without words such as "(())"
  Status status;       // an error in this item, "file:line: message"; later items are still read
  long line = 0;       // the line where the item starts (1-based)
};

// Reads items one at a time from a stream. Errors (unbalanced brackets, empty labels, text outside
// brackets) are reported on the item they occur in, and reading resumes after it: in the
// one-per-line layout at the next line; in the multi-line layout after the tree's closing bracket,
// or, for a tree left open, at the next line that starts with "(" in its first column (where
// multi-line files start their trees).
class TreeReader {
 public:
  // `in` must outlive the reader; `file_name` only names the input in error messages.
  TreeReader(std::istream& in, std::string file_name, TreeReaderOptions options = {});

  // Fills `item` with the next item; returns false at the end of the input.
  bool Next(TreeItem* item);

  // The layout in use; kAuto is resolved on the first call to Next.
  TreeLayout layout() const { return layout_; }

 private:
  bool ReadRawLine(std::string* line);  // from the stream, without a byte-order mark
  bool FetchLine();                     // loads the next line into line_; false at the end of input
  void ResolveLayout();
  bool NextOnePerLine(TreeItem* item);
  bool NextMultiLine(TreeItem* item);

  std::istream& in_;
  std::string file_name_;
  TreeLayout layout_;
  bool several_trees_per_line_;
  std::deque<std::string> lookahead_;  // lines read while resolving kAuto
  std::string line_;
  size_t pos_ = 0;        // next unread byte of line_
  long line_number_ = 0;  // of line_
  bool have_line_ = false;
  bool read_a_line_ = false;
};

struct ReadTreebankOptions {
  TreeReaderOptions reader;
  // Keep reading after an erroneous tree (its error goes to `errors`); otherwise stop at the first.
  bool continue_on_error = false;
};

// Reads every tree of a file (gzipped or plain; "-" is standard input), skipping empty items;
// the trees of a line holding several (several_trees_per_line) come one after the other.
// With continue_on_error, the errors of the items skipped are appended to `errors` (when given)
// and only a file that cannot be opened fails.
StatusOr<std::vector<Tree>> ReadTreebankFile(const std::string& path,
                                             const ReadTreebankOptions& options = {},
                                             std::vector<Status>* errors = nullptr);

// Parses trees from a string (tests, small inputs), as ReadTreebankFile does.
StatusOr<std::vector<Tree>> ReadTreesFromString(const std::string& text,
                                                const ReadTreebankOptions& options = {},
                                                std::vector<Status>* errors = nullptr);

}  // namespace cky
