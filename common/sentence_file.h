// Tokenized sentence files, the Berkeley parser's input form: one sentence per line, tokens
// separated by whitespace.
//
//   However , there will be very heavy rains .
//   Mr. Chief Justice , may it please the Court :
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace cky {

// The whitespace-separated tokens of one line.
std::vector<std::string> SplitWhitespace(std::string_view line);

// Every line of a (possibly gzipped) file as a sentence; blank lines are kept as empty sentences
// when `keep_empty` is set, else skipped.
StatusOr<std::vector<std::vector<std::string>>> ReadTokenizedSentences(const std::string& path,
                                                                       bool keep_empty = false);

// Where the project's shared data folder is, for tests and benchmarks: $CKY_SHARED_DIR when set,
// else "../shared" (beside the checkout; tests run from the source root).
std::string SharedDataDir();

}  // namespace cky
