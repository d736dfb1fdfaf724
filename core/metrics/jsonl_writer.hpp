// Appends one JSON object per line to a file, each line in one write, so that a crash or a kill
// loses at most the line being written and `tail -f` shows progress as it happens. A write that
// fails (a full disk) is taken back: the file is cut to its last whole record before the error
// is thrown, so a reader never meets half a record that a later one follows.
//
// Thread safety: none; one owner (the run driver) writes.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace troupe {

class jsonl_writer {
 public:
  jsonl_writer() = default;  ///< writes nowhere (for runs without an output folder)
  explicit jsonl_writer(const std::string& path);
  ~jsonl_writer();
  jsonl_writer(const jsonl_writer&) = delete;
  jsonl_writer& operator=(const jsonl_writer&) = delete;

  /// Throws output_error (core/errors.hpp) naming the file when the record cannot be written
  /// whole.
  void write(const nlohmann::json& record);
  /// Bytes this writer appended so far (what the metrics budget counts).
  std::size_t bytes_written() const { return bytes_written_; }

 private:
  int fd_ = -1;
  std::string path_;
  std::size_t bytes_written_ = 0;
  /// The file's size after its last whole record.
  long long whole_size_ = 0;
};

}  // namespace troupe
