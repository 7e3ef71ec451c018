// Test-only: which variants of a test that loops over variants (kernels, launch configurations),
// and which share of a test's inputs, run in this process.
//
// CKY_TEST_VARIANTS=NAME[,NAME...] keeps only the variants named; unset or empty keeps them all.
// CKY_TEST_SHARD=K/N keeps the inputs K, K + N, K + 2N ... (0 <= K < N) of a test that calls
// KeepTestShard; unset or empty keeps them all.
// CKY_TEST_MAX_LENGTH=L keeps only the inputs of at most L tokens of a test that calls
// KeepShortTestInputs; unset or empty keeps them all.
// Under compute-sanitizer a test over every kernel variant, or over many real-grammar sentences,
// takes longer than one device command may run; with these, each variant and each share of the
// sentences runs in its own process, side by side (scripts/gpu-sanitize).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

namespace test_variants_internal {

// CKY_TEST_SHARD=K/N as {K, N}; {0, 1} (everything) when unset or empty. A struct, not a pair:
// clang before 16 cannot capture structured bindings in a lambda.
struct TestShard {
  size_t index;
  size_t count;
};
inline TestShard ShardFromEnvironment() {
  const char* value = std::getenv("CKY_TEST_SHARD");
  if (value == nullptr || *value == '\0') return {0, 1};
  std::istringstream in(value);
  size_t shard = 0, shards = 0;
  char slash = 0;
  if (!(in >> shard >> slash >> shards) || slash != '/' || shard >= shards || !in.eof()) {
    throw std::invalid_argument(std::string("CKY_TEST_SHARD must be K/N with K < N, not ") + value);
  }
  return {shard, shards};
}

// Keeps items[i] and answers[i] where keep(i, items[i]), in order, in place; `caller` names the
// public function in the error on vectors that differ in length.
template <typename T, typename U, typename Keep>
void KeepWithAnswers(std::vector<T>* items, std::vector<U>* answers, Keep keep,
                     const char* caller) {
  if (items->size() != answers->size()) {
    throw std::invalid_argument(std::string(caller) +
                                ": the inputs and their answers differ in number");
  }
  size_t kept = 0;
  for (size_t i = 0; i < items->size(); ++i) {
    if (!keep(i, (*items)[i])) continue;
    if (kept != i) {  // a vector moved onto itself is left empty
      (*items)[kept] = std::move((*items)[i]);
      (*answers)[kept] = std::move((*answers)[i]);
    }
    ++kept;
  }
  items->resize(kept);
  answers->resize(kept);
}

}  // namespace test_variants_internal

// Keeps this process's share of `items` (all of them without CKY_TEST_SHARD). Throws
// std::invalid_argument, which fails the calling test, on a malformed value.
template <typename T>
void KeepTestShard(std::vector<T>* items) {
  const test_variants_internal::TestShard shard = test_variants_internal::ShardFromEnvironment();
  if (shard.count == 1) return;
  std::vector<T> kept;
  for (size_t i = shard.index; i < items->size(); i += shard.count)
    kept.push_back(std::move((*items)[i]));
  *items = std::move(kept);
}

// The same share of two parallel vectors: inputs and the answers expected for them.
template <typename T, typename U>
void KeepTestShard(std::vector<T>* items, std::vector<U>* answers) {
  const test_variants_internal::TestShard shard = test_variants_internal::ShardFromEnvironment();
  test_variants_internal::KeepWithAnswers(
      items, answers, [&](size_t i, const T&) { return i % shard.count == shard.index; },
      "KeepTestShard");
}

// Keeps the inputs of at most CKY_TEST_MAX_LENGTH tokens (T has size()), with their answers; all
// of them without it. Under racecheck the cooperative BPBC kernel's shared-memory traffic is
// checked access by access, and one group of strings costs the cube of its longest string: a share
// of the strings still holds a long one (scripts/gpu-sanitize). Throws std::invalid_argument on a
// malformed value or on inputs and answers that differ in number.
template <typename T, typename U>
void KeepShortTestInputs(std::vector<T>* items, std::vector<U>* answers) {
  size_t max_length = size_t(-1);
  const char* value = std::getenv("CKY_TEST_MAX_LENGTH");
  if (value != nullptr && *value != '\0') {
    std::istringstream in(value);
    if (!(in >> max_length) || !in.eof() || value[0] == '-') {
      throw std::invalid_argument(std::string("CKY_TEST_MAX_LENGTH must be a length, not ") +
                                  value);
    }
  }
  test_variants_internal::KeepWithAnswers(
      items, answers, [&](size_t, const T& item) { return item.size() <= max_length; },
      "KeepShortTestInputs");
}

}  // namespace cky
