#include "core/io/owned_temp_folder.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>

namespace troupe {

namespace fs = std::filesystem;

int remove_abandoned_folders(const std::string& parent, const std::string& prefix, double quiet_s) {
  const auto start = prefix + "-";
  int removed = 0;
  std::error_code ec;
  fs::directory_iterator it(parent, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const auto path = it->path().string();
    if (it->path().filename().string().rfind(start, 0) != 0)
      continue;
    // Opened without following a link: a link planted under that name leads nowhere.
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      continue;
    struct stat st {};
    const bool mine = ::fstat(fd, &st) == 0 && st.st_uid == ::geteuid();
    const bool quiet = std::difftime(std::time(nullptr), st.st_mtime) >= quiet_s;
    if (mine && quiet && ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      std::error_code ignored;
      fs::remove_all(path, ignored);
      removed += ignored ? 0 : 1;
    }
    ::close(fd);
  }
  return removed;
}

owned_temp_folder::owned_temp_folder(const std::string& prefix) {
  std::error_code ec;
  // $TMPDIR as POSIX reads it: unset or empty means /tmp (std::filesystem refused an empty one).
  const char* variable = std::getenv("TMPDIR");
  const fs::path parent = variable != nullptr && *variable != '\0' ? variable : "/tmp";
  if (!fs::is_directory(parent, ec))
    throw std::runtime_error(
        "no folder for temporary files: " +
        (variable != nullptr && *variable != '\0'
             ? "TMPDIR=" + parent.string() + " is not a folder (make it, or unset TMPDIR for /tmp)"
             : std::string("/tmp is not a folder")));
  remove_abandoned_folders(parent.string(), prefix);
  auto pattern = (parent / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("cannot make a private folder in " + parent.string() + ": " +
                             std::strerror(errno));
  path_ = pattern;
  fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0 || ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const auto why = std::string(std::strerror(errno));
    fs::remove_all(path_, ec);
    if (fd_ >= 0)
      ::close(fd_);
    throw std::runtime_error("cannot lock the private folder " + path_ + ": " + why);
  }
}

owned_temp_folder::~owned_temp_folder() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
  ::close(fd_);
}

}  // namespace troupe
