// What every `cky` command does the same way: failing with a message, opening its output.
#pragma once

#include <fstream>
#include <ostream>
#include <string>

namespace cky::apps {

// Logs `message` as an error on stderr and ends the command with exit code `code` (see
// apps/commands.h for the codes).
[[noreturn]] void Fail(const std::string& message, int code = 1);

// Standard output for "-"; otherwise `file`, opened on `path`. Fails the command when the file
// cannot be opened for writing.
std::ostream& OpenOutput(const std::string& path, std::ofstream& file);

}  // namespace cky::apps
