#include "core/io/scratch_mapping.hpp"

#include "core/errors.hpp"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>

namespace troupe {
namespace {

std::string system_reason() {
  return std::strerror(errno);
}

}  // namespace

std::string default_scratch_folder() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

at::Tensor scratch_bytes(const std::vector<int64_t>& sizes, const std::string& folder) {
  const auto bytes = std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>());
  struct statvfs fs {};
  if (::statvfs(folder.c_str(), &fs) != 0)
    throw data_error(fmt::format("{}: cannot hold scratch files: {}", folder, system_reason()));
  const double free = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  if (free < static_cast<double>(bytes))
    throw data_error(fmt::format("{}: {:.1f} MB free, the decoded images need {:.1f} MB", folder,
                                 free / 1e6, static_cast<double>(bytes) / 1e6));
  auto pattern = folder + "/troupe-scratch-XXXXXX";
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0)
    throw data_error(fmt::format("{}: cannot make a scratch file: {}", folder, system_reason()));
  ::unlink(pattern.c_str());  // gone with the last mapping, however the process ends
  // Blocks reserved now, not when a page is first written: a file system that fills up then
  // fails this call rather than a later store into the mapping (a SIGBUS).
  if (const int rc = bytes > 0 ? ::posix_fallocate(fd, 0, bytes) : 0; rc != 0) {
    ::close(fd);
    throw data_error(fmt::format("{}: cannot reserve {} bytes for a scratch file: {}", folder,
                                 bytes, std::strerror(rc)));
  }
  void* data = bytes > 0 ? ::mmap(nullptr, static_cast<std::size_t>(bytes), PROT_READ | PROT_WRITE,
                                  MAP_SHARED, fd, 0)
                         : nullptr;
  const auto why = system_reason();
  ::close(fd);  // the mapping keeps the file
  if (data == MAP_FAILED)
    throw data_error(
        fmt::format("{}: cannot map a scratch file of {} bytes: {}", folder, bytes, why));
  if (bytes == 0)
    return at::empty(sizes, at::kByte);
  return at::from_blob(
      data, sizes, [bytes](void* p) { ::munmap(p, static_cast<std::size_t>(bytes)); }, at::kByte);
}

}  // namespace troupe
