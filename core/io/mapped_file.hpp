// A file mapped read-only into memory: its pages are read when touched and belong to the page
// cache, not to the process's anonymous memory, so a data set larger than memory can be read
// at random, row by row. The mapping lives as long as the last shared_ptr to it (tensors made
// over it hold one).
//
// A file truncated by someone else while it is mapped makes the next touch of a lost page a
// SIGBUS: the contract every memory map has. Data files are not to be rewritten during a run.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace troupe {

class mapped_file {
 public:
  /// Throws data_error naming `path` and the system's reason when it cannot be opened or mapped.
  explicit mapped_file(const std::string& path);
  ~mapped_file();
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;

  const unsigned char* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

using mapped_file_ptr = std::shared_ptr<const mapped_file>;

inline mapped_file_ptr map_file(const std::string& path) {
  return std::make_shared<const mapped_file>(path);
}

}  // namespace troupe
