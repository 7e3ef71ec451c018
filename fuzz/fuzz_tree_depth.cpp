// Trees nested deeper than any stack (issue 39: `cky eval` died on a tree 50,000 deep): the
// treebank reader, the transforms, the one-line writer and EVALB's scoring, none of which may
// recurse on depth. The input is "COUNT OPEN\n%%\nCORE\n%%\nCLOSE": the text
// read is OPEN repeated COUNT times (its first two bytes, times 4: up to 262,140), then CORE, then
// CLOSE as many times, so that a few bytes make a tree a quarter of a million levels deep.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "eval/evalb.h"
#include "eval/evalb_params.h"
#include "fuzz/fuzz_util.h"
#include "treebank/reader.h"
#include "treebank/transforms.h"
#include "treebank/writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t count = 4 * ((size_t(data[0]) << 8) | data[1]);
  const std::vector<std::string> parts = cky::fuzz::SplitParts(data + 2, size - 2, 3);
  if (parts.size() < 3 || parts[0].size() + parts[2].size() > 16) return 0;
  std::string text;
  text.reserve(count * (parts[0].size() + parts[2].size()) + parts[1].size());
  for (size_t i = 0; i < count; ++i) text += parts[0];
  text += parts[1];
  for (size_t i = 0; i < count; ++i) text += parts[2];
  cky::ReadTreebankOptions options;
  options.continue_on_error = true;
  options.reader.several_trees_per_line = (size & 1) != 0;
  auto trees = cky::ReadTreesFromString(text, options);
  if (!trees.ok()) return 0;
  static const cky::EvalbParams params = cky::EvalbParams::Collins();
  for (cky::Tree& tree : *trees) {
    (void)cky::FormatPennTree(tree, cky::WriteLayout::kOneLine);
    (void)cky::Leaves(tree);
    (void)cky::Tags(tree);
    (void)cky::Spans(tree, /*include_preterminals=*/true);
    // Scored against its words alone, both ways (against itself, matching is quadratic in the
    // brackets, as EVALB's is).
    const cky::EvalbSentence sentence = cky::MakeEvalbSentence({&tree}, params);
    cky::EvalbSentence words = sentence;
    words.brackets.clear();
    (void)cky::ScoreEvalbSentence(1, sentence, words, params);
    (void)cky::ScoreEvalbSentence(1, words, sentence, params);
    cky::Tree copy = tree;
    (void)(copy == tree);
    cky::StripFunctionTags(&copy, /*also_tags=*/true);
    (void)cky::StripEmptyElements(&copy);
    cky::CollapseRoot(&copy);
  }
  return 0;
}
