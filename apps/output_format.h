// How `cky parse` writes its results: the output formats (--format) and when output is flushed.
//
//   penn    one tree per line, as the Berkeley parser prints it:  ( (S (NP (DT The) ...) ...) )
//   pretty  the same tree indented over several lines (a node that fits in 72 columns stays on
//           one line); continuation lines are indented, so `cky eval` reads the output back
//   json    one object per line (JSON Lines):
//           {"index":1,"tokens":["The","cat"],"tree":"( (S ...) )","ok":true}
//           plus "log_likelihood", "tree_log_likelihood", "confidence" and "model_score" when
//           asked for (null for -infinity), "kbest":[{"tree":...,"model_score":...}, ...] with
//           --kbest, and "ok":false with "message" for a sentence without a tree ("(())")
//
// Score columns come before each tree, tab-separated, in the Berkeley parser's order: P(T,w),
// P(w), then P(T|w) or (only without it, as Berkeley) the max-rule score.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "parser/parser.h"
#include "parser/tree_format.h"

namespace cky::apps {

enum class OutputFormat { kPenn, kPretty, kJson };

// The names --format takes, and the format a name means (false for an unknown name).
const std::vector<std::string>& OutputFormatNames();
bool ParseOutputFormat(const std::string& name, OutputFormat* format);

struct ResultFormatOptions {
  OutputFormat format = OutputFormat::kPenn;
  OutputForm tree_form;
  bool tree_likelihood = false;      // Berkeley's -tree_likelihood column / JSON field
  bool sentence_likelihood = false;  // Berkeley's -sentence_likelihood column / JSON field
  bool confidence = false;           // Berkeley's -confidence column / JSON field
  bool model_score = false;          // Berkeley's -modelScore column / JSON field
  int kbest = 1;  // > 1: every tree of ParseOutcome::kbest, then a blank line (Berkeley's -kbest)
};

// The text printed for one sentence (with its trailing newline). `index` counts from 1. A tree
// never comes out unbalanced: brackets inside words and labels are escaped (-LRB-, -RRB-).
std::string FormatResult(long index, const std::vector<std::string>& tokens,
                         const ParseOutcome& outcome, const ResultFormatOptions& options);

// `printed` (FormTree's tree: an unlabelled root) over several lines: a node whose one-line
// form fits in `width` columns (after its indentation) stays on one line, any other node puts
// each child on its own line, indented two more columns. Ends with a newline.
std::string FormatPrettyTree(const Tree& printed, bool scores, int width = 72);

// Writes results to `out`, flushing after every result when `flush_each` (stdout is a pipe or a
// terminal: a co-process waits for each tree) and otherwise at the end of each batch. A failed
// write ends the command at the next flush, naming the output (`path`, "-" for standard output)
// and why: no work goes on for output that is lost.
class ResultWriter {
 public:
  ResultWriter(std::ostream& out, bool flush_each, std::string path = "-")
      : out_(out), flush_each_(flush_each), path_(std::move(path)) {}
  void Write(const std::string& text);
  void EndBatch();

 private:
  std::ostream& out_;
  bool flush_each_;
  std::string path_;
};

// True when the output at `path` ("-" for stdout) should be flushed line by line: it is not a
// regular file.
bool FlushEachLine(const std::string& path);

}  // namespace cky::apps
