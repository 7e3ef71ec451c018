// The treebank reader (treebank/reader.h) in each layout: the first byte picks automatic,
// one-per-line (with or without several trees a line) or multi-line; errors are collected.
#include <cstddef>
#include <cstdint>
#include <string>

#include "treebank/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  cky::ReadTreebankOptions options;
  options.continue_on_error = data[0] & 1;
  switch ((data[0] >> 1) % 4) {
    case 0:
      options.reader.layout = cky::TreeLayout::kAuto;
      break;
    case 1:
      options.reader.layout = cky::TreeLayout::kOnePerLine;
      break;
    case 2:
      options.reader.layout = cky::TreeLayout::kOnePerLine;
      options.reader.several_trees_per_line = true;
      break;
    default:
      options.reader.layout = cky::TreeLayout::kMultiLine;
      break;
  }
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<cky::Status> errors;
  auto trees = cky::ReadTreesFromString(text, options, &errors);
  (void)trees.ok();
  return 0;
}
