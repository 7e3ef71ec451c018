#include "parser/chart.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lexicon/lexicon.h"
#include "parser/backend_factory.h"
#include "parser/coarse_to_fine.h"
#include "parser/cpu_backend.h"
#include "parser/parser.h"
#include "parser/random_grammar.h"

namespace cky {
namespace {

TEST(ChartTest, EstimatesBytesWithoutOverflow) {
  EXPECT_EQ(ChartBytes(3, 10), 60);
  EXPECT_EQ(ChartBytes(5000, 8.0 * 1000), int64_t(5000) * 5001 / 2 * 8000);
  EXPECT_GT(ChartBytes(2000000000, 1e6), int64_t(1) << 62);  // saturates, stays positive
  EXPECT_EQ(ChartsDoNotFit(10, 1000), "");
  const std::string no = ChartsDoNotFit(300000, int64_t(1) << 62);
  EXPECT_NE(no.find("the charts of its 300000 words would take"), std::string::npos) << no;
}

// Every CPU backend refuses a sentence whose charts cannot fit in memory, before allocating them,
// and parses the others (before, such a sentence ended the whole run with std::bad_alloc after
// allocating what it could, under a memory limit, or was killed without one).
TEST(ChartTest, EveryCpuBackendRefusesASentenceTooBigForMemoryAndParsesTheOthers) {
  BerkeleyModel model = MakeRandomModel({.phrasal_symbols = 4, .substates = 2, .seed = 7});
  const Grammar& g = model.grammar;
  Lexicon lexicon = *Lexicon::Build(model);
  std::vector<std::vector<std::string>> sentences = MakeRandomSentences(model, 2, 2, 6, 5);
  // Its charts: about 4.5e10 cells of a hundred bytes and more, terabytes.
  sentences.insert(sentences.begin() + 1, std::vector<std::string>(300000, "w0"));
  auto reference = MakeBackend(g, {.device = DeviceKind::kReference,
                                   .decoder = DecoderKind::kViterbi,
                                   .prune = PruneMode::kOff});
  ASSERT_TRUE(reference.ok());
  Parser reference_parser(g, lexicon, std::move(*reference));
  const std::vector<std::vector<std::string>> short_ones = {sentences[0], sentences[2]};
  const auto want = reference_parser.Parse(short_ones);
  for (const DecoderKind decoder : {DecoderKind::kViterbi, DecoderKind::kMaxRule}) {
    for (const std::string backend : {"reference", "cpu", "pruned"}) {
      SCOPED_TRACE(std::string(NameOf(decoder)) + " " + backend);
      auto made = backend == "pruned"
                      ? MakePrunedCpuBackend(g, decoder, PruningOptions::Exact(), 2)
                      : MakeBackend(g, {.device = backend == "reference" ? DeviceKind::kReference
                                                                         : DeviceKind::kCpu,
                                        .threads = 2,
                                        .decoder = decoder,
                                        .prune = PruneMode::kOff});
      ASSERT_TRUE(made.ok()) << made.status().message();
      Parser parser(g, lexicon, std::move(*made));
      const auto got = parser.Parse(sentences);
      ASSERT_EQ(got.size(), 3u);
      EXPECT_EQ(got[1].status, ParseStatus::kOutOfMemory);
      EXPECT_NE(got[1].message.find("memory available"), std::string::npos) << got[1].message;
      EXPECT_EQ(got[0].status, want[0].status);
      EXPECT_EQ(got[2].status, want[1].status);
    }
  }
  EXPECT_EQ(want[0].status, ParseStatus::kOk);
}

}  // namespace
}  // namespace cky
