#include "apps/output_format.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string_view>

#include "apps/command_util.h"
#include "common/input_file.h"

namespace cky::apps {
namespace {

bool HasBracket(const std::string& text) { return text.find_first_of("()") != std::string::npos; }

bool AnyBracket(const Tree& tree) {
  if (HasBracket(tree.label)) return true;
  for (const Tree& child : tree.children) {
    if (AnyBracket(child)) return true;
  }
  return false;
}

std::string EscapeBrackets(const std::string& text) {
  std::string escaped;
  for (char ch : text) {
    if (ch == '(') {
      escaped += "-LRB-";
    } else if (ch == ')') {
      escaped += "-RRB-";
    } else {
      escaped += ch;
    }
  }
  return escaped;
}

void EscapeTree(Tree* tree) {
  tree->label = EscapeBrackets(tree->label);
  for (Tree& child : tree->children) EscapeTree(&child);
}

// One tree's scores, -infinity for a sentence without a tree.
struct TreeScores {
  double tree_likelihood = kNegInf, likelihood = kNegInf, confidence = kNegInf,
         model_score = kNegInf;
};

TreeScores ScoresOf(const ParseOutcome& outcome, const ScoredTree* scored) {
  if (outcome.status != ParseStatus::kOk) return {};
  if (scored) {
    return {scored->tree_log_likelihood, outcome.log_likelihood, scored->confidence,
            scored->log_score};
  }
  return {outcome.tree_log_likelihood, outcome.log_likelihood, outcome.confidence,
          outcome.log_score};
}

// Berkeley's score columns before the tree, tab-separated, in its order: P(T,w)
// (-tree_likelihood), P(w) (-sentence_likelihood), then P(T|w) (-confidence) or else the max-rule
// score (-modelScore, printed "%.8f"); Java prints infinities as "-Infinity".
std::string ScoreColumns(const ResultFormatOptions& options, const TreeScores& s) {
  std::string columns;
  if (options.tree_likelihood) columns += FormatJavaDouble(s.tree_likelihood) + "\t";
  if (options.sentence_likelihood) columns += FormatJavaDouble(s.likelihood) + "\t";
  if (options.confidence) {
    columns += FormatJavaDouble(s.confidence) + "\t";
  } else if (options.model_score) {
    if (std::isinf(s.model_score)) {
      columns += "-Infinity\t";
    } else {
      char text[64];
      std::snprintf(text, sizeof text, "%.8f\t", s.model_score);
      columns += text;
    }
  }
  return columns;
}

// A score as JSON: a number, or null for minus infinity (no tree) and NaN.
nlohmann::ordered_json JsonNumber(double value) {
  return std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
}

// The unlabelled root on one line as Berkeley prints it: "( (S ...) )".
std::string RootLine(const Tree& root, bool scores) {
  std::string line = "(";
  for (const Tree& child : root.children) line += " " + ToBracketString(child, scores);
  return line + " )";
}

// `node` below the root, over lines: on one line when it fits in `width` columns after its
// indentation or holds only words, else its label (and score) and each child on a line of its
// own, indented two more columns.
void AppendPretty(const Tree& node, bool scores, int indent, int width, std::string* out) {
  const std::string line = ToBracketString(node, scores);
  const bool preterminal = std::all_of(node.children.begin(), node.children.end(),
                                       [](const Tree& child) { return child.is_leaf(); });
  if (preterminal || indent + static_cast<int>(line.size()) <= width) {
    *out += line;
    return;
  }
  *out += "(" + node.label;
  if (scores && node.has_score()) {
    const size_t head = line.find(' ');  // "(LABEL SCORE (child ...": the score as written
    const size_t score_end = line.find(' ', head + 1);
    *out += line.substr(head, score_end - head);
  }
  for (const Tree& child : node.children) {
    *out += "\n" + std::string(indent + 2, ' ');
    AppendPretty(child, scores, indent + 2, width, out);
  }
  *out += ")";
}

}  // namespace

const std::vector<std::string>& OutputFormatNames() {
  static const std::vector<std::string> names = {"penn", "pretty", "json"};
  return names;
}

bool ParseOutputFormat(const std::string& name, OutputFormat* format) {
  if (name == "penn") {
    *format = OutputFormat::kPenn;
  } else if (name == "pretty") {
    *format = OutputFormat::kPretty;
  } else if (name == "json") {
    *format = OutputFormat::kJson;
  } else {
    return false;
  }
  return true;
}

namespace {

// The tree in the form asked for, brackets inside words and labels escaped.
Tree PrintedTree(const Tree& tree, const ResultFormatOptions& options) {
  if (!AnyBracket(tree)) return FormTree(tree, options.tree_form);
  Tree escaped = tree;
  EscapeTree(&escaped);
  return FormTree(escaped, options.tree_form);
}

// One tree as the format prints it (without score columns), ending in a newline.
std::string TreeText(const Tree& tree, const ResultFormatOptions& options) {
  const bool scores = options.tree_form.scores;
  const Tree printed = PrintedTree(tree, options);
  if (options.format != OutputFormat::kPretty) return RootLine(printed, scores) + "\n";
  return FormatPrettyTree(printed, scores);
}

// The JSON fields of one tree's asked-for scores.
void AddJsonScores(const ResultFormatOptions& options, const TreeScores& s, bool with_likelihood,
                   nlohmann::ordered_json* json) {
  if (with_likelihood && options.sentence_likelihood) {
    (*json)["log_likelihood"] = JsonNumber(s.likelihood);
  }
  if (options.tree_likelihood) (*json)["tree_log_likelihood"] = JsonNumber(s.tree_likelihood);
  if (options.confidence) (*json)["confidence"] = JsonNumber(s.confidence);
  if (options.model_score) (*json)["model_score"] = JsonNumber(s.model_score);
}

}  // namespace

std::string FormatResult(long index, const std::vector<std::string>& tokens,
                         const ParseOutcome& outcome, const ResultFormatOptions& options) {
  const bool ok = outcome.status == ParseStatus::kOk;
  const std::string tree =
      ok ? TreeText(outcome.tree, options) : std::string(kNoParseOutput) + "\n";
  const bool list = options.kbest > 1;
  if (options.format != OutputFormat::kJson) {
    if (!list) return ScoreColumns(options, ScoresOf(outcome, nullptr)) + tree;
    // Berkeley's -kbest: each tree on its line, then a blank line; (()) alone for no tree.
    std::string text;
    if (!ok || outcome.kbest.empty())
      text = ScoreColumns(options, ScoresOf(outcome, nullptr)) + tree;
    if (ok) {
      for (const ScoredTree& t : outcome.kbest) {
        text += ScoreColumns(options, ScoresOf(outcome, &t)) + TreeText(t.tree, options);
      }
    }
    return text + "\n";
  }
  auto one_line = [&](const Tree& t) {
    return RootLine(PrintedTree(t, options), options.tree_form.scores);
  };
  nlohmann::ordered_json json;
  json["index"] = index;
  json["tokens"] = tokens;
  json["tree"] = ok ? one_line(outcome.tree) : std::string(kNoParseOutput);
  json["ok"] = ok;
  AddJsonScores(options, ScoresOf(outcome, nullptr), /*with_likelihood=*/true, &json);
  if (list) {
    json["kbest"] = nlohmann::ordered_json::array();
    for (size_t i = 0; ok && i < outcome.kbest.size(); ++i) {
      const ScoredTree& t = outcome.kbest[i];
      nlohmann::ordered_json k;
      k["tree"] = one_line(t.tree);
      AddJsonScores(options, ScoresOf(outcome, &t), /*with_likelihood=*/false, &k);
      json["kbest"].push_back(std::move(k));
    }
  }
  if (!outcome.message.empty()) json["message"] = outcome.message;
  // JSON text is UTF-8: bytes that are not (tokens of --tokenized input are passed on as read)
  // become U+FFFD, as the tokenizer makes them for raw text.
  return json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string FormatPrettyTree(const Tree& printed, bool scores, int width) {
  const std::string line = RootLine(printed, scores);
  if (static_cast<int>(line.size()) <= width) return line + "\n";
  std::string out;
  if (printed.children.size() == 1) {
    // The Berkeley root "( (S ...) )": keep its child on the first line.
    out = "( ";
    AppendPretty(printed.children[0], scores, 2, width, &out);
    return out + " )\n";
  }
  out = "(";
  for (const Tree& child : printed.children) {
    out += "\n  ";
    AppendPretty(child, scores, 2, width, &out);
  }
  return out + ")\n";
}

void ResultWriter::Write(const std::string& text) {
  out_ << text;
  if (flush_each_) EndBatch();
}

void ResultWriter::EndBatch() {
  if (out_) {
    errno = 0;
    out_.flush();
  }
  CheckOutput(out_, path_);
}

bool FlushEachLine(const std::string& path) {
  if (path != "-") return false;
  struct stat info {};
  return ::fstat(STDOUT_FILENO, &info) != 0 || !S_ISREG(info.st_mode);
}

}  // namespace cky::apps
