// A file opened for reading only once it is known to be a regular file. Opening a FIFO for
// reading blocks until a writer comes: a data or model path that names one by mistake would hang
// troupe with nothing said. So the file is opened without blocking and refused by its type.
#pragma once

#include <cstddef>
#include <string>

namespace troupe {

/// open(path, O_RDONLY) that does not wait for a pipe's writer (then reads block as usual): the
/// descriptor, or -1 with errno set. A pipe with no writer then reads as empty.
int open_without_waiting(const std::string& path);

class regular_file {
 public:
  /// Throws what `fail` makes of a message beginning with the path.
  using failure = void (*)(const std::string& message);

  /// Throws (std::runtime_error unless `fail` throws another) when `path` cannot be opened, or is
  /// a pipe, a device or a folder.
  explicit regular_file(const std::string& path, failure fail = nullptr);
  ~regular_file();
  regular_file(const regular_file&) = delete;
  regular_file& operator=(const regular_file&) = delete;

  int descriptor() const { return fd_; }
  std::size_t size() const { return size_; }  ///< at opening
  /// Up to `n` bytes into `into`, fewer only at the end; throws when the system cannot read it.
  std::size_t read(char* into, std::size_t n);
  /// Hands the descriptor to a new owner (zlib's gzdopen); this object no longer closes it.
  int release();

 private:
  [[noreturn]] void fail(const std::string& message) const;

  std::string path_;
  failure fail_;
  int fd_ = -1;
  std::size_t size_ = 0;
};

/// A regular_file whose problems are data_errors: a data path that names no readable file is the
/// job's fault (exit 2), not troupe's.
regular_file open_data_file(const std::string& path);

}  // namespace troupe
