// Parses one sentence with the built-in grammar and scores the tree against itself, through the
// installed headers and libraries only. Prints the tree and the F1; exits 1 on any error.
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "eval/evalb.h"
#include "parser/loaded_parser.h"

int main() {
  auto loaded = cky::LoadedParser::Load({.backend = {.device = cky::DeviceKind::kCpu}});
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.status().message().c_str());
    return 1;
  }
  const std::vector<std::vector<std::string>> sentences = {{"The", "cat", "sat", "."}};
  const std::vector<cky::ParseOutcome> outcomes = (*loaded)->Parse(sentences);
  if (outcomes.size() != 1 || outcomes[0].status != cky::ParseStatus::kOk) return 1;
  const std::string tree = cky::FormatOutcome(outcomes[0]);
  std::printf("%s\n", tree.c_str());

  std::istringstream gold(tree + "\n"), test(tree + "\n");
  cky::EvalbRun run(cky::EvalbParams::Collins());
  if (!cky::ScoreEvalb(gold, "gold", test, "test", {}, &run)) return 1;
  std::printf("F1 %.2f\n", cky::SummarizeEvalb(run.all()).f_measure);
  return 0;
}
