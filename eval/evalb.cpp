#include "eval/evalb.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

namespace cky {
namespace {

bool Contains(const std::vector<std::string>& list, const std::string& s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

// EVALB's label_comp and word_comp: equal, or a listed pair in either order.
bool EquivalentUnder(const std::vector<std::pair<std::string, std::string>>& pairs,
                     std::string_view a, std::string_view b) {
  if (a == b) return true;
  for (const auto& [x, y] : pairs) {
    if ((a == x && b == y) || (a == y && b == x)) return true;
  }
  return false;
}

bool IsQuoteWord(const std::string& word) { return word == "'" || word == "\"" || word == "/"; }

class SentenceBuilder {
 public:
  SentenceBuilder(const EvalbParams& params, EvalbSentence* out) : params_(params), out_(out) {}

  // Adds the tree's terminals and brackets (preorder), or sets out_->error at the first node
  // EVALB cannot read. Not recursive: a test tree may nest deeper than the stack allows.
  void Visit(const Tree& tree) {
    WalkTree(
        tree,
        [&](const Tree& node, size_t depth) {
          if (!out_->error.empty()) return false;
          if (node.is_leaf()) {
            out_->error =
                depth == 0 ? "Reading sentence (a word outside a preterminal: " + node.label + ")"
                           : "More than two elements in a bracket (" +
                                 out_->brackets[open_.back()].label + ")";
            return false;
          }
          if (node.is_preterminal()) {
            AddTerminal(node.label, node.children[0].label);
            return false;
          }
          const int start = static_cast<int>(out_->terminals.size());
          open_.push_back(static_cast<int>(out_->brackets.size()));
          out_->brackets.push_back({start, start, node.label});
          return true;
        },
        [&](const Tree&, size_t) {
          out_->brackets[open_.back()].end = static_cast<int>(out_->terminals.size());
          open_.pop_back();
        });
  }

 private:
  void AddTerminal(const std::string& tag, const std::string& word) {
    if (!Contains(params_.delete_labels_for_length, tag)) ++out_->length;
    if (Contains(params_.quote_labels, tag) && IsQuoteWord(word)) {
      out_->quote_terms.push_back({{word, tag},
                                   static_cast<int>(out_->terminals.size()),
                                   static_cast<int>(out_->brackets.size()),
                                   open_});
    }
    if (Contains(params_.delete_labels, tag)) return;  // the word goes with its bracket
    out_->terminals.push_back({word, tag});
  }

  const EvalbParams& params_;
  EvalbSentence* out_;
  std::vector<int> open_;
};

// EVALB's reinsert_term: puts a deleted quote word back and widens the brackets around it.
void Reinsert(const EvalbSentence::QuoteTerm& quote, EvalbSentence* sentence) {
  const int at = std::min<int>(quote.word_index, static_cast<int>(sentence->terminals.size()));
  sentence->terminals.insert(sentence->terminals.begin() + at, quote.terminal);
  for (size_t k = static_cast<size_t>(std::max(quote.bracket_index, 0));
       k < sentence->brackets.size(); ++k) {
    ++sentence->brackets[k].start;
    ++sentence->brackets[k].end;
  }
  for (int k : quote.open_brackets) ++sentence->brackets[k].end;
}

// EVALB's fix_quote (David Ellis, 2006): where one side deleted a quote preterminal that the other
// side tagged with a kept label at the same position, the deleted one is put back.
void FixQuotes(const EvalbParams& params, EvalbSentence* gold, EvalbSentence* test) {
  auto& gold_quotes = gold->quote_terms;
  auto& test_quotes = test->quote_terms;
  for (size_t i = 0; i < test_quotes.size(); ++i) {
    const int index = test_quotes[i].word_index;
    for (size_t j = 0; j < gold_quotes.size(); ++j) {
      if (gold_quotes[j].word_index != index ||
          gold_quotes[j].terminal.tag == test_quotes[i].terminal.tag) {
        continue;
      }
      const bool gold_deleted = Contains(params.delete_labels, gold_quotes[j].terminal.tag);
      const bool test_deleted = Contains(params.delete_labels, test_quotes[i].terminal.tag);
      if (gold_deleted && !test_deleted) {
        Reinsert(gold_quotes[j], gold);
        for (size_t k = j; k < gold_quotes.size(); ++k) ++gold_quotes[k].word_index;
      } else if (test_deleted && !gold_deleted) {
        Reinsert(test_quotes[i], test);
        for (size_t k = i; k < test_quotes.size(); ++k) ++test_quotes[k].word_index;
      }
    }
  }
}

// EVALB's massage_data: which brackets take part in scoring, and their labels cut at the first
// '-' or '=' (views into the brackets' labels).
struct ScoredBrackets {
  std::vector<bool> kept;
  std::vector<std::string_view> labels;
};
ScoredBrackets Massage(const EvalbParams& params,
                       const std::vector<EvalbSentence::Bracket>& brackets) {
  ScoredBrackets scored;
  scored.kept.assign(brackets.size(), true);
  scored.labels.resize(brackets.size());
  for (size_t i = 0; i < brackets.size(); ++i) {
    const EvalbSentence::Bracket& bracket = brackets[i];
    if (bracket.start == bracket.end) {
      scored.kept[i] = false;
      continue;
    }
    std::string_view label = bracket.label;
    label = label.substr(0, std::min(label.size(), label.find_first_of("-=")));
    scored.labels[i] = label;
    for (const std::string& deleted : params.delete_labels) {
      if (EquivalentUnder(params.eq_labels, label, deleted)) scored.kept[i] = false;
    }
  }
  return scored;
}

}  // namespace

EvalbSentence MakeEvalbSentence(const std::vector<const Tree*>& trees, const EvalbParams& params) {
  EvalbSentence sentence;
  SentenceBuilder builder(params, &sentence);
  for (const Tree* tree : trees) builder.Visit(*tree);
  if (!sentence.error.empty()) {
    sentence.terminals.clear();
    sentence.brackets.clear();
    sentence.quote_terms.clear();
  }
  return sentence;
}

EvalbSentence MakeUnreadableSentence(std::string error) {
  EvalbSentence sentence;
  sentence.error = std::move(error);
  return sentence;
}

EvalbSentenceResult ScoreEvalbSentence(int id, const EvalbSentence& gold_in,
                                       const EvalbSentence& test_in, const EvalbParams& params) {
  EvalbSentenceResult result;
  result.id = id;
  result.length = gold_in.length;
  if (!gold_in.error.empty()) result.errors.push_back(gold_in.error);
  if (!test_in.error.empty()) result.errors.push_back(test_in.error);
  if (!test_in.error.empty()) {
    result.status = 1;
    return result;
  }
  if (test_in.terminals.empty()) {
    result.status = 2;
    return result;
  }
  if (!gold_in.error.empty()) {
    result.status = 1;
    return result;
  }

  // Copies only when EVALB's quote fix-up may change the sentences.
  const EvalbSentence* gold_ptr = &gold_in;
  const EvalbSentence* test_ptr = &test_in;
  EvalbSentence gold_fixed, test_fixed;
  if (gold_in.terminals.size() != test_in.terminals.size()) {
    gold_fixed = gold_in;
    test_fixed = test_in;
    FixQuotes(params, &gold_fixed, &test_fixed);
    gold_ptr = &gold_fixed;
    test_ptr = &test_fixed;
  }
  const EvalbSentence& gold = *gold_ptr;
  const EvalbSentence& test = *test_ptr;
  if (gold.terminals.size() != test.terminals.size()) {
    result.errors.push_back("Length unmatch (" + std::to_string(gold.terminals.size()) + "|" +
                            std::to_string(test.terminals.size()) + ")");
    result.status = 1;
    return result;
  }
  const size_t words = gold.terminals.size();
  for (size_t i = 0; i < words; ++i) {
    if (!EquivalentUnder(params.eq_words, gold.terminals[i].word, test.terminals[i].word)) {
      result.errors.push_back("Words unmatch (" + gold.terminals[i].word + "|" +
                              test.terminals[i].word + ")");
      result.status = 1;
      return result;
    }
  }

  const ScoredBrackets gold_scored = Massage(params, gold.brackets);
  const ScoredBrackets test_scored = Massage(params, test.brackets);
  const std::vector<bool>& gold_kept = gold_scored.kept;
  const std::vector<bool>& test_kept = test_scored.kept;
  result.gold_brackets = static_cast<int>(std::count(gold_kept.begin(), gold_kept.end(), true));
  result.test_brackets = static_cast<int>(std::count(test_kept.begin(), test_kept.end(), true));

  // Greedy matching in preorder, as EVALB: each gold bracket takes the first free test bracket.
  std::vector<bool> test_matched(test.brackets.size(), false);
  for (size_t i = 0; i < gold.brackets.size(); ++i) {
    if (!gold_kept[i]) continue;
    const auto& g = gold.brackets[i];
    for (size_t j = 0; j < test.brackets.size(); ++j) {
      const auto& t = test.brackets[j];
      if (!test_kept[j] || test_matched[j] || g.start != t.start || g.end != t.end) continue;
      if (!params.labeled ||
          EquivalentUnder(params.eq_labels, gold_scored.labels[i], test_scored.labels[j])) {
        test_matched[j] = true;
        ++result.matched;
        break;
      }
    }
  }

  // A test bracket crosses when it overlaps a gold bracket without either containing the other.
  for (size_t j = 0; j < test.brackets.size(); ++j) {
    if (!test_kept[j]) continue;
    const auto& t = test.brackets[j];
    for (size_t i = 0; i < gold.brackets.size(); ++i) {
      if (!gold_kept[i]) continue;
      const auto& g = gold.brackets[i];
      if ((g.start < t.start && g.end > t.start && g.end < t.end) ||
          (g.start > t.start && g.start < t.end && g.end > t.end)) {
        ++result.crossing;
        break;
      }
    }
  }

  result.words = static_cast<int>(words);
  for (size_t i = 0; i < words; ++i) {
    if (EquivalentUnder(params.eq_labels, gold.terminals[i].tag, test.terminals[i].tag)) {
      ++result.correct_tags;
    }
  }
  return result;
}

void EvalbTotals::Add(const EvalbSentenceResult& result) {
  ++sentences;
  if (result.status == 1) {
    ++error_sentences;
  } else if (result.status == 2) {
    ++skip_sentences;
  } else {
    gold_brackets += result.gold_brackets;
    test_brackets += result.test_brackets;
    matched += result.matched;
    if (result.gold_brackets == result.test_brackets && result.test_brackets == result.matched) {
      ++complete_match;
    }
    words += result.words;
    crossing += result.crossing;
    if (result.crossing == 0) ++no_crossing;
    if (result.crossing <= 2) ++two_or_less_crossing;
    correct_tags += result.correct_tags;
  }
}

bool EvalbRun::CountError() {
  // EVALB: if (Error_count++ > Max_error) exit(1);
  const bool exits = error_count_ > params_.max_error;
  ++error_count_;
  return !exits;
}

bool EvalbRun::Add(const EvalbSentence& gold, const EvalbSentence& test,
                   EvalbSentenceResult* result) {
  ++sentences_;
  *result = ScoreEvalbSentence(sentences_, gold, test, params_);
  for (size_t i = 0; i < result->errors.size(); ++i) {
    if (!CountError()) {
      result->errors.resize(i + 1);  // EVALB stops at this message
      return false;
    }
  }
  all_.Add(*result);
  if (result->length <= params_.cutoff_len) up_to_cutoff_.Add(*result);
  return true;
}

bool EvalbRun::AddLineCountMismatch(bool gold_longer, std::string* message) {
  *message = gold_longer ? "Number of lines unmatch (too many lines in gold file)"
                         : "Number of lines unmatch (too many lines in test file)";
  return CountError();
}

std::string FormatEvalbHeader() {
  return "  Sent.                        Matched  Bracket   Cross        Correct Tag\n"
         " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy\n"
         "============================================================================\n";
}

std::string FormatEvalbSentenceLine(const EvalbSentenceResult& r) {
  char buffer[256];
  std::snprintf(buffer, sizeof(buffer),
                "%4d  %3d    %d  %6.2f %6.2f   %3d    %3d  %3d    %3d   %4d  %4d   %6.2f\n", r.id,
                r.length, r.status,
                (r.gold_brackets == 0 ? 0.0 : 100.0 * r.matched / r.gold_brackets),
                (r.test_brackets == 0 ? 0.0 : 100.0 * r.matched / r.test_brackets), r.matched,
                r.gold_brackets, r.test_brackets, r.crossing, r.words, r.correct_tags,
                (r.words == 0 ? 0.0 : 100.0 * r.correct_tags / r.words));
  return buffer;
}

namespace {

void Append(std::string* out, const char* format, auto... args) {
  char buffer[256];
  std::snprintf(buffer, sizeof(buffer), format, args...);
  out->append(buffer);
}

void AppendBlock(const EvalbTotals& totals, std::string* out) {
  const EvalbSummary s = SummarizeEvalb(totals);
  Append(out, "Number of sentence        = %6d\n", s.sentences);
  Append(out, "Number of Error sentence  = %6d\n", s.error_sentences);
  Append(out, "Number of Skip  sentence  = %6d\n", s.skip_sentences);
  Append(out, "Number of Valid sentence  = %6ld\n", s.valid_sentences);
  Append(out, "Bracketing Recall         = %6.2f\n", s.recall);
  Append(out, "Bracketing Precision      = %6.2f\n", s.precision);
  Append(out, "Bracketing FMeasure       = %6.2f\n", s.f_measure);
  Append(out, "Complete match            = %6.2f\n", s.complete_match);
  Append(out, "Average crossing          = %6.2f\n", s.average_crossing);
  Append(out, "No crossing               = %6.2f\n", s.no_crossing);
  Append(out, "2 or less crossing        = %6.2f\n", s.two_or_less_crossing);
  Append(out, "Tagging accuracy          = %6.2f\n", s.tagging_accuracy);
}

}  // namespace

EvalbSummary SummarizeEvalb(const EvalbTotals& t) {
  EvalbSummary s;
  s.sentences = t.sentences;
  s.error_sentences = t.error_sentences;
  s.skip_sentences = t.skip_sentences;
  const long valid = t.sentences - t.error_sentences - t.skip_sentences;
  s.valid_sentences = valid;
  s.matched_brackets = t.matched;
  s.gold_brackets = t.gold_brackets;
  s.test_brackets = t.test_brackets;
  s.words = t.words;
  s.correct_tags = t.correct_tags;
  // Same expressions as EVALB, so that every rounding comes out the same; where EVALB prints the
  // NaN of 0/0 (nothing matched) we give 0, the F-measure with no match.
  s.recall = t.gold_brackets > 0 ? 100.0 * t.matched / t.gold_brackets : 0.0;
  s.precision = t.test_brackets > 0 ? 100.0 * t.matched / t.test_brackets : 0.0;
  s.f_measure =
      s.precision + s.recall > 0 ? 2 * s.precision * s.recall / (s.precision + s.recall) : 0.0;
  s.complete_match = valid > 0 ? 100.0 * t.complete_match / valid : 0.0;
  s.average_crossing = valid > 0 ? 1.0 * t.crossing / valid : 0.0;
  s.no_crossing = valid > 0 ? 100.0 * t.no_crossing / valid : 0.0;
  s.two_or_less_crossing = valid > 0 ? 100.0 * t.two_or_less_crossing / valid : 0.0;
  s.tagging_accuracy = t.words > 0 ? 100.0 * t.correct_tags / t.words : 0.0;
  return s;
}

std::string FormatEvalbSummary(const EvalbRun& run) {
  std::string out =
      "============================================================================\n";
  const EvalbTotals& all = run.all();
  if (all.gold_brackets > 0 && all.test_brackets > 0) {
    Append(&out, "                %6.2f %6.2f %6ld %5ld %5ld  %5ld",
           100.0 * all.matched / all.gold_brackets, 100.0 * all.matched / all.test_brackets,
           all.matched, all.gold_brackets, all.test_brackets, all.crossing);
  }
  Append(&out, "  %5ld %5ld   %6.2f", all.words, all.correct_tags,
         (all.words > 0 ? 100.0 * all.correct_tags / all.words : 0.0));
  out.append("\n=== Summary ===\n\n-- All --\n");
  AppendBlock(all, &out);
  Append(&out, "\n-- len<=%d --\n", run.params().cutoff_len);
  AppendBlock(run.up_to_cutoff(), &out);
  return out;
}

namespace {

bool IsRootWrapper(const std::string& label) { return label == "ROOT" || label == "TOP"; }

EvalbSentence ToSentence(TreeItem& item, const EvalbParams& params, bool strip_root) {
  if (!item.status.ok()) return MakeUnreadableSentence(item.status.message());
  std::vector<const Tree*> trees;
  if (!item.empty) {
    if (strip_root && IsRootWrapper(item.tree.label)) item.tree.label.clear();
    trees.push_back(&item.tree);
    for (const Tree& more : item.more_trees) trees.push_back(&more);
  }
  return MakeEvalbSentence(trees, params);
}

// One block of the JSON summary (see FormatEvalbJsonSummary); `cutoff` < 0: none.
nlohmann::ordered_json JsonBlock(const EvalbTotals& t, int cutoff) {
  const EvalbSummary s = SummarizeEvalb(t);
  nlohmann::ordered_json block;
  if (cutoff >= 0) block["cutoff_length"] = cutoff;
  block["sentences"] = s.sentences;
  block["error_sentences"] = s.error_sentences;
  block["skip_sentences"] = s.skip_sentences;
  block["valid_sentences"] = s.valid_sentences;
  block["matched"] = t.matched;
  block["gold_brackets"] = t.gold_brackets;
  block["test_brackets"] = t.test_brackets;
  block["recall"] = s.recall;
  block["precision"] = s.precision;
  block["f1"] = s.f_measure;
  block["complete_match"] = s.complete_match;
  block["average_crossing"] = s.average_crossing;
  block["no_crossing"] = s.no_crossing;
  block["two_or_less_crossing"] = s.two_or_less_crossing;
  block["tagging_accuracy"] = s.tagging_accuracy;
  return block;
}

}  // namespace

std::string FormatEvalbJsonSentence(const EvalbSentenceResult& r) {
  const nlohmann::ordered_json sentence = {{"id", r.id},
                                           {"length", r.length},
                                           {"status", r.status},
                                           {"matched", r.matched},
                                           {"gold_brackets", r.gold_brackets},
                                           {"test_brackets", r.test_brackets},
                                           {"crossing", r.crossing},
                                           {"words", r.words},
                                           {"correct_tags", r.correct_tags}};
  return sentence.dump();
}

std::string FormatEvalbJsonSummary(const EvalbRun& run) {
  const nlohmann::ordered_json summary = {
      {"all", JsonBlock(run.all(), -1)},
      {"cutoff", JsonBlock(run.up_to_cutoff(), run.params().cutoff_len)}};
  const std::string text = summary.dump();
  return text.substr(1, text.size() - 2);  // the members, to close the report's object
}

bool ScoreEvalb(std::istream& gold, const std::string& gold_name, std::istream& test,
                const std::string& test_name, const EvalbReportOptions& options, EvalbRun* run,
                const std::function<void(const EvalbSentenceResult&)>& on_sentence) {
  const EvalbParams& params = run->params();
  const TreeReaderOptions reader_options{options.layout, /*several_trees_per_line=*/true};
  TreeReader gold_reader(gold, gold_name, reader_options);
  TreeReader test_reader(test, test_name, reader_options);
  auto report = [&](int id, const std::string& message) {
    if (options.on_error) options.on_error(std::to_string(id) + " : " + message);
  };
  TreeItem gold_item;
  TreeItem test_item;
  EvalbSentenceResult result;
  std::string message;
  int id = 0;
  while (gold_reader.Next(&gold_item)) {
    ++id;
    if (!test_reader.Next(&test_item)) {
      // EVALB stops reading at the first gold sentence without a test sentence.
      const bool go_on = run->AddLineCountMismatch(/*gold_longer=*/true, &message);
      report(id, message);
      if (!go_on) return false;
      break;
    }
    const bool go_on = run->Add(ToSentence(gold_item, params, options.strip_root),
                                ToSentence(test_item, params, options.strip_root), &result);
    for (const std::string& error : result.errors) report(id, error);
    if (!go_on) return false;
    if (on_sentence) on_sentence(result);
  }
  if (test_reader.Next(&test_item)) {
    const bool go_on = run->AddLineCountMismatch(/*gold_longer=*/false, &message);
    report(id + 1, message);
    if (!go_on) return false;
  }
  return true;
}

bool WriteEvalbReport(std::istream& gold, const std::string& gold_name, std::istream& test,
                      const std::string& test_name, const EvalbParams& params,
                      const EvalbReportOptions& options, std::ostream& out) {
  if (options.sentence_lines) out << (options.json ? "{\"sentences\":[\n" : FormatEvalbHeader());
  bool first_sentence = true;
  EvalbRun run(params);
  const bool complete = ScoreEvalb(
      gold, gold_name, test, test_name, options, &run, [&](const EvalbSentenceResult& result) {
        if (!options.sentence_lines) return;
        if (!options.json) {
          out << FormatEvalbSentenceLine(result);
          return;
        }
        out << (first_sentence ? "" : ",\n") << FormatEvalbJsonSentence(result);
        first_sentence = false;
      });
  if (!complete) return false;
  if (options.json) {
    out << (options.sentence_lines ? "\n],\n" : "{") << FormatEvalbJsonSummary(run) << "}\n";
  } else {
    out << FormatEvalbSummary(run);
  }
  return true;
}

}  // namespace cky
