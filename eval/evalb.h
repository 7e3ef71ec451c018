// Bracket scoring that prints the numbers EVALB prints (Sekine & Collins 1997; the 2006 release
// with David Ellis's length-mismatch fix and F-measure), from trees read by treebank/reader.h.
//
// Per sentence (gold tree, test tree), as EVALB:
//  * Words: the leaves of preterminals, minus those whose tag is a DELETE_LABEL (compared with the
//    raw tag, exactly). The length shown and used for the cutoff counts the gold leaves whose tag
//    is not a DELETE_LABEL_FOR_LENGTH, deleted or not.
//  * Brackets: every constituent above the preterminals, the root included, with its word span.
//    A bracket spanning no word is ignored; the others have their label cut at the first '-' or
//    '=' (so "-NONE-" as a phrase label becomes "") and are ignored when that label equals a
//    DELETE_LABEL under EQ_LABEL.
//  * Status 2 (skip) when the test sentence has no words; status 1 (error) when the word counts
//    differ (after undoing QUOTE_LABEL deletions as EVALB does) or a word differs under EQ_WORD,
//    or a tree could not be read. Skip and error sentences count in "Number of sentence" and in the
//    cutoff block by gold length, and nowhere else.
//  * Matching: each gold bracket, in preorder, takes the first unmatched test bracket, in preorder,
//    with the same span and (LABELED 1) an equal label under EQ_LABEL. With duplicates this gives
//    min(gold, test) matches per span and label, as EVALB's README describes.
//  * Crossing: test brackets that overlap some gold bracket without nesting either way.
//  * Tags: gold and test tags equal under EQ_LABEL, over the words kept.
//
// Where we deliberately differ from EVALB (no number EVALB prints changes):
//  * No limits: EVALB overflows fixed arrays beyond 200 words or brackets, 100-byte words, 30-byte
//    labels, 5000-byte lines (it splits longer lines into several sentences); we have none, and
//    trees may span several lines (a multi-line file pairs tree by tree).
//  * Malformed trees: a word beside a constituent makes EVALB repeat an error until MAX_ERROR ends
//    it (no summary); extra ')' reads out of bounds; a missing ')' is scored on a partial
//    bracketing that EVALB prints on the sentence line but leaves out of the totals. We count one
//    error for the tree and print it as an error sentence (status 1) with zero counts, so the
//    totals are EVALB's wherever EVALB prints totals, while that sentence line and the error count
//    (hence where MAX_ERROR stops) can differ.
//  * MAX_ERROR: EVALB exits, without a summary, at the error that makes its count exceed
//    MAX_ERROR + 1; EvalbRun reproduces that stop (the caller decides what to print; `cky eval
//    --no-error-limit` lifts it).
//  * A line holding several trees ("(A x) (B y)") is one sentence in EVALB; it is for us too when
//    the reader is told so (TreeReaderOptions::several_trees_per_line), as WriteEvalbReport does.
#pragma once

#include <functional>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "eval/evalb_params.h"
#include "treebank/reader.h"
#include "treebank/tree.h"

namespace cky {

// One tree as EVALB sees it.
struct EvalbSentence {
  struct Terminal {
    std::string word;
    std::string tag;
  };
  struct Bracket {
    int start = 0;
    int end = 0;        // exclusive
    std::string label;  // as written; function tags are cut when scoring
  };
  // A preterminal listed in QUOTE_LABEL whose word is ', " or /, kept for EVALB's length fix-up.
  struct QuoteTerm {
    Terminal terminal;
    int word_index = 0;              // words kept before it
    int bracket_index = 0;           // brackets opened before it
    std::vector<int> open_brackets;  // brackets enclosing it
  };

  std::vector<Terminal> terminals;  // words kept, left to right
  std::vector<Bracket> brackets;    // preorder
  std::vector<QuoteTerm> quote_terms;
  int length = 0;     // words whose tag is not in DELETE_LABEL_FOR_LENGTH
  std::string error;  // non-empty when the tree cannot be scored (EVALB's wording)
};

// Converts the trees of one sentence (usually one; none for an empty line).
EvalbSentence MakeEvalbSentence(const std::vector<const Tree*>& trees, const EvalbParams& params);
// A sentence that could not be read: no words, and `error` set.
EvalbSentence MakeUnreadableSentence(std::string error);

// The per-sentence line of EVALB's report.
struct EvalbSentenceResult {
  int id = 0;      // 1-based sentence number (EVALB: the gold line number)
  int length = 0;  // gold length for the cutoff
  int status = 0;  // 0 scored, 1 error, 2 skip
  int gold_brackets = 0;
  int test_brackets = 0;
  int matched = 0;
  int crossing = 0;
  int words = 0;
  int correct_tags = 0;
  std::vector<std::string> errors;  // in the order EVALB reports them, e.g. "Length unmatch (4|5)"
};

// Scores one sentence pair.
EvalbSentenceResult ScoreEvalbSentence(int id, const EvalbSentence& gold, const EvalbSentence& test,
                                       const EvalbParams& params);

// Sums of a summary block.
struct EvalbTotals {
  int sentences = 0, error_sentences = 0, skip_sentences = 0;
  long gold_brackets = 0, test_brackets = 0, matched = 0;
  long complete_match = 0, words = 0, crossing = 0, no_crossing = 0, two_or_less_crossing = 0;
  long correct_tags = 0;
  void Add(const EvalbSentenceResult& result);
};

// Scores a stream of sentence pairs, counting errors the way EVALB does.
class EvalbRun {
 public:
  explicit EvalbRun(EvalbParams params) : params_(std::move(params)) {}

  // Scores the next pair. Returns false when EVALB would have exited on one of this sentence's
  // errors (too many errors): the sentence then has no line and the run is over.
  bool Add(const EvalbSentence& gold, const EvalbSentence& test, EvalbSentenceResult* result);
  // The gold file has more sentences than the test file (EVALB stops reading there) or the
  // reverse. Returns false when this error is one too many. Messages as EVALB's.
  bool AddLineCountMismatch(bool gold_longer, std::string* message);

  const EvalbTotals& all() const { return all_; }
  const EvalbTotals& up_to_cutoff() const { return up_to_cutoff_; }
  const EvalbParams& params() const { return params_; }
  int error_count() const { return error_count_; }

 private:
  bool CountError();  // false when EVALB would exit

  EvalbParams params_;
  EvalbTotals all_;
  EvalbTotals up_to_cutoff_;
  int sentences_ = 0;
  int error_count_ = 0;
};

// The numbers of one summary block, computed with EVALB's own expressions (so that each rounds to
// what EVALB prints, "%6.2f"; where nothing matched, F-measure 0 instead of EVALB's 0/0 NaN).
struct EvalbSummary {
  int sentences = 0, error_sentences = 0, skip_sentences = 0;
  long valid_sentences = 0;
  long matched_brackets = 0, gold_brackets = 0, test_brackets = 0, words = 0, correct_tags = 0;
  double recall = 0, precision = 0, f_measure = 0;   // percentages
  double complete_match = 0;                         // percentage of valid sentences
  double average_crossing = 0;                       // crossing brackets per valid sentence
  double no_crossing = 0, two_or_less_crossing = 0;  // percentages of valid sentences
  double tagging_accuracy = 0;                       // percentage of words
};
EvalbSummary SummarizeEvalb(const EvalbTotals& totals);

// EVALB's report, piece by piece (each with its trailing newline).
std::string FormatEvalbHeader();
std::string FormatEvalbSentenceLine(const EvalbSentenceResult& result);
// The totals line, "=== Summary ===", and the two blocks (all, len<=cutoff).
std::string FormatEvalbSummary(const EvalbRun& run);

// The report as JSON: {"sentences": [one object per sentence, unless !sentence_lines], "all":
// {...}, "cutoff": {...}}. A block holds the counts and EVALB's percentages unrounded:
// {"cutoff_length", "sentences", "error_sentences", "skip_sentences", "valid_sentences",
//  "matched", "gold_brackets", "test_brackets", "recall", "precision", "f1", "complete_match",
//  "average_crossing", "no_crossing", "two_or_less_crossing", "tagging_accuracy"}; "f1" is 0 (not
// NaN) when nothing matched.
std::string FormatEvalbJsonSentence(const EvalbSentenceResult& result);
std::string FormatEvalbJsonSummary(const EvalbRun& run);

struct EvalbReportOptions {
  TreeLayout layout = TreeLayout::kAuto;  // of both files
  bool sentence_lines = true;             // false: only the totals line and the summary
  // Read a root labelled ROOT or TOP, in either file, as the unlabelled root "( ...)" that the
  // Berkeley parser prints: a gold "(ROOT (S ...))" then scores as "( (S ...))", as after
  // `sed 's/^(ROOT /( /'`. (EVALB counts the root bracket: "ROOT" against "" is a miss.)
  bool strip_root = false;
  // The report as one JSON object instead of EVALB's text (see FormatEvalbJson).
  bool json = false;
  // Called with each error message as EVALB words it, prefixed "ID : ".
  std::function<void(const std::string&)> on_error;
};

// Scores the trees of `test` against those of `gold`, pairing them in order, into `run`, and gives
// each scored sentence's result to `on_sentence` (when set). Returns false when EVALB would have
// stopped on too many errors (params.max_error); `run` then holds what was scored until then.
bool ScoreEvalb(std::istream& gold, const std::string& gold_name, std::istream& test,
                const std::string& test_name, const EvalbReportOptions& options, EvalbRun* run,
                const std::function<void(const EvalbSentenceResult&)>& on_sentence = {});

// Scores the trees of `test` against those of `gold`, pairing them in order, and writes EVALB's
// report to `out`: header, one line per sentence, summary. Returns false, with the summary left
// out, when EVALB would have stopped on too many errors (params.max_error).
bool WriteEvalbReport(std::istream& gold, const std::string& gold_name, std::istream& test,
                      const std::string& test_name, const EvalbParams& params,
                      const EvalbReportOptions& options, std::ostream& out);

}  // namespace cky
