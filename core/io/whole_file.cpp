#include "core/io/whole_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <sys/stat.h>

namespace troupe {

std::string read_whole_file(const std::string& path) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                             &std::fclose);
  if (!file)
    throw std::runtime_error(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat info {};
  if (::fstat(::fileno(file.get()), &info) != 0)
    throw std::runtime_error(path + ": cannot stat (" + std::strerror(errno) + ")");
  if (!S_ISREG(info.st_mode))
    throw std::runtime_error(path + ": not a regular file");
  std::string bytes(static_cast<std::size_t>(info.st_size), '\0');
  const auto got = std::fread(bytes.data(), 1, bytes.size(), file.get());
  if (got != bytes.size() || std::fgetc(file.get()) != EOF)
    throw std::runtime_error(path + ": could not be read whole (it changed while being read?)");
  return bytes;
}

}  // namespace troupe
