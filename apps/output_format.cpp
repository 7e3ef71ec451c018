#include "apps/output_format.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
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

std::string JsonNumber(double value) {
  return std::isfinite(value) ? FormatJavaDouble(value) : std::string("null");
}

// A node of a bracketed string: [start, end) is its text, `head` what stands before its first
// child (the label, a score, or a preterminal's "TAG word").
struct BracketNode {
  size_t start = 0, end = 0;
  std::string head;
  std::vector<BracketNode> children;
};

BracketNode ReadNode(const std::string& text, size_t* pos) {
  BracketNode node;
  node.start = (*pos)++;  // '('
  const size_t head_start = *pos;
  while (*pos < text.size() && text[*pos] != '(' && text[*pos] != ')') ++*pos;
  node.head = text.substr(head_start, *pos - head_start);
  while (!node.head.empty() && node.head.back() == ' ') node.head.pop_back();
  while (*pos < text.size() && text[*pos] != ')') {
    if (text[*pos] == '(') {
      node.children.push_back(ReadNode(text, pos));
    } else {
      ++*pos;  // spaces between children
    }
  }
  if (*pos < text.size()) ++*pos;  // ')'
  node.end = *pos;
  return node;
}

void AppendPretty(const std::string& text, const BracketNode& node, int indent, int width,
                  std::string* out) {
  const size_t length = node.end - node.start;
  if (node.children.empty() || indent + static_cast<int>(length) <= width) {
    out->append(text, node.start, length);
    return;
  }
  if (node.head.empty() && node.children.size() == 1) {
    // The Berkeley root "( (S ...) )": keep its child on the first line.
    *out += "( ";
    AppendPretty(text, node.children[0], indent + 2, width, out);
    *out += " )";
    return;
  }
  *out += "(" + node.head;
  for (const BracketNode& child : node.children) {
    *out += "\n" + std::string(indent + 2, ' ');
    AppendPretty(text, child, indent + 2, width, out);
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

std::string TreeText(const Tree& tree, const ResultFormatOptions& options) {
  if (!AnyBracket(tree)) return FormatTree(tree, options.tree_form);
  Tree escaped = tree;
  EscapeTree(&escaped);
  return FormatTree(escaped, options.tree_form);
}

// The JSON fields of one tree's asked-for scores.
std::string JsonScores(const ResultFormatOptions& options, const TreeScores& s,
                       bool with_likelihood) {
  std::string json;
  if (with_likelihood && options.sentence_likelihood) {
    json += ",\"log_likelihood\":" + JsonNumber(s.likelihood);
  }
  if (options.tree_likelihood) json += ",\"tree_log_likelihood\":" + JsonNumber(s.tree_likelihood);
  if (options.confidence) json += ",\"confidence\":" + JsonNumber(s.confidence);
  if (options.model_score) json += ",\"model_score\":" + JsonNumber(s.model_score);
  return json;
}

}  // namespace

std::string FormatResult(long index, const std::vector<std::string>& tokens,
                         const ParseOutcome& outcome, const ResultFormatOptions& options) {
  const bool ok = outcome.status == ParseStatus::kOk;
  const std::string tree = ok ? TreeText(outcome.tree, options) : std::string(kNoParseOutput);
  const bool list = options.kbest > 1;
  switch (options.format) {
    case OutputFormat::kPenn:
    case OutputFormat::kPretty: {
      auto line = [&](const TreeScores& scores, const std::string& text) {
        return ScoreColumns(options, scores) +
               (options.format == OutputFormat::kPenn ? text + "\n" : FormatPrettyTree(text));
      };
      if (!list) return line(ScoresOf(outcome, nullptr), tree);
      // Berkeley's -kbest: each tree on its line, then a blank line; (()) alone for no tree.
      std::string text;
      if (!ok || outcome.kbest.empty()) text = line(ScoresOf(outcome, nullptr), tree);
      if (ok) {
        for (const ScoredTree& t : outcome.kbest) {
          text += line(ScoresOf(outcome, &t), TreeText(t.tree, options));
        }
      }
      return text + "\n";
    }
    case OutputFormat::kJson: {
      std::string json = "{\"index\":" + std::to_string(index) + ",\"tokens\":[";
      for (size_t i = 0; i < tokens.size(); ++i) json += (i ? "," : "") + JsonString(tokens[i]);
      json += "],\"tree\":" + JsonString(tree) + ",\"ok\":" + (ok ? "true" : "false");
      json += JsonScores(options, ScoresOf(outcome, nullptr), /*with_likelihood=*/true);
      if (list) {
        json += ",\"kbest\":[";
        for (size_t i = 0; ok && i < outcome.kbest.size(); ++i) {
          const ScoredTree& t = outcome.kbest[i];
          json += std::string(i ? "," : "") + "{\"tree\":" + JsonString(TreeText(t.tree, options)) +
                  JsonScores(options, ScoresOf(outcome, &t), false) + "}";
        }
        json += "]";
      }
      if (!outcome.message.empty()) json += ",\"message\":" + JsonString(outcome.message);
      return json + "}\n";
    }
  }
  return tree + "\n";
}

std::string FormatPrettyTree(const std::string& one_line_tree, int width) {
  if (one_line_tree.empty() || one_line_tree[0] != '(') return one_line_tree + "\n";
  size_t pos = 0;
  const BracketNode root = ReadNode(one_line_tree, &pos);
  std::string out;
  AppendPretty(one_line_tree, root, 0, width, &out);
  return out + "\n";
}

std::string JsonString(const std::string& raw) {
  // JSON text is UTF-8: bytes that are not (tokens of --tokenized input are passed on as read)
  // become U+FFFD, as the tokenizer makes them for raw text.
  std::string text;
  for (std::string_view rest = raw; !rest.empty();) {
    const size_t bad = FindInvalidUtf8(rest);
    text.append(rest.substr(0, bad));
    if (bad == std::string_view::npos) break;
    text.append("\xef\xbf\xbd");
    rest.remove_prefix(bad + 1);
  }
  std::string json = "\"";
  for (unsigned char ch : text) {
    switch (ch) {
      case '"':
        json += "\\\"";
        break;
      case '\\':
        json += "\\\\";
        break;
      case '\n':
        json += "\\n";
        break;
      case '\r':
        json += "\\r";
        break;
      case '\t':
        json += "\\t";
        break;
      default:
        if (ch < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", ch);
          json += escaped;
        } else {
          json += static_cast<char>(ch);  // UTF-8 passes through
        }
    }
  }
  return json + "\"";
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
