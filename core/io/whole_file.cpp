#include "core/io/whole_file.hpp"

#include "core/io/regular_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace troupe {

std::string read_whole_file(const std::string& path, std::size_t max_bytes) {
  regular_file opened(path);
  if (opened.size() > max_bytes)
    throw std::length_error(path + ": " + std::to_string(opened.size()) + " bytes, more than the " +
                            std::to_string(max_bytes) + " such a file may hold");
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(::fdopen(opened.descriptor(), "rb"),
                                                             &std::fclose);
  if (!file)
    throw std::runtime_error(path + ": cannot open (" + std::strerror(errno) + ")");
  opened.release();  // the FILE closes it now
  std::string bytes(opened.size(), '\0');
  const auto got = std::fread(bytes.data(), 1, bytes.size(), file.get());
  if (got != bytes.size() || std::fgetc(file.get()) != EOF)
    throw std::runtime_error(path + ": could not be read whole (it changed while being read?)");
  return bytes;
}

std::string read_small_file(const std::string& path, std::size_t limit) {
  // Opened without waiting: a named pipe no program writes to held open() for ever (a token
  // file, with Ctrl-C caught and so ignored). Read as usual after, blocking: `<(make-job)` has
  // its writer from the start.
  const int fd = open_without_waiting(path);
  if (fd < 0)
    throw std::runtime_error(std::string("cannot open: ") + std::strerror(errno));
  struct stat info {};
  const bool pipe = ::fstat(fd, &info) == 0 && S_ISFIFO(info.st_mode);
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(::fdopen(fd, "rb"), &std::fclose);
  if (!file) {
    ::close(fd);
    throw std::runtime_error(std::string("cannot open: ") + std::strerror(errno));
  }
  std::string text;
  std::vector<char> chunk(64 * 1024);
  while (true) {
    const auto got = std::fread(chunk.data(), 1, chunk.size(), file.get());
    if (got > limit - text.size())
      throw std::length_error("longer than " + (limit % (1 << 20) == 0
                                                    ? std::to_string(limit >> 20) + " MiB"
                                                    : std::to_string(limit >> 10) + " KiB"));
    text.append(chunk.data(), got);
    if (got < chunk.size())
      break;
  }
  // A folder opens, then fails its first read with EISDIR.
  if (std::ferror(file.get()))
    throw std::runtime_error(std::string("cannot read: ") + std::strerror(errno));
  if (pipe && text.empty())
    throw std::runtime_error("a pipe that no program writes to");
  return text;
}

}  // namespace troupe
