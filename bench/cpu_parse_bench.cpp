// Grammar load times and CPU parsing speed, as one table.
//
//   build/bench/cpu_parse_bench [--shared ../shared] [--sentences N] [--threads T]
//
// For each grammar: load time from the text export and from the binary cache, then sentences/s of
// the reference and of the multi-threaded CPU backend on GUM sentences (the reference sentences in
// shared/grammars/reference), with the Viterbi decoder and with max-rule (exact inside-outside;
// for the .gr grammars, whose sum-closed unaries make it Berkeley's default decoding). "Rule
// applications" counts binary rule x split point pairs an exhaustive parser evaluates: rules * sum
// over spans of (span length - 1).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/sentence_file.h"
#include "grammar_io/berkeley_model.h"
#include "lexicon/lexicon.h"
#include "parser/parser.h"
#include "parser/backend_factory.h"

namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double RuleApplications(const cky::Grammar& g, const std::vector<std::vector<std::string>>& s) {
  double splits = 0;
  for (const auto& words : s) {
    const double n = static_cast<double>(words.size());
    splits += (n * n * n - n) / 6.0;
  }
  return splits * static_cast<double>(g.num_binary_rules());
}

}  // namespace

int main(int argc, char** argv) {
  std::string shared = "../shared";
  int max_sentences = 40;
  int max_words = 0;
  int threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--shared") shared = argv[i + 1];
    if (flag == "--sentences") max_sentences = std::stoi(argv[i + 1]);
    if (flag == "--max-words") max_words = std::stoi(argv[i + 1]);
    if (flag == "--threads") threads = std::stoi(argv[i + 1]);
  }
  struct Case {
    const char* name;
    std::string prefix;
    int sentence_cap;  // en_sm6s is slow on a CPU: fewer, shorter sentences
    int word_cap;
    int word_min = 1;
  };
  const std::string g = shared + "/grammars/";
  std::vector<Case> cases = {
      {"small_sm2", g + "berkeley-small/small_sm2", max_sentences, max_words},
      {"wsj_1", g + "wsj-projected/wsj_1.gr", max_sentences, max_words},
      {"gum_sm3", g + "berkeley-gum/gum_sm3", max_sentences, max_words},
      {"gum_sm3.gr", g + "berkeley-gum/gum_sm3.gr", max_sentences, max_words},
      {"gum_sm5.gr", g + "berkeley-gum/gum_sm5.gr", max_sentences / 2, max_words},
      {"en_sm6s", g + "en_sm6s/en_sm6s", 4, 15, 8},
  };
  auto read = cky::ReadTokenizedSentences(g + "reference/gum_sm3/sentences.txt");
  const auto all_sentences = read.ok() ? *read : std::vector<std::vector<std::string>>{};
  if (all_sentences.empty()) {
    std::fprintf(stderr, "no sentences under %s (pass --shared DIR)\n", shared.c_str());
    return 1;
  }
  std::printf("%-10s %10s %9s %9s %-10s %-8s %5s %6s %10s %14s\n", "grammar", "binary", "text_s",
              "cache_s", "backend", "decoder", "sents", "words", "sents/s", "rule_apps/s");
  const std::string cache_dir =
      (std::filesystem::temp_directory_path() / "cky-bench-cache").string();
  std::filesystem::create_directories(cache_dir);
  for (const Case& c : cases) {
    cky::LoadOptions text_only;
    text_only.use_cache = false;
    auto start = Clock::now();
    auto model = cky::LoadBerkeleyModel(c.prefix, text_only);
    const double text_seconds = Seconds(start);
    if (!model.ok()) {
      std::printf("%-10s %s\n", c.name, model.status().message().c_str());
      continue;
    }
    const std::string cache = cache_dir + "/" + c.name + ".ckybin";
    (void)cky::WriteModelCache(*model, cache);
    start = Clock::now();
    auto cached = cky::ReadModelCache(cache);
    const double cache_seconds = Seconds(start);
    auto lexicon = cky::Lexicon::Build(*model);
    std::vector<std::vector<std::string>> sentences;
    for (const auto& s : all_sentences) {
      if (c.word_cap > 0 && static_cast<int>(s.size()) > c.word_cap) continue;
      if (static_cast<int>(s.size()) < c.word_min) continue;
      if (static_cast<int>(sentences.size()) >= c.sentence_cap) break;
      sentences.push_back(s);
    }
    size_t words = 0;
    for (const auto& s : sentences) words += s.size();
    for (const char* decoder : {"viterbi", "max-rule"})
      for (const char* backend : {"reference", "cpu"}) {
        auto made = cky::MakeBackend(model->grammar,
                                     {.device = *cky::ParseDeviceKind(backend),
                                      .threads = threads,
                                      .decoder = *cky::ParseDecoderKind(decoder),
                                      .prune = cky::PruneMode::kOff});
        cky::Parser parser(model->grammar, *lexicon, std::move(*made));
        start = Clock::now();
        auto outcomes = parser.Parse(sentences);
        const double seconds = Seconds(start);
        std::printf("%-10s %10lld %9.3f %9.3f %-10s %-8s %5zu %6zu %10.2f %14.3e\n", c.name,
                    static_cast<long long>(model->grammar.num_binary_rules()), text_seconds,
                    cached.ok() ? cache_seconds : -1.0, backend, decoder, sentences.size(), words,
                    sentences.size() / seconds,
                    RuleApplications(model->grammar, sentences) / seconds);
        std::fflush(stdout);
      }
  }
  return 0;
}
