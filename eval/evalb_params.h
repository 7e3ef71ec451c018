// EVALB parameter files (".prm"), read the way EVALB reads them.
//
//   ## comment lines start with '#'; lines shorter than 3 bytes are ignored
//   DEBUG 0                    accepted and ignored (EVALB's debug printouts)
//   MAX_ERROR 10               stop after this many errors (see EvalbParams::max_error)
//   CUTOFF_LEN 40              second summary block: sentences of length <= 40
//   LABELED 1                  0: a bracket matches on its span alone
//   DELETE_LABEL TOP           brackets to ignore; a preterminal with this label loses its word
//   DELETE_LABEL_FOR_LENGTH -NONE-   words not counted in the sentence length
//   EQ_LABEL ADVP PRT          labels counted as equal (both ways)
//   EQ_WORD  Example example   words counted as equal (both ways)
//   QUOTE_LABEL ''             preterminals whose deletion EVALB undoes on a length mismatch
//
// A keyword is the first blank-separated field; the value is the rest of the line with its trailing
// blanks removed (so "DELETE_LABEL a b" deletes the label "a b", as in EVALB). Unknown keywords and
// malformed EQ_ lines are warnings, not errors, as in EVALB.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace cky {

struct EvalbParams {
  int max_error = 10;
  int cutoff_len = 40;
  bool labeled = true;
  std::vector<std::string> delete_labels;
  std::vector<std::string> delete_labels_for_length;
  std::vector<std::string> quote_labels;
  std::vector<std::pair<std::string, std::string>> eq_labels;
  std::vector<std::pair<std::string, std::string>> eq_words;

  // EVALB's compiled-in values, which a parameter file modifies: no deleted or equal labels.
  static EvalbParams EvalbBuiltIn() { return {}; }
  // What COLLINS.prm sets, the usual configuration for reporting parser F1 (see the .cpp).
  static EvalbParams Collins();
};

// Applies the settings of a parameter file's text to `params`. Returns the warnings EVALB would
// print (unknown keyword, "EQ_LABEL requires two values", empty value), each naming the line.
std::vector<std::string> ApplyEvalbParams(const std::string& text, const std::string& file_name,
                                          EvalbParams* params);

// Reads a parameter file (gzipped or plain) over EvalbParams::EvalbBuiltIn(), as `evalb -p FILE`
// does. Fails only when the file cannot be read; warnings are appended to `warnings` when given.
StatusOr<EvalbParams> ReadEvalbParamsFile(const std::string& path,
                                          std::vector<std::string>* warnings = nullptr);

}  // namespace cky
