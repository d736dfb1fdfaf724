#include "core/io/mapped_file.hpp"

#include "core/errors.hpp"
#include "core/io/regular_file.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

namespace troupe {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int error) {
  throw data_error(path + ": cannot " + what + " (" + std::strerror(error) + ")");
}

}  // namespace

mapped_file::mapped_file(const std::string& path) : path_(path) {
  const auto file = open_data_file(path);
  size_ = file.size();
  if (size_ > 0) {
    void* at = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, file.descriptor(), 0);
    if (at == MAP_FAILED)
      fail(path, "map it into memory", errno);
    // No MADV_RANDOM, though steps read rows in a shuffled order: it also turns off the
    // kernel's fault-around (mapping the cached neighbours of a faulting page at once), and
    // with it on a cached file trains 12% slower (bench/npy_memory.py).
    data_ = static_cast<const unsigned char*>(at);
  }
  // The mapping keeps the file open when `file` closes its descriptor.
}

mapped_file::~mapped_file() {
  if (data_ != nullptr)
    ::munmap(const_cast<unsigned char*>(data_), size_);
}

}  // namespace troupe
