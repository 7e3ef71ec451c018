// Helpers shared by the fuzz targets (fuzz/README.md): splitting one input into several files'
// contents, and a scratch directory for readers that take paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cky::fuzz {

// The input cut at each "\n%%\n" into at most `parts` pieces (missing pieces are absent); the
// seed corpora (scripts/fuzz) join files with that separator.
std::vector<std::string> SplitParts(const uint8_t* data, size_t size, size_t parts);

// A per-process scratch directory under $TMPDIR (or /tmp), created on first use and removed with
// its files when the process exits normally.
const std::string& ScratchDir();

// Writes `contents` to ScratchDir()/name and returns the path.
std::string WriteScratchFile(const std::string& name, std::string_view contents);

}  // namespace cky::fuzz
