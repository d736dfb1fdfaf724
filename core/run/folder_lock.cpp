#include "core/run/folder_lock.hpp"

#include "core/errors.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace troupe {

folder_lock::folder_lock(const std::string& folder, const std::string& option) {
  fd_ = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0)
    throw job_error({option + " " + folder + ": cannot open the folder: " + std::strerror(errno)});
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd_);
    throw job_error({option + " " + folder +
                     (error == EWOULDBLOCK
                          ? std::string(": another troupe run is writing to this folder now; "
                                        "wait for it to end, or choose another folder")
                          : ": cannot lock the folder: " + std::string(std::strerror(error)))});
  }
}

folder_lock::~folder_lock() {
  ::close(fd_);
}

}  // namespace troupe
