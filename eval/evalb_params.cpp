#include "eval/evalb_params.h"

#include <cstdlib>
#include <sstream>

#include "common/input_file.h"

namespace cky {
namespace {

bool IsBlank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::vector<std::string> Fields(const std::string& value) {
  std::vector<std::string> fields;
  std::istringstream in(value);
  std::string field;
  while (in >> field) fields.push_back(field);
  return fields;
}

// EVALB matches a keyword when the line starts with it followed by a blank or the end.
bool KeywordIs(const std::string& line, const std::string& keyword) {
  return line.compare(0, keyword.size(), keyword) == 0 &&
         (line.size() == keyword.size() || IsBlank(line[keyword.size()]));
}

}  // namespace

EvalbParams EvalbParams::Collins() {
  // The settings of COLLINS.prm as distributed with EVALB (Sekine & Collins 1997).
  EvalbParams params;
  params.max_error = 10;
  params.cutoff_len = 40;
  params.labeled = true;
  params.delete_labels = {"TOP", "-NONE-", ",", ":", "``", "''", "."};
  params.delete_labels_for_length = {"-NONE-"};
  params.eq_labels = {{"ADVP", "PRT"}};
  return params;
}

std::vector<std::string> ApplyEvalbParams(const std::string& text, const std::string& file_name,
                                          EvalbParams* params) {
  std::vector<std::string> warnings;
  std::istringstream in(text);
  std::string line;
  for (long line_number = 1; std::getline(in, line); ++line_number) {
    auto warn = [&](const std::string& message) {
      warnings.push_back(file_name + ":" + std::to_string(line_number) + ": " + message);
    };
    // Trailing blanks go; EVALB keeps at least the first byte.
    size_t end = line.size();
    while (end > 1 && IsBlank(line[end - 1])) --end;
    line.resize(end);
    if ((!line.empty() && line[0] == '#') || line.size() < 3) continue;
    size_t value_start = 0;
    while (value_start < line.size() && !IsBlank(line[value_start])) ++value_start;
    while (value_start < line.size() && IsBlank(line[value_start])) ++value_start;
    const std::string value = line.substr(value_start);
    if (value.empty()) warn("empty value");

    if (KeywordIs(line, "DEBUG")) {
      // EVALB's debugging printout; we print none.
    } else if (KeywordIs(line, "MAX_ERROR")) {
      params->max_error = std::atoi(value.c_str());
    } else if (KeywordIs(line, "CUTOFF_LEN")) {
      params->cutoff_len = std::atoi(value.c_str());
    } else if (KeywordIs(line, "LABELED")) {
      params->labeled = std::atoi(value.c_str()) != 0;
    } else if (KeywordIs(line, "DELETE_LABEL")) {
      params->delete_labels.push_back(value);
    } else if (KeywordIs(line, "DELETE_LABEL_FOR_LENGTH")) {
      params->delete_labels_for_length.push_back(value);
    } else if (KeywordIs(line, "QUOTE_LABEL")) {
      params->quote_labels.push_back(value);
    } else if (KeywordIs(line, "EQ_LABEL") || KeywordIs(line, "EQ_WORD")) {
      const bool is_label = KeywordIs(line, "EQ_LABEL");
      std::vector<std::string> fields = Fields(value);
      if (fields.size() != 2) {
        warn(std::string(is_label ? "EQ_LABEL" : "EQ_WORD") + " requires two values");
        continue;
      }
      (is_label ? params->eq_labels : params->eq_words).emplace_back(fields[0], fields[1]);
    } else {
      warn("unknown keyword (" + line + ")");
    }
  }
  return warnings;
}

StatusOr<EvalbParams> ReadEvalbParamsFile(const std::string& path,
                                          std::vector<std::string>* warnings) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  EvalbParams params = EvalbParams::EvalbBuiltIn();
  std::vector<std::string> found = ApplyEvalbParams(*text, path, &params);
  if (warnings != nullptr) warnings->insert(warnings->end(), found.begin(), found.end());
  return params;
}

}  // namespace cky
