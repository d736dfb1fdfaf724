// Appends one JSON object per line to a file and flushes each line, so that a crash or a kill
// loses at most the line being written and `tail -f` shows progress as it happens.
//
// Thread safety: none; one owner (the run driver) writes.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdio>
#include <string>

namespace troupe {

class jsonl_writer {
 public:
  jsonl_writer() = default;  ///< writes nowhere (for runs without an output folder)
  explicit jsonl_writer(const std::string& path);
  ~jsonl_writer();
  jsonl_writer(const jsonl_writer&) = delete;
  jsonl_writer& operator=(const jsonl_writer&) = delete;

  void write(const nlohmann::json& record);
  /// Bytes this writer appended so far (what the metrics budget counts).
  std::size_t bytes_written() const { return bytes_written_; }

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
  std::size_t bytes_written_ = 0;
};

}  // namespace troupe
