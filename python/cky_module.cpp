// cky._cky: the C++ side of the Python package (python/README.md). The public API is the Python
// module cky (python/cky/__init__.py), which checks arguments and builds nltk.Tree objects; this
// module only crosses the language boundary:
//   - Parser: a LoadedParser (parser/loaded_parser.h, what `cky parse` uses) and the project's
//     tokenizer, one call at a time (a mutex), the GIL released while loading, tokenizing and
//     parsing so that other Python threads run meanwhile;
//   - evalb: eval/evalb.h's scoring of two tree streams, EVALB's summary numbers as dicts.
// Library errors (Status) become cky.Error, a RuntimeError, with the library's message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <climits>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/input_file.h"
#include "cuda/common/device.h"
#include "eval/evalb.h"
#include "eval/evalb_params.h"
#include "grammar_io/grammar_argument.h"
#include "parser/loaded_parser.h"
#include "parser/multi_device_backend.h"
#include "parser/tree_format.h"
#include "text/token_convention.h"
#include "text/tokenizer.h"

namespace py = pybind11;

namespace cky::python {
namespace {

// Raised as cky.Error (registered below).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void ThrowIfError(const Status& status) {
  if (!status.ok()) throw Error(status.message());
}

struct ParserSettings {
  std::string grammar;  // "" = the built-in grammar
  std::string backend;
  std::string decoder;
  std::string kernel;
  std::string prune;
  bool accurate = false;
  int threads = 0;
  int max_length = 0;
  double min_rule_prob = -1.0;
  bool use_cache = true;
  std::string hyphens = "auto";       // "auto", "split" or "keep" (`cky parse --hyphens`)
  std::string token_style = "auto";   // "auto", "ptb", "gum", "given" (`cky parse --token-style`)
  std::string devices;                // `cky parse --devices`: "" = one backend
  bool backoff = false;               // `cky parse --backoff`
  bool retry = true;                  // false: `cky parse --no-retry`
  int kbest = 1;                      // max-rule: the K best trees of each sentence
  std::string kbest_style = "exact";  // "exact" or "berkeley" (`cky parse --kbest-style`)
  bool tree_scores = false;           // log P(T, w) and log P(T | w) of every tree
  OutputForm form;                    // bracketed strings: --binarize, --substates, --scores
};

// `tree` (root label "") as nested factory(label, children) calls, leaves as str. Iterative, so
// that no tree is too deep for the C++ stack: each node's children are built before it, from
// the deepest up (a post-order walk with an explicit stack).
py::object BuildTree(const Tree& tree, const py::object& factory) {
  if (tree.is_leaf()) return py::str(tree.label);
  struct Frame {
    explicit Frame(const Tree* n) : node(n) {}
    const Tree* node;
    size_t next_child = 0;
    py::list children;
  };
  std::vector<Frame> stack;
  stack.emplace_back(&tree);
  py::object built;
  while (true) {
    Frame& top = stack.back();
    if (top.next_child < top.node->children.size()) {
      const Tree& child = top.node->children[top.next_child++];
      if (child.is_leaf()) {
        top.children.append(py::str(child.label));
      } else {
        stack.emplace_back(&child);  // `top` may dangle from here on
      }
      continue;
    }
    built = factory(py::str(top.node->label), top.children);
    stack.pop_back();
    if (stack.empty()) return built;
    stack.back().children.append(built);
  }
}

// A chain of `depth` nodes over one word, built with BuildTree: the tests' check that a deep tree
// converts (python/tests). The chain is taken apart from the bottom so that its destruction is
// not recursive either.
py::object ChainTreeForTest(int depth, const py::object& factory) {
  Tree root("X");
  Tree* node = &root;
  for (int i = 1; i < depth; ++i) {
    node->children.emplace_back("X");
    node = &node->children.back();
  }
  node->children.emplace_back("w");
  py::object built = BuildTree(root, factory);
  std::vector<Tree> parts;
  for (Tree* at = &root; !at->children.empty();) {
    parts.push_back(std::move(at->children.back()));
    at->children.clear();
    at = &parts.back();
  }
  while (!parts.empty()) parts.pop_back();  // each is a leaf or childless by now
  return built;
}

class Parser {
 public:
  explicit Parser(const ParserSettings& settings) : settings_(settings) {
    StatusOr<std::unique_ptr<LoadedParser>> loaded = Status::Error("not loaded");
    std::vector<int> devices;
    if (!settings.devices.empty()) {
      auto listed = ParseDeviceList(settings.devices, cuda::DeviceCount());
      if (!listed.ok()) {
        std::string why = listed.status().message();
        const std::string cli = "--devices " + settings.devices + ": ";  // the command's words
        if (why.rfind(cli, 0) == 0) why.erase(0, cli.size());
        throw py::value_error("devices='" + settings.devices + "': " + why);
      }
      devices = *listed;
    }
    auto backend =
        ParseBackendOptions(settings.backend, settings.decoder,
                            settings.accurate ? "accurate" : settings.prune, settings.kbest_style,
                            {.threads = settings.threads,
                             .kernel = settings.kernel,
                             .devices = devices,
                             .kbest = settings.kbest});
    ThrowIfError(backend.status());
    {
      py::gil_scoped_release release;
      loaded = LoadedParser::Load({.grammar = settings.grammar,
                                   .grammar_options = {.min_rule_prob = settings.min_rule_prob,
                                                       .use_cache = settings.use_cache},
                                   .lexicon = {.backoff_unknown_words = settings.backoff},
                                   .backend = *backend,
                                   .parser = {.max_length = settings.max_length,
                                              .retry_with_wider_lexicon = settings.retry,
                                              .tree_likelihood = settings.tree_scores,
                                              .confidence = settings.tree_scores}});
    }
    ThrowIfError(loaded.status());
    loaded_ = std::move(*loaded);
    auto convention =
        ResolveTokenConvention(settings.token_style, settings.hyphens, loaded_->model());
    ThrowIfError(convention.status());
    convention_ = *convention;
  }

  // One (tree, message) pair per sentence, in order: tree is the bracketed string `cky parse`
  // prints, or factory's object when a factory is given; None when the sentence got no tree
  // (message says why). A tree may carry a message too (e.g. parsed on the CPU after the GPU
  // failed).
  py::list Parse(const std::vector<std::vector<std::string>>& sentences,
                 const py::object& factory) {
    const std::vector<ParseOutcome> outcomes = Outcomes(sentences);
    py::list results;
    for (const ParseOutcome& outcome : outcomes) {
      py::object tree = py::none();
      if (outcome.status == ParseStatus::kOk) {
        tree = factory.is_none() ? py::object(py::str(FormatOutcome(outcome, settings_.form)))
                                 : BuildTree(Debinarize(outcome.tree), factory);
      }
      results.append(py::make_tuple(tree, outcome.message));
    }
    return results;
  }

  // One dict per sentence, in order, with what `cky parse --format json` reports: "tree" (as
  // Parse's, None without one), "message", "model_score" (the max-rule score or the Viterbi
  // log-score: Berkeley's -modelScore), "log_likelihood" (log P(w); Viterbi: the best derivation's
  // score), and with tree_scores "tree_log_likelihood" (log P(T, w)) and "confidence" (log P(T |
  // w)); with kbest > 1 "kbest", a list of dicts (tree, model_score, the tree scores), best first.
  // Scores of a sentence without a tree are None.
  py::list ParseScored(const std::vector<std::vector<std::string>>& sentences,
                       const py::object& factory) {
    const std::vector<ParseOutcome> outcomes = Outcomes(sentences);
    auto score = [](double value) -> py::object {
      return value == kNegInf ? py::object(py::none()) : py::object(py::float_(value));
    };
    auto tree_of = [&](const Tree& tree) -> py::object {
      return factory.is_none() ? py::object(py::str(FormatTree(tree, settings_.form)))
                               : BuildTree(Debinarize(tree), factory);
    };
    py::list results;
    for (const ParseOutcome& outcome : outcomes) {
      const bool ok = outcome.status == ParseStatus::kOk;
      py::dict d;
      d["tree"] = ok ? tree_of(outcome.tree) : py::object(py::none());
      d["message"] = outcome.message;
      d["model_score"] = ok ? score(outcome.log_score) : py::object(py::none());
      d["log_likelihood"] = ok ? score(outcome.log_likelihood) : py::object(py::none());
      if (settings_.tree_scores) {
        d["tree_log_likelihood"] = ok ? score(outcome.tree_log_likelihood) : py::object(py::none());
        d["confidence"] = ok ? score(outcome.confidence) : py::object(py::none());
      }
      if (settings_.kbest > 1) {
        py::list kbest;
        for (const ScoredTree& t : outcome.kbest) {
          py::dict k;
          k["tree"] = tree_of(t.tree);
          k["model_score"] = score(t.log_score);
          if (settings_.tree_scores) {
            k["tree_log_likelihood"] = score(t.tree_log_likelihood);
            k["confidence"] = score(t.confidence);
          }
          kbest.append(k);
        }
        d["kbest"] = kbest;
      }
      results.append(d);
    }
    return results;
  }

  // The sentences of raw text, tokenized into the parser's convention (as `cky parse` does).
  std::vector<std::vector<std::string>> Tokenize(const std::string& text) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    Tokenizer& tokenizer = TokenizerLocked();
    std::vector<std::vector<std::string>> sentences = tokenizer.SplitAndTokenize(text);
    for (auto& tokens : sentences) ApplyTokenConvention(convention_, &tokens, &tokenizer);
    return sentences;
  }

  // The convention's choices, for Python: quotes ("ptb" or "gum"), backtick, escaped_square,
  // escaped_curly, split_hyphens, rewrite.
  py::dict convention() const {
    py::dict d;
    d["quotes"] = convention_.quotes == TokenStyle::kGum ? "gum" : "ptb";
    d["backtick"] = convention_.backtick;
    d["escaped_square"] = convention_.escaped_square;
    d["escaped_curly"] = convention_.escaped_curly;
    d["split_hyphens"] = convention_.split_hyphens;
    d["rewrite"] = convention_.rewrite;
    return d;
  }

  std::string backend_name() { return loaded_->parser().backend().name(); }

 private:
  // The parse, one call at a time, with the GIL released.
  // The tokens are first rewritten into the grammar's convention (text/token_convention.h), as
  // `cky parse` does whatever the input form.
  std::vector<ParseOutcome> Outcomes(std::vector<std::vector<std::string>> sentences) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    Tokenizer& tokenizer = TokenizerLocked();
    for (auto& tokens : sentences) ApplyTokenConvention(convention_, &tokens, &tokenizer);
    return loaded_->Parse(sentences);
  }

  // The tokenizer of the convention, made on first use; mutex_ held.
  Tokenizer& TokenizerLocked() {
    if (!tokenizer_) {
      auto tokenizer = Tokenizer::Create(TokenizerOptionsFor(convention_));
      ThrowIfError(tokenizer.status());
      tokenizer_ = std::move(*tokenizer);
    }
    return *tokenizer_;
  }

  ParserSettings settings_;
  std::unique_ptr<LoadedParser> loaded_;
  TokenConvention convention_;
  std::optional<Tokenizer> tokenizer_;  // made on first use
  std::mutex mutex_;                    // LoadedParser and Tokenizer take one call at a time
};

py::dict SummaryDict(const EvalbTotals& totals) {
  const EvalbSummary s = SummarizeEvalb(totals);
  py::dict d;
  d["recall"] = s.recall;
  d["precision"] = s.precision;
  d["f1"] = s.f_measure;
  d["complete_match"] = s.complete_match;
  d["average_crossing"] = s.average_crossing;
  d["no_crossing"] = s.no_crossing;
  d["two_or_less_crossing"] = s.two_or_less_crossing;
  d["tagging_accuracy"] = s.tagging_accuracy;
  d["sentences"] = s.sentences;
  d["error_sentences"] = s.error_sentences;
  d["skip_sentences"] = s.skip_sentences;
  d["valid_sentences"] = s.valid_sentences;
  d["matched_brackets"] = s.matched_brackets;
  d["gold_brackets"] = s.gold_brackets;
  d["test_brackets"] = s.test_brackets;
  d["words"] = s.words;
  d["correct_tags"] = s.correct_tags;
  return d;
}

// An input of evalb: a file (plain or gzipped) or trees already in memory.
struct TreeSource {
  std::string name;  // for messages: the path, or "gold"/"test"
  std::unique_ptr<InputFile> file;
  std::istringstream text;
  std::istream& stream() { return file ? file->stream() : text; }
};

void OpenTreeSource(const std::string& path_or_text, bool is_path, const std::string& role,
                    TreeSource* source) {
  if (is_path) {
    auto file = InputFile::Open(path_or_text);
    ThrowIfError(file.status());
    source->name = path_or_text;
    source->file = std::move(*file);
  } else {
    source->name = role;
    source->text.str(path_or_text);
  }
}

// EVALB's summary of `test` against `gold` (see cky.evalb). `layout`: "auto", "line" or
// "multiline"; cutoff and max_error < 0 keep the parameter file's (or COLLINS.prm's) values.
py::dict Evalb(const std::string& gold, bool gold_is_path, const std::string& test,
               bool test_is_path, const std::string& params_path, int cutoff, int max_error,
               const std::string& layout, bool strip_root) {
  EvalbParams params = EvalbParams::Collins();
  std::vector<std::string> warnings;
  if (!params_path.empty()) {
    auto read = ReadEvalbParamsFile(params_path, &warnings);
    ThrowIfError(read.status());
    params = std::move(*read);
  }
  if (cutoff >= 0) params.cutoff_len = cutoff;
  if (max_error >= 0) params.max_error = max_error;

  TreeSource gold_source, test_source;
  OpenTreeSource(gold, gold_is_path, "gold", &gold_source);
  OpenTreeSource(test, test_is_path, "test", &test_source);
  for (TreeSource* source : {&gold_source, &test_source}) {  // as `cky eval`
    if (source->stream().peek() == std::char_traits<char>::eof() && !source->stream().bad()) {
      throw Error(source->name + ": " + (source->file ? "the file is empty" : "no trees") +
                  ": nothing to score");
    }
  }
  EvalbReportOptions options;
  options.layout = layout == "line"        ? TreeLayout::kOnePerLine
                   : layout == "multiline" ? TreeLayout::kMultiLine
                                           : TreeLayout::kAuto;
  options.strip_root = strip_root;
  std::vector<std::string> errors;
  options.on_error = [&errors](const std::string& message) { errors.push_back(message); };
  EvalbRun run(params);
  bool complete = false;
  {
    py::gil_scoped_release release;
    complete = ScoreEvalb(gold_source.stream(), gold_source.name, test_source.stream(),
                          test_source.name, options, &run);
  }
  if (!complete) {
    std::string message = "stopped after too many errors, as EVALB does with MAX_ERROR " +
                          std::to_string(params.max_error) +
                          " (no summary; no_error_limit=True scores every sentence). Errors:";
    for (const std::string& error : errors) message += "\n  " + error;
    throw Error(message);
  }
  py::dict result = SummaryDict(run.all());
  result["cutoff_len"] = params.cutoff_len;
  result["up_to_cutoff"] = SummaryDict(run.up_to_cutoff());
  result["errors"] = errors;
  result["warnings"] = warnings;
  return result;
}

}  // namespace
}  // namespace cky::python

PYBIND11_MODULE(_cky, m) {
  using namespace cky::python;
  m.doc() = "The C++ side of the cky package; use the cky module's API.";
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);

  py::class_<ParserSettings>(m, "ParserSettings")
      .def(py::init<>())
      .def_readwrite("grammar", &ParserSettings::grammar)
      .def_readwrite("backend", &ParserSettings::backend)
      .def_readwrite("decoder", &ParserSettings::decoder)
      .def_readwrite("kernel", &ParserSettings::kernel)
      .def_readwrite("prune", &ParserSettings::prune)
      .def_readwrite("accurate", &ParserSettings::accurate)
      .def_readwrite("threads", &ParserSettings::threads)
      .def_readwrite("max_length", &ParserSettings::max_length)
      .def_readwrite("min_rule_prob", &ParserSettings::min_rule_prob)
      .def_readwrite("use_cache", &ParserSettings::use_cache)
      .def_readwrite("hyphens", &ParserSettings::hyphens)
      .def_readwrite("token_style", &ParserSettings::token_style)
      .def_readwrite("devices", &ParserSettings::devices)
      .def_readwrite("backoff", &ParserSettings::backoff)
      .def_readwrite("retry", &ParserSettings::retry)
      .def_property(
          "binarize", [](const ParserSettings& s) { return s.form.binarize; },
          [](ParserSettings& s, bool v) { s.form.binarize = v; })
      .def_property(
          "substates", [](const ParserSettings& s) { return s.form.substates; },
          [](ParserSettings& s, bool v) { s.form.substates = v; })
      .def_property(
          "scores", [](const ParserSettings& s) { return s.form.scores; },
          [](ParserSettings& s, bool v) { s.form.scores = v; })
      .def_readwrite("kbest", &ParserSettings::kbest)
      .def_readwrite("kbest_style", &ParserSettings::kbest_style)
      .def_readwrite("tree_scores", &ParserSettings::tree_scores);

  py::class_<Parser>(m, "Parser")
      .def(py::init<const ParserSettings&>())
      .def("parse", &Parser::Parse, py::arg("sentences"), py::arg("factory"))
      .def("parse_scored", &Parser::ParseScored, py::arg("sentences"), py::arg("factory"))
      .def("tokenize", &Parser::Tokenize, py::arg("text"))
      .def_property_readonly("convention", &Parser::convention)
      .def_property_readonly("backend_name", &Parser::backend_name);

  m.def("evalb", &Evalb, py::arg("gold"), py::arg("gold_is_path"), py::arg("test"),
        py::arg("test_is_path"), py::arg("params_path"), py::arg("cutoff"), py::arg("max_error"),
        py::arg("layout"), py::arg("strip_root"));
  m.attr("NO_ERROR_LIMIT") = INT_MAX;
  m.def("_chain_tree_for_test", &ChainTreeForTest, py::arg("depth"), py::arg("factory"));
}
