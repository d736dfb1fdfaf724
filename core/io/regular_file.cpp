#include "core/io/regular_file.hpp"

#include "core/errors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace troupe {

int open_without_waiting(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0)  // the flag only kept open() from waiting
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

regular_file::regular_file(const std::string& path, failure fail) : path_(path), fail_(fail) {
  fd_ = open_without_waiting(path);
  if (fd_ < 0)
    this->fail(path + ": cannot open it (" + std::strerror(errno) + ")");
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const int error = errno;
    ::close(fd_);
    this->fail(path + ": cannot read its size (" + std::strerror(error) + ")");
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd_);
    this->fail(path + ": not a regular file (a " +
               (S_ISDIR(info.st_mode)    ? "folder"
                : S_ISFIFO(info.st_mode) ? "pipe"
                                         : "device or socket") +
               ")");
  }
  size_ = static_cast<std::size_t>(info.st_size);
}

regular_file::~regular_file() {
  if (fd_ >= 0)
    ::close(fd_);
}

void regular_file::fail(const std::string& message) const {
  if (fail_ != nullptr)
    fail_(message);
  throw std::runtime_error(message);
}

std::size_t regular_file::read(char* into, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    const auto got = ::read(fd_, into + done, n - done);
    if (got == 0)
      break;
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      fail(path_ + ": could not be read (" + std::strerror(errno) + ")");
    done += static_cast<std::size_t>(got);
  }
  return done;
}

int regular_file::release() {
  return std::exchange(fd_, -1);
}

regular_file open_data_file(const std::string& path) {
  return regular_file(path, [](const std::string& message) { throw data_error(message); });
}

}  // namespace troupe
