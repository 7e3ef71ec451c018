// Membership and Viterbi parsing must agree: the boolean projection of a Berkeley grammar
// recognises a sentence exactly when the Viterbi parser finds a tree for it. Uses wsj_0
// (DumpGrammar export in ../shared; skips without it) and sentences of known words, for which the
// projection's terminal mapping (a word may take every tag it has a lexicon row for) is the
// lexicon's.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <random>
#include <utility>

#include "common/sentence_file.h"
#include "common/test_variants.h"
#include "cuda/common/device.h"
#include "grammar_io/berkeley_model.h"
#include "grammar_io/grammar_argument.h"
#include "lexicon/lexicon.h"
#include "membership/bpbc.h"
#include "membership/cnf_grammar.h"
#include "membership/cyk_recognizer.h"
#include "parser/cpu_backend.h"
#include "parser/parser.h"

namespace cky {
namespace {

// A model's exact Viterbi parser, without the retry with a widened lexicon (the projection knows
// only what the lexicon scores), and its projection. The model must outlive them.
struct ParserAndProjection {
  Lexicon lexicon;
  std::unique_ptr<Parser> parser;
  CnfGrammar cnf;
};

void Prepare(const BerkeleyModel& model, ParserAndProjection* out) {
  auto lexicon = Lexicon::Build(model);
  ASSERT_TRUE(lexicon.ok()) << lexicon.status().message();
  out->lexicon = std::move(*lexicon);
  out->parser =
      std::make_unique<Parser>(model.grammar, out->lexicon, MakeCpuBackend(model.grammar, 0),
                               ParserOptions{.retry_with_wider_lexicon = false});
  out->cnf = ProjectBerkeleyModel(model);
}

TEST(MembershipViterbiTest, RecognisedExactlyWhenAParseExists) {
  const std::string prefix = SharedDataDir() + "/grammars/wsj-projected/wsj_0.gr";
  if (!std::filesystem::exists(prefix + ".binary")) GTEST_SKIP() << prefix << " not found";
  LoadOptions load;
  load.use_cache = false;
  auto model = LoadBerkeleyModel(prefix, load);
  ASSERT_TRUE(model.ok()) << model.status().message();
  ParserAndProjection p;
  ASSERT_NO_FATAL_FAILURE(Prepare(*model, &p));

  std::vector<std::vector<std::string>> sentences;
  for (const char* name : {"small_sm2", "gum_sm3"}) {
    auto read =
        ReadTokenizedSentences(SharedDataDir() + "/grammars/reference/" + name + "/sentences.txt");
    ASSERT_TRUE(read.ok()) << read.status().message();
    for (const auto& sentence : *read) {
      const bool known = std::all_of(sentence.begin(), sentence.end(),
                                     [&](const std::string& w) { return p.lexicon.IsKnown(w); });
      if (known && sentence.size() <= 25) sentences.push_back(sentence);
    }
  }
  // Short word salads: from the whole vocabulary (nearly always parsable with this permissive
  // grammar) and from closed-class words with few tags (often not).
  std::vector<std::string> vocabulary;
  for (const LexiconRow& row : model->lexicon) {
    if (row.word.rfind("UNK", 0) != 0) vocabulary.push_back(row.word);
  }
  const std::vector<std::string> closed_class = {"the", ",", ".", "of", "-LRB-", "''", "to", "a"};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i) {
    const auto& words = i % 2 ? vocabulary : closed_class;
    std::vector<std::string> sentence(1 + rng() % 5);
    for (auto& w : sentence) w = words[rng() % words.size()];
    sentences.push_back(sentence);
  }

  std::vector<ParseOutcome> outcomes = p.parser->Parse(sentences);
  int parsed = 0, unparsed = 0;
  std::vector<std::vector<int32_t>> strings;
  std::vector<uint8_t> expected;
  for (size_t i = 0; i < sentences.size(); ++i) {
    std::string text;
    for (const auto& w : sentences[i]) text += w + " ";
    const std::vector<int32_t> terminals = p.cnf.Tokenize(text);
    const bool recognised = RecognizeReference(p.cnf, terminals);
    const bool has_parse = outcomes[i].status == ParseStatus::kOk;
    EXPECT_EQ(recognised, has_parse) << text;
    (has_parse ? parsed : unparsed)++;
    strings.push_back(terminals);
    expected.push_back(recognised);
  }
  // The bulk (BPBC) paths on the same strings: a real grammar's 97 symbols and 901 closed chain
  // rules, which the random grammars of membership/bpbc_test.cpp lack.
  const cuda::BpbcProgram program = FlattenCircuit(p.cnf, MinimizeCircuit(CompileCircuit(p.cnf)));
  auto bulk_cpu = RecognizeBulkCpu(program, strings);
  ASSERT_TRUE(bulk_cpu.ok()) << bulk_cpu.status().message();
  EXPECT_EQ(*bulk_cpu, expected);
  if (cuda::DeviceAvailable()) {
    // This process's kernels and share of the strings, and only the short ones if asked: under
    // racecheck the two kernels over every string take longer than one device command may run
    // (scripts/gpu-sanitize splits them).
    std::vector<std::vector<int32_t>> gpu_strings = strings;
    std::vector<uint8_t> gpu_expected = expected;
    KeepTestShard(&gpu_strings, &gpu_expected);
    KeepShortTestInputs(&gpu_strings, &gpu_expected);
    const std::pair<cuda::BpbcKernel, const char*> kernels[] = {
        {cuda::BpbcKernel::kThreadPerWord, "thread-per-word"},
        {cuda::BpbcKernel::kCooperative, "cooperative"}};
    for (const auto& [kernel, name] : kernels) {
      if (!TestVariantSelected(name)) continue;
      auto bulk_gpu = RecognizeBulkGpu(program, gpu_strings, {.kernel = kernel});
      ASSERT_TRUE(bulk_gpu.ok()) << bulk_gpu.status().message();
      EXPECT_EQ(*bulk_gpu, gpu_expected) << "kernel " << name;
    }
  }
  std::printf("[wsj_0] %zu sentences: %d with a parse, %d without; membership agrees on each\n",
              sentences.size(), parsed, unparsed);
  EXPECT_GT(parsed, 20);
  EXPECT_GT(unparsed, 0);
}

// Every grammar format: a .gr file (and its cache) holds the lexicon's counts and no rows, and
// the projection once had no terminals for it, so that `cky recognize -g X.gr` answered 0 for
// every sentence (issue 37). For a latent-annotation grammar the projection is an
// over-approximation (a chain of symbol-level rules may have no chain of substates under it, as
// "hovered" alone with small_sm2's text export), so: every sentence the exact Viterbi parser
// (every rule kept, no retry) parses is recognised, and most reference sentences are.
TEST(MembershipViterbiTest, EveryGrammarFormatRecognisesWhatTheParserParses) {
  const std::string dir = SharedDataDir() + "/grammars/";
  if (!std::filesystem::exists(dir + "berkeley-small/small_sm2.gr")) {
    GTEST_SKIP() << dir << " not found";
  }
  const std::string cache =
      (std::filesystem::temp_directory_path() / "membership_viterbi_small_sm2.ckybin").string();
  {
    auto model = LoadGrammarArgument(dir + "berkeley-small/small_sm2.gr", {.min_rule_prob = 0.0});
    ASSERT_TRUE(model.ok()) << model.status().message();
    ASSERT_TRUE(WriteModelCache(*model, cache).ok());
  }
  auto read = ReadTokenizedSentences(dir + "reference/small_sm2/sentences.txt");
  ASSERT_TRUE(read.ok()) << read.status().message();
  for (const std::string& spec :
       {dir + "berkeley-small/small_sm2.gr", cache, dir + "berkeley-small/small_sm2",
        dir + "berkeley-gum/gum_sm3.gr", std::string()}) {
    SCOPED_TRACE(spec.empty() ? "built-in" : spec);
    auto model = LoadGrammarArgument(spec, {.min_rule_prob = 0.0, .use_cache = false});
    ASSERT_TRUE(model.ok()) << model.status().message();
    ParserAndProjection p;
    ASSERT_NO_FATAL_FAILURE(Prepare(*model, &p));
    ASSERT_GT(p.cnf.num_terminals(), 1000);
    // A text export's unknown words take the tags of their own signature in the parser and of
    // every signature in the projection: only sentences of known words there.
    std::vector<std::vector<std::string>> sentences;
    for (const auto& sentence : *read) {
      if (model->lexicon_counts ||
          std::all_of(sentence.begin(), sentence.end(),
                      [&](const std::string& w) { return p.lexicon.IsKnown(w); })) {
        sentences.push_back(sentence);
      }
    }
    const int reference_sentences = static_cast<int>(sentences.size());
    std::vector<std::string> vocabulary;
    for (int32_t t = 1; t < p.cnf.num_terminals(); ++t) {
      if (p.lexicon.IsKnown(p.cnf.terminal_names[t])) vocabulary.push_back(p.cnf.terminal_names[t]);
    }
    std::mt19937_64 rng(11);
    for (int i = 0; i < 100; ++i) {
      std::vector<std::string> sentence(1 + rng() % 4);
      for (auto& w : sentence) w = vocabulary[rng() % vocabulary.size()];
      sentences.push_back(sentence);
    }
    const std::vector<ParseOutcome> outcomes = p.parser->Parse(sentences);
    int recognised_references = 0, disagreements = 0;
    for (size_t i = 0; i < sentences.size(); ++i) {
      std::string text;
      for (const auto& w : sentences[i]) text += w + " ";
      const bool recognised = RecognizeReference(p.cnf, p.cnf.Tokenize(text));
      const bool has_parse = outcomes[i].status == ParseStatus::kOk;
      if (has_parse) EXPECT_TRUE(recognised) << text;
      if (recognised && static_cast<int>(i) < reference_sentences) ++recognised_references;
      disagreements += recognised != has_parse;
    }
    std::printf("[%s] %zu sentences, %d recognised without a parse\n",
                spec.empty() ? "built-in" : spec.c_str(), sentences.size(), disagreements);
    EXPECT_GT(recognised_references, reference_sentences / 2);
  }
  std::filesystem::remove(cache);
}

}  // namespace
}  // namespace cky
