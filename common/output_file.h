// Writing a file so that a reader never sees it half written and a failed write leaves nothing
// behind: the bytes go to a new temporary file beside the target (created with mkstemp, so never
// one that already exists), which replaces the target by a rename once it is complete; on any
// failure the temporary file is removed. Errors name the file and the reason (errno's text).
#pragma once

#include <sys/types.h>

#include <functional>
#include <ostream>
#include <string>

#include "common/status.h"

namespace cky {

struct OutputFileOptions {
  // Permissions of the new file, before the umask: 0666 gives what an editor would; 0600 keeps a
  // file private whatever the umask.
  mode_t mode = 0666;
  bool apply_umask = true;
};

// Calls `write` with a stream on a temporary file in the target's directory, then flushes it to
// disk and renames it to `path`. A target that exists and is not a regular file (/dev/stdout, a
// pipe) is written directly instead. Fails, removing the temporary file, when the temporary file
// cannot be made, `write` fails, the stream goes bad or the rename fails.
Status WriteFileAtomically(const std::string& path,
                           const std::function<Status(std::ostream&)>& write,
                           const OutputFileOptions& options = {});

// "PATH: cannot open for writing: <errno text>" and the like, from errno at the call.
Status FileError(const std::string& path, const std::string& what);

}  // namespace cky
