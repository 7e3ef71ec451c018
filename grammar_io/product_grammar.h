// Product grammars: K latent-annotation grammars kept in one file, whose rule posteriors the parser
// multiplies (Petrov 2010, "Products of Random Latent Variable Grammars"; parser/product.h).
// `cky train --split-merge N --seeds LIST` writes one, `cky parse -g FILE` reads it.
//
// The file (".ckyprod"), little-endian like the .ckybin cache it holds:
//
//   8 bytes    magic "CKYPROD\n"
//   uint32     format version (kProductFormatVersion)
//   uint32     K, the number of member grammars (1 to kMaxProductMembers)
//   K times:   uint32 label length, the label's bytes (UTF-8, e.g. "seed 6"; names the member in
//              messages), uint64 payload size, uint32 CRC-32 of the payload (IEEE 802.3, as
//              gzip's), the payload: a complete .ckybin cache (the bytes WriteModelCache writes)
//   nothing after the last member.
//
// Each member is checked against its CRC before it is read, and then read as a .ckybin is (magic,
// version and structural checks), so a damaged file is refused with the member it concerns.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "grammar_io/berkeley_model.h"

namespace cky {

inline constexpr uint32_t kProductFormatVersion = 1;
inline constexpr uint32_t kMaxProductMembers = 64;

struct ProductGrammarMember {
  std::string label;  // what messages call the member ("seed 6", "FILE", "FILE#2")
  BerkeleyModel model;
};

// Writes the members (at least one) as a product file. Deterministic: the same models and labels
// give the same bytes.
Status WriteProductGrammar(std::span<const ProductGrammarMember> members, const std::string& path);
// The file's bytes, as WriteProductGrammar writes them.
std::string ProductGrammarBytes(std::span<const ProductGrammarMember> members);

// Reads a product file; errors name the file and the member ("FILE: member 2 (seed 3): ...").
StatusOr<std::vector<ProductGrammarMember>> ReadProductGrammar(const std::string& path);
// The same from the bytes in memory (the built-in product); `name` stands for the path.
StatusOr<std::vector<ProductGrammarMember>> ReadProductGrammarFromMemory(std::string_view data,
                                                                         const std::string& name);

// Whether `path` is a file that starts with the product magic.
bool IsProductGrammarFile(const std::string& path);

}  // namespace cky
