#include "common/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ext/stdio_filebuf.h>
#include <filesystem>
#include <vector>

namespace cky {

Status FileError(const std::string& path, const std::string& what) {
  return Status::Error(path + ": " + what + ": " + std::strerror(errno));
}

namespace {

mode_t CurrentUmask() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

// Writes through `fd` (which it closes); errno-carrying errors name `path`.
Status WriteToDescriptor(int fd, const std::string& path,
                         const std::function<Status(std::ostream&)>& write, bool sync) {
  __gnu_cxx::stdio_filebuf<char> buffer(fd, std::ios::out, 1 << 16);
  std::ostream out(&buffer);
  errno = 0;
  Status written = write(out);
  if (written.ok()) {
    out.flush();
    if (!out) written = FileError(path, "write failed");
  }
  if (written.ok() && sync && ::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
    written = FileError(path, "write failed");
  }
  // The filebuf closes the descriptor; a failing close (a full disk on NFS) is a failed write.
  if (buffer.close() == nullptr && written.ok()) written = FileError(path, "write failed");
  return written;
}

}  // namespace

Status WriteFileAtomically(const std::string& path,
                           const std::function<Status(std::ostream&)>& write,
                           const OutputFileOptions& options) {
  struct stat target {};
  if (::stat(path.c_str(), &target) == 0 && !S_ISREG(target.st_mode)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) return FileError(path, "cannot open for writing");
    return WriteToDescriptor(fd, path, write, /*sync=*/false);
  }
  std::string name = path + ".tmpXXXXXX";
  std::vector<char> temp(name.begin(), name.end());
  temp.push_back('\0');
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) return FileError(path, "cannot open for writing");
  name = temp.data();
  Status status;
  const mode_t mode = options.mode & ~(options.apply_umask ? CurrentUmask() : 0);
  if (::fchmod(fd, mode) != 0) status = FileError(path, "cannot set permissions");
  if (status.ok()) {
    status = WriteToDescriptor(fd, path, write, /*sync=*/true);
  } else {
    ::close(fd);
  }
  if (status.ok() && ::rename(name.c_str(), path.c_str()) != 0) {
    status = FileError(path, "cannot replace");
  }
  if (!status.ok()) ::unlink(name.c_str());
  return status;
}

}  // namespace cky
