#include "common/sentence_file.h"

#include <cstdlib>

#include "common/input_file.h"

namespace cky {

std::vector<std::string> SplitWhitespace(std::string_view line) {
  std::vector<std::string> tokens;
  size_t pos = 0;
  while (true) {
    pos = line.find_first_not_of(" \t\r\n\f\v", pos);
    if (pos == std::string_view::npos) break;
    size_t end = line.find_first_of(" \t\r\n\f\v", pos);
    if (end == std::string_view::npos) end = line.size();
    tokens.emplace_back(line.substr(pos, end - pos));
    pos = end;
  }
  return tokens;
}

StatusOr<std::vector<std::vector<std::string>>> ReadTokenizedSentences(const std::string& path,
                                                                       bool keep_empty) {
  auto in = InputFile::Open(path);
  if (!in.ok()) return in.status();
  std::vector<std::vector<std::string>> sentences;
  for (std::string line; std::getline((*in)->stream(), line);) {
    std::vector<std::string> tokens = SplitWhitespace(line);
    if (!tokens.empty() || keep_empty) sentences.push_back(std::move(tokens));
  }
  CKY_RETURN_IF_ERROR((*in)->ReadStatus());
  return sentences;
}

std::string SharedDataDir() {
  const char* dir = std::getenv("CKY_SHARED_DIR");
  return dir && *dir ? dir : "../shared";
}

}  // namespace cky
