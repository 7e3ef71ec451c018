// Lexical scoring, the parser's front end ahead of every backend (Parser::ScoreSentences): with
// several GPUs (`cky parse --devices`, issue 18) whatever runs serially on the host caps the
// scaling, so it runs on all cores. Prints, per grammar, seconds and words/s over sentences with
// the WSJ-23 lengths (words taken in turn from GUM sentences), on 1 thread and on T threads; the
// scores must be equal. Then, per grammar, the pruner's projections of those scores to each
// pre-parse level (ProjectLexicalScores, on the host before each level's pass: the first level's
// is what a GPU batch's first kernels wait for) on 1 thread, and the finite fine scores a word.
//
//   build/bench/lexical_scoring_bench [--shared ../shared] [--threads T] [GRAMMAR...]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/sentence_file.h"
#include "grammar_io/berkeley_model.h"
#include "lexicon/lexicon.h"
#include "parser/chart.h"
#include "parser/coarse_to_fine.h"
#include "parser/cpu_backend.h"
#include "parser/grammar_projection.h"
#include "parser/parser.h"

namespace {

using Clock = std::chrono::steady_clock;

// Sentences with the lengths of `lengths_file`, words taken in turn from `words`.
std::vector<std::vector<std::string>> Corpus(const std::string& lengths_file,
                                             const std::vector<std::vector<std::string>>& words) {
  std::vector<std::string> flat;
  for (const auto& s : words) flat.insert(flat.end(), s.begin(), s.end());
  std::vector<std::vector<std::string>> corpus;
  std::ifstream in(lengths_file);
  size_t next = 0;
  for (int n; in >> n;) {
    corpus.emplace_back();
    for (int k = 0; k < n && !flat.empty(); ++k)
      corpus.back().push_back(flat[next++ % flat.size()]);
  }
  return corpus;
}

double Time(cky::Parser& parser, std::vector<cky::SentenceInput>* inputs) {
  const auto start = Clock::now();
  parser.ScoreSentences(inputs);
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string shared = "../shared";
  int threads = 0;
  std::vector<std::string> grammars;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--shared" && i + 1 < argc) {
      shared = argv[++i];
    } else if (arg == "--threads" && i + 1 < argc) {
      threads = std::stoi(argv[++i]);
    } else {
      grammars.push_back(arg);
    }
  }
  const std::string g = shared + "/grammars/";
  if (grammars.empty()) {
    grammars = {g + "berkeley-gum/gum_sm5.gr", g + "wsj-projected/wsj_1.gr", g + "en_sm6s/en_sm6s"};
  }
  auto words = cky::ReadTokenizedSentences(g + "reference/gum_sm3/sentences.txt");
  const auto corpus = Corpus(shared + "/bench/wsj23-sentence-lengths.txt",
                             words.ok() ? *words : std::vector<std::vector<std::string>>{});
  size_t total_words = 0;
  for (const auto& s : corpus) total_words += s.size();
  if (total_words == 0) {
    std::fprintf(stderr, "no sentences or lengths under %s (pass --shared DIR)\n", shared.c_str());
    return 1;
  }
  const int many = cky::ThreadPool::ResolveThreads(threads);
  std::printf("%zu sentences, %zu words (WSJ-23 lengths, GUM words)\n", corpus.size(), total_words);
  std::printf("| grammar | lexicon | 1 thread: s | words/s | %d threads: s | words/s | equal |\n",
              many);
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | --- |\n");
  struct Projections {
    std::string spec;
    cky::BerkeleyModel model;
    std::vector<cky::SentenceInput> scored;
  };
  std::vector<Projections> projections;
  for (const std::string& spec : grammars) {
    auto model = cky::LoadBerkeleyModel(spec);
    if (!model.ok()) {
      std::printf("| %s | %s | | | | | |\n", spec.c_str(), model.status().message().c_str());
      continue;
    }
    auto lexicon = cky::Lexicon::Build(*model);
    if (!lexicon.ok()) continue;
    std::vector<std::vector<cky::SentenceInput>> runs(2);
    double seconds[2];
    for (int r = 0; r < 2; ++r) {
      cky::Parser parser(model->grammar, *lexicon, cky::MakeReferenceBackend(model->grammar),
                         {.scoring_threads = r == 0 ? 1 : many});
      for (const auto& s : corpus) runs[r].push_back({s, {}});
      seconds[r] = Time(parser, &runs[r]);
    }
    bool equal = true;
    for (size_t i = 0; i < corpus.size(); ++i) {
      equal = equal && runs[0][i].lexical.scores == runs[1][i].lexical.scores;
    }
    std::printf("| %s | %s | %.3f | %.0f | %.3f | %.0f | %s |\n", spec.c_str(),
                lexicon->exact() ? "exact (.gr)" : "text export", seconds[0],
                total_words / seconds[0], seconds[1], total_words / seconds[1],
                equal ? "yes" : "NO");
    projections.push_back({spec, std::move(*model), std::move(runs[0])});
  }
  std::printf(
      "\n| grammar | finite fine scores a word (of states) | level: 1 thread s, words/s |\n");
  std::printf("| --- | ---: | --- |\n");
  for (const Projections& p : projections) {
    auto pruner = cky::CoarseToFinePruner::Create(p.model.grammar, cky::PruningOptions::Safe());
    if (!pruner.ok()) continue;
    size_t finite = 0;
    for (const cky::SentenceInput& s : p.scored) {
      for (double x : s.lexical.scores) finite += x > cky::kNegInf;
    }
    std::string levels;
    for (int32_t k = 0; k < (*pruner)->num_levels(); ++k) {
      cky::LexicalScores coarse;
      const auto start = std::chrono::steady_clock::now();
      for (const cky::SentenceInput& s : p.scored) {
        cky::ProjectLexicalScores((*pruner)->level(k), s.lexical, &coarse);
      }
      const double sec =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      char cell[96];
      std::snprintf(cell, sizeof(cell), "%s%d (%d states): %.3f, %.0f", levels.empty() ? "" : "; ",
                    k, (*pruner)->level(k).grammar.num_states(), sec, total_words / sec);
      levels += cell;
    }
    std::printf("| %s | %.0f (%d) | %s |\n", p.spec.c_str(), double(finite) / total_words,
                p.model.grammar.num_states(), levels.c_str());
  }
  return 0;
}
