#include "grammar_io/default_grammar.h"

#include <boost/iostreams/device/array.hpp>
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <cstddef>
#include <sstream>

namespace cky {
namespace embedded {
// Defined in the generated default_grammar_data.cpp (scripts/embed_files.cmake).
extern const unsigned char kDefaultGrammar[];
extern const std::size_t kDefaultGrammar_size;
extern const unsigned char kDefaultLexicon[];
extern const std::size_t kDefaultLexicon_size;
extern const unsigned char kDefaultSplits[];
extern const std::size_t kDefaultSplits_size;
extern const unsigned char kDefaultWords[];
extern const std::size_t kDefaultWords_size;
}  // namespace embedded

namespace {

namespace bio = boost::iostreams;

// Decompresses one embedded gzip file into a string stream.
StatusOr<std::unique_ptr<std::istringstream>> Inflate(const unsigned char* data, std::size_t size,
                                                      const std::string& name) {
  try {
    bio::filtering_istream in;
    in.push(bio::gzip_decompressor());
    in.push(bio::array_source(reinterpret_cast<const char*>(data), size));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return Status::Error(name + ": corrupt embedded data");
    return std::make_unique<std::istringstream>(text.str());
  } catch (const std::exception& e) {
    return Status::Error(name + ": corrupt embedded data (" + e.what() + ")");
  }
}

}  // namespace

StatusOr<BerkeleyModel> LoadDefaultGrammar(const LoadOptions& options) {
  const std::string name = "<built-in grammar>";
  auto grammar =
      Inflate(embedded::kDefaultGrammar, embedded::kDefaultGrammar_size, name + ".grammar");
  if (!grammar.ok()) return grammar.status();
  auto lexicon =
      Inflate(embedded::kDefaultLexicon, embedded::kDefaultLexicon_size, name + ".lexicon");
  if (!lexicon.ok()) return lexicon.status();
  auto splits = Inflate(embedded::kDefaultSplits, embedded::kDefaultSplits_size, name + ".splits");
  if (!splits.ok()) return splits.status();
  auto words = Inflate(embedded::kDefaultWords, embedded::kDefaultWords_size, name + ".words");
  if (!words.ok()) return words.status();
  return ReadWriteGrammarTextFromStreams(**grammar, **lexicon, splits->get(), words->get(), name,
                                         options);
}

}  // namespace cky
