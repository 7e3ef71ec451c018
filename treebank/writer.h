// Writing trees in Penn Treebank bracketing, in either layout the reader accepts.
//
//   kOneLine:   (ROOT (S (NP (NNP Mary)) (VP (VBD left)) (. .)))
//   kIndented:  (ROOT
//                 (S
//                   (NP (NNP Mary))
//                   (VP (VBD left))
//                   (. .)))
//
// In the indented layout a constituent whose children are all words or preterminals stays on one
// line; every other child starts a new line, indented two spaces per level. Reading the output
// gives back the same tree.
#pragma once

#include <ostream>
#include <string>

#include "treebank/tree.h"

namespace cky {

enum class WriteLayout { kOneLine, kIndented };

// The tree in the given layout, without a trailing newline.
std::string FormatPennTree(const Tree& tree, WriteLayout layout);

// Writes the tree and a newline; in the indented layout a blank line follows, as in GUM's files.
void WriteTree(std::ostream& out, const Tree& tree, WriteLayout layout);

}  // namespace cky
