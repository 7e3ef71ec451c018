// EVALB parameter files (eval/evalb_params.h), then one sentence scored under the parameters
// read, so that the labels and words they name are used.
#include <cstddef>
#include <cstdint>
#include <string>

#include "eval/evalb.h"
#include "eval/evalb_params.h"
#include "treebank/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  cky::EvalbParams params = cky::EvalbParams::EvalbBuiltIn();
  (void)cky::ApplyEvalbParams(text, "fuzz.prm", &params);
  static const auto trees = *cky::ReadTreesFromString(
      "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))\n"
      "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on)) (NP (DT the) (NN mat))) (. .))\n");
  const cky::EvalbSentence gold = cky::MakeEvalbSentence({&trees[0]}, params);
  const cky::EvalbSentence test = cky::MakeEvalbSentence({&trees[1]}, params);
  (void)cky::ScoreEvalbSentence(1, gold, test, params);
  return 0;
}
