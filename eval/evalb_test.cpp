#include "eval/evalb.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/input_file.h"
#include "treebank/reader.h"

namespace cky {
namespace {

const std::string kData = "tests/data/evalb/";

std::string Slurp(const std::string& path) {
  auto text = ReadWholeFile(path);
  EXPECT_TRUE(text.ok()) << text.status().message();
  return text.ok() ? *text : "";
}

// Scores the two files and returns the report; `messages` collects the error lines.
std::string Report(const std::string& gold_path, const std::string& test_path,
                   const EvalbParams& params, bool* complete,
                   std::vector<std::string>* messages = nullptr) {
  std::ifstream gold(gold_path);
  std::ifstream test(test_path);
  EXPECT_TRUE(gold && test) << gold_path << " " << test_path;
  EvalbReportOptions options;
  options.on_error = [&](const std::string& message) {
    if (messages != nullptr) messages->push_back(message);
  };
  std::ostringstream out;
  *complete = WriteEvalbReport(gold, gold_path, test, test_path, params, options, out);
  return out.str();
}

EvalbSentence Sentence(const std::string& text, const EvalbParams& params) {
  ReadTreebankOptions options;
  options.reader.several_trees_per_line = true;
  auto trees = ReadTreesFromString(text, options);
  EXPECT_TRUE(trees.ok()) << trees.status().message();
  if (!trees.ok()) return MakeUnreadableSentence(trees.status().message());
  std::vector<const Tree*> pointers;
  for (const Tree& tree : *trees) pointers.push_back(&tree);
  return MakeEvalbSentence(pointers, params);
}

EvalbSentenceResult Score(const std::string& gold, const std::string& test,
                          const EvalbParams& params = EvalbParams::Collins()) {
  return ScoreEvalbSentence(1, Sentence(gold, params), Sentence(test, params), params);
}

TEST(EvalbParamsTest, CollinsFileEqualsBuiltInDefaults) {
  std::vector<std::string> warnings;
  auto params = ReadEvalbParamsFile(kData + "params/COLLINS.prm", &warnings);
  ASSERT_TRUE(params.ok()) << params.status().message();
  EXPECT_TRUE(warnings.empty());
  const EvalbParams collins = EvalbParams::Collins();
  EXPECT_EQ(params->max_error, collins.max_error);
  EXPECT_EQ(params->cutoff_len, collins.cutoff_len);
  EXPECT_EQ(params->labeled, collins.labeled);
  EXPECT_EQ(params->delete_labels, collins.delete_labels);
  EXPECT_EQ(params->delete_labels_for_length, collins.delete_labels_for_length);
  EXPECT_EQ(params->eq_labels, collins.eq_labels);
  EXPECT_TRUE(params->eq_words.empty());
}

TEST(EvalbParamsTest, ParsesLikeEvalb) {
  EvalbParams params;
  std::vector<std::string> warnings = ApplyEvalbParams(
      "# comment\nLABELED 0   \r\nCUTOFF_LEN 15\nDELETE_LABEL a b\nEQ_LABEL X\nEQ_WORD Foo foo\n"
      "DEBUG 2\nQUOTE_LABEL POS\nNONSENSE 1\nxx\n",
      "my.prm", &params);
  EXPECT_FALSE(params.labeled);
  EXPECT_EQ(params.cutoff_len, 15);
  EXPECT_EQ(params.delete_labels, (std::vector<std::string>{"a b"}));
  EXPECT_TRUE(params.eq_labels.empty());
  ASSERT_EQ(params.eq_words.size(), 1u);
  EXPECT_EQ(params.eq_words[0].second, "foo");
  EXPECT_EQ(params.quote_labels, (std::vector<std::string>{"POS"}));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], "my.prm:5: EQ_LABEL requires two values");
  EXPECT_EQ(warnings[1], "my.prm:9: unknown keyword (NONSENSE 1)");
}

TEST(EvalbTest, DuplicateBracketsMatchAtMostAsOftenAsTheyOccur) {
  // Gold has NP over "a b" twice, test three times: 2 matched of 3 test NPs.
  auto r = Score("(S (NP (NP (DT a) (NN b))) (VP (VB c)))",
                 "(S (NP (NP (NP (DT a) (NN b)))) (VP (VB c)))");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.gold_brackets, 4);
  EXPECT_EQ(r.test_brackets, 5);
  EXPECT_EQ(r.matched, 4);
  r = Score("(S (NP (NP (NP (DT a) (NN b)))) (VP (VB c)))",
            "(S (NP (NP (DT a) (NN b))) (VP (VB c)))");
  EXPECT_EQ(r.matched, 4);
  EXPECT_EQ(r.gold_brackets, 5);
}

TEST(EvalbTest, CrossingCountsTestBrackets) {
  auto r =
      Score("(S (NP (DT a) (NN b)) (VP (VB c) (NN d)))", "(S (DT a) (X (NN b) (VB c)) (NN d))");
  EXPECT_EQ(r.crossing, 1);  // X crosses both NP and VP but counts once
  EXPECT_EQ(r.matched, 1);   // S
}

TEST(EvalbTest, DeletionFunctionTagsAndEquivalences) {
  // PRT = ADVP under COLLINS.prm; NP-SBJ is NP; TOP and punctuation are not brackets/words;
  // a bracket over only deleted words is ignored.
  auto r = Score("(TOP (S (NP-SBJ (PRP I)) (VP (VBD gave) (ADVP (RB up))) (. .)))",
                 "(TOP (S (NP (PRP I)) (VP (VBD gave) (PRT (RP up))) (X (. .))))");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.length, 4);  // the full stop counts in the length...
  EXPECT_EQ(r.words, 3);   // ...but is not scored
  EXPECT_EQ(r.gold_brackets, 4);
  EXPECT_EQ(r.test_brackets, 4);
  EXPECT_EQ(r.matched, 4);
  EXPECT_EQ(r.correct_tags, 2);
}

TEST(EvalbTest, UnlabeledIgnoresLabels) {
  EvalbParams params = EvalbParams::Collins();
  params.labeled = false;
  auto r =
      Score("(S (NP (DT a) (NN b)) (VP (VB c)))", "(S (VP (DT a) (NN b)) (NP (VB c)))", params);
  EXPECT_EQ(r.matched, 3);
}

TEST(EvalbTest, LengthAndWordMismatchesAreErrorSentences) {
  auto r = Score("(S (NP (DT a) (NN b)))", "(S (NP (DT a)))");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.errors, (std::vector<std::string>{"Length unmatch (2|1)"}));
  r = Score("(S (NP (DT a) (NN b)))", "(S (NP (DT a) (NN c)))");
  EXPECT_EQ(r.errors, (std::vector<std::string>{"Words unmatch (b|c)"}));
  EXPECT_EQ(r.matched, 0);
}

TEST(EvalbTest, QuoteFixUpReinsertsADeletedQuote) {
  EvalbParams params = EvalbParams::Collins();
  params.quote_labels = {"''", "POS"};
  auto r = Score("(S (NP (NNS dogs) ('' ')) (VP (VBD ran)))",
                 "(S (NP (NNS dogs) (POS ')) (VP (VBD ran)))", params);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.words, 3);
  EXPECT_EQ(r.matched, 3);
  EXPECT_EQ(r.correct_tags, 2);
  r = Score("(S (NP (NNS dogs) ('' ')) (VP (VBD ran)))",
            "(S (NP (NNS dogs) (POS ')) (VP (VBD ran)))");
  EXPECT_EQ(r.status, 1);  // without QUOTE_LABEL
}

TEST(EvalbTest, EmptyTestIsSkippedAndMalformedIsAnError) {
  EvalbParams params = EvalbParams::Collins();
  auto r =
      ScoreEvalbSentence(1, Sentence("(S (NN a))", params), MakeEvalbSentence({}, params), params);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.length, 1);
  r = ScoreEvalbSentence(1, Sentence("(S (NN a))", params), Sentence("(S (NN a) b)", params),
                         params);
  EXPECT_EQ(r.status, 1);
  ASSERT_EQ(r.errors.size(), 1u);
}

TEST(EvalbTest, SeveralTreesOnALineAreOneSentence) {
  // EVALB's sample line 8: "(P this) (Q is) (R a) (T test)" has four words and no brackets.
  EvalbParams params = EvalbParams::Collins();
  auto test = Sentence("(P this) (Q is)", params);
  EXPECT_EQ(test.terminals.size(), 2u);
  EXPECT_TRUE(test.brackets.empty());
}

TEST(EvalbTest, ErrorMessagesNameTheNodeEvalbCannotRead) {
  EvalbParams params = EvalbParams::Collins();
  EXPECT_EQ(Sentence("(S (NP (NN a) b) (VP c))", params).error,
            "More than two elements in a bracket (NP)");
  const Tree word("b");  // the reader never gives one, but trees can be made by hand
  EXPECT_EQ(MakeEvalbSentence({&word}, params).error,
            "Reading sentence (a word outside a preterminal: b)");
}

TEST(EvalbTest, TreesDeeperThanTheStackAreScored) {
  // 500,000 nested brackets over one word: the recursive walk overflowed the stack (`cky eval`
  // died with SIGSEGV at 50,000).
  constexpr int kDepth = 500000;
  std::string deep;
  for (int i = 0; i < kDepth; ++i) deep += "(X ";
  deep += "(NN w)";
  deep.append(kDepth, ')');
  EvalbParams params = EvalbParams::Collins();
  const EvalbSentence sentence = Sentence(deep, params);
  EXPECT_TRUE(sentence.error.empty()) << sentence.error;
  ASSERT_EQ(sentence.brackets.size(), size_t(kDepth));
  EXPECT_EQ(sentence.brackets.back().end, 1);
  auto r = ScoreEvalbSentence(1, Sentence("(X (NN w))", params), sentence, params);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.matched, 1);
  EXPECT_EQ(r.test_brackets, kDepth);
}

TEST(EvalbReportTest, EvalbSampleIsIdentical) {
  auto params = ReadEvalbParamsFile(kData + "sample/sample.prm");
  ASSERT_TRUE(params.ok());
  bool complete = false;
  std::vector<std::string> messages;
  std::string report = Report(kData + "sample/sample.gld", kData + "sample/sample.tst", *params,
                              &complete, &messages);
  EXPECT_TRUE(complete);
  EXPECT_EQ(report, Slurp(kData + "sample/sample.evalb.out"));
  EXPECT_EQ(messages,
            (std::vector<std::string>{"12 : Words unmatch (is|was)", "13 : Length unmatch (4|5)",
                                      "16 : Length unmatch (4|5)", "17 : Length unmatch (4|6)",
                                      "20 : Words unmatch (this|That)"}));
}

// ScoreEvalb + SummarizeEvalb (what `cky.evalb` returns) give the numbers EVALB printed for its
// sample (sample.evalb.out's summary blocks), and every scored sentence once.
TEST(EvalbReportTest, SummaryNumbersAreEvalbs) {
  auto params = ReadEvalbParamsFile(kData + "sample/sample.prm");
  ASSERT_TRUE(params.ok());
  std::ifstream gold(kData + "sample/sample.gld");
  std::ifstream test(kData + "sample/sample.tst");
  EvalbRun run(*params);
  std::vector<int> ids;
  ASSERT_TRUE(ScoreEvalb(gold, "gold", test, "test", {}, &run,
                         [&](const EvalbSentenceResult& result) { ids.push_back(result.id); }));
  EXPECT_EQ(ids.size(), 24u);
  EXPECT_EQ(ids.back(), 24);
  const EvalbSummary all = SummarizeEvalb(run.all());
  auto printed = [](double value) {
    char text[16];
    std::snprintf(text, sizeof text, "%6.2f", value);
    return std::string(text);
  };
  EXPECT_EQ(all.sentences, 24);
  EXPECT_EQ(all.error_sentences, 5);
  EXPECT_EQ(all.skip_sentences, 2);
  EXPECT_EQ(all.valid_sentences, 17);
  EXPECT_EQ(printed(all.recall), " 87.76");
  EXPECT_EQ(printed(all.precision), " 90.53");
  EXPECT_EQ(printed(all.f_measure), " 89.12");
  EXPECT_EQ(printed(all.complete_match), " 52.94");
  EXPECT_EQ(printed(all.average_crossing), "  0.06");
  EXPECT_EQ(printed(all.no_crossing), " 94.12");
  EXPECT_EQ(printed(all.two_or_less_crossing), "100.00");
  EXPECT_EQ(printed(all.tagging_accuracy), " 98.15");
  const EvalbSummary short_ones = SummarizeEvalb(run.up_to_cutoff());
  EXPECT_EQ(short_ones.sentences, 23);
  EXPECT_EQ(printed(short_ones.f_measure), " 83.20");
  EXPECT_EQ(printed(short_ones.tagging_accuracy), " 96.88");
}

TEST(EvalbReportTest, EdgeCasesMatchEvalbOutput) {
  bool complete = false;
  std::vector<std::string> messages;
  std::string report = Report(kData + "edge/edge.gld", kData + "edge/edge.tst",
                              EvalbParams::Collins(), &complete, &messages);
  EXPECT_TRUE(complete);
  EXPECT_EQ(report, Slurp(kData + "edge/edge.COLLINS.out"));
  EXPECT_EQ(messages, (std::vector<std::string>{"13 : Length unmatch (0|1)"}));
}

// Every case of tests/data/evalb/gum/cases.tsv: EVALB's output, byte for byte.
TEST(EvalbReportTest, GumPerturbedCasesMatchEvalbOutput) {
  std::ifstream cases(kData + "gum/cases.tsv");
  ASSERT_TRUE(cases);
  std::string gold, test, prm, expected;
  int status = 0;
  int count = 0;
  while (cases >> gold >> test >> prm >> expected >> status) {
    SCOPED_TRACE(expected);
    auto params = ReadEvalbParamsFile(kData + "params/" + prm);
    ASSERT_TRUE(params.ok()) << params.status().message();
    bool complete = false;
    std::string report = Report(kData + "gum/" + gold, kData + "gum/" + test, *params, &complete);
    EXPECT_EQ(report, Slurp(kData + "gum/" + expected));
    EXPECT_EQ(complete, status == 0);
    ++count;
  }
  EXPECT_GE(count, 18);
}

TEST(EvalbReportTest, MultiLineGoldGivesTheSameReport) {
  // The gold trees indented over several lines read as the one-per-line file does.
  auto trees = ReadTreebankFile(kData + "gum/GUM_court_loan.gld");
  ASSERT_TRUE(trees.ok());
  std::string indented_path =
      (std::filesystem::temp_directory_path() / "cky_evalb_test_court_loan.ptb").string();
  {
    std::ofstream out(indented_path);
    for (const Tree& tree : *trees) {
      // Two-space indentation as in GUM's .ptb files.
      std::string text = ToBracketString(tree);
      out << text.substr(0, text.find(' ')) << "\n  " << text.substr(text.find(' ') + 1) << "\n\n";
    }
  }
  bool complete = false;
  std::string report =
      Report(indented_path, kData + "gum/GUM_court_loan.tst", EvalbParams::Collins(), &complete);
  EXPECT_EQ(report, Slurp(kData + "gum/GUM_court_loan.COLLINS.out"));
}

}  // namespace
}  // namespace cky

namespace cky {
namespace {

std::string ReportOf(const std::string& gold_text, const std::string& test_text,
                     const EvalbReportOptions& options) {
  std::istringstream gold(gold_text), test(test_text);
  std::ostringstream out;
  EXPECT_TRUE(WriteEvalbReport(gold, "gold", test, "test", EvalbParams::Collins(), options, out));
  return out.str();
}

// GUM-style gold trees carry a ROOT the parser does not print: --strip-root scores them as after
// `sed 's/^(ROOT /( /'`; EVALB itself (the default) counts ROOT against "" as a miss.
TEST(EvalbReportTest, StripRootReadsRootAndTopAsTheUnlabelledRoot) {
  const std::string gold = "(ROOT (S (NP (DT a) (NN b)) (VP (VBZ c))))\n(TOP (S (NN d) (VBZ e)))\n";
  const std::string sed = "( (S (NP (DT a) (NN b)) (VP (VBZ c))))\n( (S (NN d) (VBZ e)))\n";
  const std::string test = "( (S (NP (DT a) (NN b)) (VP (VBZ c))) )\n( (S (NN d) (VBZ e)) )\n";
  EvalbReportOptions strip;
  strip.strip_root = true;
  EXPECT_EQ(ReportOf(gold, test, strip), ReportOf(sed, test, {}));
  EXPECT_NE(ReportOf(gold, test, {}).find("FMeasure       =  72.73"), std::string::npos)
      << ReportOf(gold, test, {});
  EXPECT_NE(ReportOf(gold, test, strip).find("FMeasure       = 100.00"), std::string::npos);
}

TEST(EvalbReportTest, NothingMatchedGivesZeroNotNan) {
  const std::string report = ReportOf("(S (A a) (B b))\n", "(X (A a) (B b))\n", {});
  EXPECT_NE(report.find("FMeasure       =   0.00"), std::string::npos) << report;
  EXPECT_EQ(report.find("nan"), std::string::npos) << report;
}

TEST(EvalbReportTest, JsonHasTheSummaryNumbers) {
  EvalbReportOptions json;
  json.json = true;
  const std::string report =
      ReportOf("(S (A a) (B b))\n(S (A a) (B b))\n", "(S (A a) (B b))\n(X (A a) (B b))\n", json);
  EXPECT_EQ(report.rfind("{\"sentences\":[\n{\"id\":1,", 0), 0u) << report;
  EXPECT_NE(report.find("\"all\":{\"sentences\":2,\"error_sentences\":0,\"skip_sentences\":0,"
                        "\"valid_sentences\":2,\"matched\":1,\"gold_brackets\":2,"
                        "\"test_brackets\":2,\"recall\":50.0,\"precision\":50.0,\"f1\":50.0,"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("\"cutoff\":{\"cutoff_length\":40,"), std::string::npos) << report;
  // One JSON document, whatever the sentences hold.
  const auto parsed = nlohmann::json::parse(report);
  EXPECT_EQ(parsed["sentences"].size(), 2u);
  EXPECT_EQ(parsed["sentences"][1]["matched"], 0);
  EXPECT_EQ(parsed["all"]["f1"], 50.0);
}

}  // namespace
}  // namespace cky
