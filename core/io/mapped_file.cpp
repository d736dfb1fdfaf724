#include "core/io/mapped_file.hpp"

#include "core/errors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace troupe {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int error) {
  throw data_error(path + ": cannot " + what + " (" + std::strerror(error) + ")");
}

}  // namespace

mapped_file::mapped_file(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail(path, "open it", errno);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    fail(path, "read its size", error);
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    throw data_error(path + ": not a regular file");
  }
  size_ = static_cast<std::size_t>(info.st_size);
  if (size_ > 0) {
    void* at = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (at == MAP_FAILED) {
      const int error = errno;
      ::close(fd);
      fail(path, "map it into memory", error);
    }
    // No MADV_RANDOM, though steps read rows in a shuffled order: it also turns off the
    // kernel's fault-around (mapping the cached neighbours of a faulting page at once), and
    // with it on a cached file trains 12% slower (bench/npy_memory.py).
    data_ = static_cast<const unsigned char*>(at);
  }
  ::close(fd);  // the mapping keeps the file open
}

mapped_file::~mapped_file() {
  if (data_ != nullptr)
    ::munmap(const_cast<unsigned char*>(data_), size_);
}

}  // namespace troupe
