// Loading Berkeley parser grammars from their text exports, and our binary cache of them.
//
// WriteGrammarToTextFile writes PREFIX.grammar, PREFIX.lexicon, PREFIX.splits, PREFIX.words:
//
//   PREFIX.grammar   S_0 -> @S_1 S_0 0.020400813611217757      binary: parent left right prob
//                    ROOT_0 -> S_1 9.266649582567496E-7         closed unary (identities included)
//   PREFIX.lexicon   IN through [0.0015646, 0.0041012, 0.0020382, 0.0117154]
//                                                  P(word | tag_k), one value per substate of the
//                                                  tag
//   PREFIX.splits    NP<TAB>(0 (0 0 1) (1 2 3))     split tree; its leaves are the final substates
//   PREFIX.words     through                        one known word or UNK signature per line
//
// DumpGrammar writes PREFIX.binary (`P_i L_j R_k p`), PREFIX.unary (`P_i C_j p`), PREFIX.lexicon
// (as above), PREFIX.numstates (`TAG<TAB>n`), PREFIX.hierarchy (as .splits) and PREFIX.words. Every
// file may also be gzipped (PREFIX.grammar.gz); probabilities are plain, never logs.
#pragma once

#include <istream>
#include <string>
#include <string_view>

#include "common/status.h"
#include "grammar_io/berkeley_model_types.h"

namespace cky {

// Reads PREFIX.{grammar,lexicon,splits,words}[.gz].
StatusOr<BerkeleyModel> ReadWriteGrammarTextFiles(const std::string& prefix,
                                                  const LoadOptions& options = {});
// Reads a WriteGrammarToTextFile export from plain-text streams (e.g. a grammar embedded in the
// program and decompressed in memory), exactly as ReadWriteGrammarTextFiles reads files. `splits`
// and `words` may be null (as when those files are absent); `name` stands for PREFIX in error
// messages ("NAME.grammar:12: ...").
StatusOr<BerkeleyModel> ReadWriteGrammarTextFromStreams(std::istream& grammar,
                                                        std::istream& lexicon, std::istream* splits,
                                                        std::istream* words,
                                                        const std::string& name,
                                                        const LoadOptions& options = {});
// Reads PREFIX.{binary,unary,lexicon,numstates,hierarchy,words}[.gz].
StatusOr<BerkeleyModel> ReadDumpGrammarFiles(const std::string& prefix,
                                             const LoadOptions& options = {});

// Writes and reads the binary cache: magic "CKYMODEL", format version (checked on load), the
// model, and a checksum of all that (XXH3, 128 bits), verified before anything is read, so that a
// damaged file is an error, never a different grammar. The file is written to a temporary name and
// renamed into place (common/output_file.h). `unchecked_version_5` reads the previous format,
// which has no checksum. The file read may be compressed (gzip, bzip2, xz or zstd:
// FILE.ckybin.gz).
Status WriteModelCache(const BerkeleyModel& model, const std::string& path);
StatusOr<BerkeleyModel> ReadModelCache(const std::string& path, bool unchecked_version_5 = false);
// The bytes WriteModelCache writes (a product grammar holds them: grammar_io/product_grammar.h).
std::string ModelCacheBytes(const BerkeleyModel& model);
// The same from the cache file's bytes in memory (the built-in grammar); `name` stands for the
// path in error messages.
StatusOr<BerkeleyModel> ReadModelCacheFromMemory(std::string_view data, const std::string& name);
// `unchecked` (a cache file's bytes without their checksum) with the checksum appended, as
// WriteModelCache writes it: for tests and the fuzz target, which make damaged caches whose
// checksum holds, to try what reads them behind it.
std::string AppendCacheChecksum(std::string unchecked);

// Writes the WriteGrammarToTextFile form: PREFIX.grammar (binary rules, then the closed unary
// rules with an identity per state), PREFIX.lexicon, PREFIX.splits and PREFIX.words.
Status WriteGrammarTextFiles(const BerkeleyModel& model, const std::string& prefix);

// Which on-disk form `spec` names.
enum class GrammarFormat { kWriteGrammarText, kDumpGrammar, kCache, kJavaSerialized, kUnknown };
GrammarFormat DetectGrammarFormat(const std::string& spec);

// Loads whatever `spec` names: a .ckybin cache file (plain or compressed), a Berkeley .gr file
// (gzipped Java serialization: grammar_io/berkeley_gr.h), or a text export PREFIX. For text
// exports the binary cache of the same content is used (see LoadOptions::use_cache).
StatusOr<BerkeleyModel> LoadBerkeleyModel(const std::string& spec, const LoadOptions& options = {});

}  // namespace cky
