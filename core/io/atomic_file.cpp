#include "core/io/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace troupe {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int err) {
  throw std::runtime_error(path + ": cannot " + what + ": " + std::strerror(err));
}

constexpr std::string_view temporary_marker = ".tmp.";

// The process id that names a temporary (NAME.tmp.PID), or -1 for any other name.
pid_t temporary_owner(const std::string& name) {
  const auto at = name.rfind(temporary_marker);
  if (at == std::string::npos || at == 0)
    return -1;
  const auto digits = name.substr(at + temporary_marker.size());
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return static_cast<pid_t>(std::stol(digits));
}

}  // namespace

int remove_abandoned_temporaries(const std::string& folder) {
  namespace fs = std::filesystem;
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const auto owner = temporary_owner(entry.path().filename().string());
    if (owner <= 0 || !entry.is_regular_file(ec))
      continue;
    if (::kill(owner, 0) == 0 || errno == EPERM)
      continue;  // its writer still runs
    if (fs::remove(entry.path(), ec))
      ++removed;
  }
  return removed;
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  // The rename below replaces whatever the name holds: a device (root's save_weights to
  // /dev/full left a 102 KB file in its place), a pipe, a folder's link. Only a file, or nothing,
  // is replaced.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw std::runtime_error(path +
                             ": exists and is not a regular file; troupe replaces only a "
                             "file it wrote");
  // Messages name the file asked for; its temporary (NAME.tmp.PID) is troupe's business.
  const std::string tmp = path + std::string(temporary_marker) + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail(path, "create", errno);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail(path, "write", err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, "flush", err);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, "replace", err);
  }
}

}  // namespace troupe
