// Test-only: which variants of a test that loops over variants (kernels, launch configurations)
// run in this process.
//
// CKY_TEST_VARIANTS=NAME[,NAME...] keeps only the variants named; unset or empty keeps them all.
// Under compute-sanitizer a test over every kernel variant takes longer than one device command
// may run; with this, each variant runs in its own process, side by side (bench/RESULTS.md,
// "compute-sanitizer").
#pragma once

#include <cstdlib>
#include <sstream>
#include <string>

namespace cky {

inline bool TestVariantSelected(const std::string& name) {
  const char* value = std::getenv("CKY_TEST_VARIANTS");
  if (value == nullptr || *value == '\0') return true;
  std::istringstream names(value);
  std::string item;
  while (std::getline(names, item, ','))
    if (item == name) return true;
  return false;
}

}  // namespace cky
