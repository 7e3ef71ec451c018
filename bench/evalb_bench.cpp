// evalb_bench: how long `cky eval`'s scoring takes. Reads a gold/test pair (by default the GUM
// fixtures in tests/data/evalb/gum), repeats it to at least N sentences, and times reading plus
// scoring plus formatting the full report, and scoring alone. CPU only (scoring has no GPU path).
//
//   evalb_bench [GOLD TEST] [--sentences N]     run from the source root
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "common/input_file.h"
#include "eval/evalb.h"
#include "treebank/reader.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> gold_paths, test_paths;
  int target = 2000;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--sentences" && i + 1 < argc) {
      target = std::atoi(argv[++i]);
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() == 2) {
    gold_paths = {positional[0]};
    test_paths = {positional[1]};
  } else {
    for (const char* doc : {"GUM_academic_exposure", "GUM_bio_byron", "GUM_court_loan",
                            "GUM_interview_cyclone", "GUM_news_iodine", "GUM_voyage_coron"}) {
      gold_paths.push_back(std::string("tests/data/evalb/gum/") + doc + ".gld");
      test_paths.push_back(std::string("tests/data/evalb/gum/") + doc + ".tst");
    }
  }
  std::vector<std::string> gold_lines, test_lines;
  for (size_t i = 0; i < gold_paths.size(); ++i) {
    auto gold = cky::ReadWholeFile(gold_paths[i]);
    auto test = cky::ReadWholeFile(test_paths[i]);
    if (!gold.ok() || !test.ok()) {
      std::fprintf(stderr, "evalb_bench: %s\n",
                   (!gold.ok() ? gold.status() : test.status()).message().c_str());
      return 1;
    }
    auto g = Lines(*gold), t = Lines(*test);
    if (g.size() != t.size()) {
      std::fprintf(stderr, "evalb_bench: %s and %s differ in length\n", gold_paths[i].c_str(),
                   test_paths[i].c_str());
      return 1;
    }
    gold_lines.insert(gold_lines.end(), g.begin(), g.end());
    test_lines.insert(test_lines.end(), t.begin(), t.end());
  }
  std::string gold_text, test_text;
  size_t sentences = 0;
  while (sentences < static_cast<size_t>(target)) {
    for (size_t i = 0; i < gold_lines.size(); ++i) {
      gold_text += gold_lines[i] + "\n";
      test_text += test_lines[i] + "\n";
    }
    sentences += gold_lines.size();
  }

  cky::EvalbParams params = cky::EvalbParams::Collins();
  params.max_error = 1 << 30;
  const int repeats = 5;

  double best_report = 1e9;
  std::string report;
  for (int r = 0; r < repeats; ++r) {
    std::istringstream gold(gold_text), test(test_text);
    std::ostringstream out;
    auto start = Clock::now();
    cky::WriteEvalbReport(gold, "gold", test, "test", params, {}, out);
    best_report = std::min(best_report, Seconds(start));
    report = out.str();
  }

  // Scoring alone, on sentences converted beforehand.
  std::vector<cky::EvalbSentence> gold_sentences, test_sentences;
  {
    std::istringstream gold(gold_text), test(test_text);
    cky::TreeReader gold_reader(gold, "gold", {cky::TreeLayout::kOnePerLine, true});
    cky::TreeReader test_reader(test, "test", {cky::TreeLayout::kOnePerLine, true});
    cky::TreeItem g, t;
    while (gold_reader.Next(&g) && test_reader.Next(&t)) {
      auto convert = [&](const cky::TreeItem& item) {
        if (!item.status.ok()) return cky::MakeUnreadableSentence(item.status.message());
        std::vector<const cky::Tree*> trees;
        if (!item.empty) trees.push_back(&item.tree);
        return cky::MakeEvalbSentence(trees, params);
      };
      gold_sentences.push_back(convert(g));
      test_sentences.push_back(convert(t));
    }
  }
  double best_score = 1e9;
  long matched = 0;
  for (int r = 0; r < repeats; ++r) {
    auto start = Clock::now();
    cky::EvalbRun run(params);
    cky::EvalbSentenceResult result;
    for (size_t i = 0; i < gold_sentences.size(); ++i) {
      run.Add(gold_sentences[i], test_sentences[i], &result);
    }
    best_score = std::min(best_score, Seconds(start));
    matched = run.all().matched;
  }

  std::printf("evalb_bench: %zu sentence pairs (COLLINS.prm), best of %d runs, CPU, one thread\n",
              sentences, repeats);
  std::printf("%-44s %10s %14s\n", "what", "seconds", "sentences/s");
  std::printf("%-44s %10.4f %14.0f\n", "read + score + format the report", best_report,
              sentences / best_report);
  std::printf("%-44s %10.4f %14.0f\n", "score only (sentences converted beforehand)", best_score,
              sentences / best_score);
  std::printf("(matched brackets %ld; report %zu bytes)\n", matched, report.size());
  return 0;
}
