// The files of a run across processes, beside the job: the coordinator states each data file's
// size and SHA-256 (data stays on every node's own disk, and a node whose copy differs is
// refused, naming the file, so that no replica trains on other rows), and ships a TorchScript
// model file (a node has no copy of the user's model) in chunks that the node hashes as they
// arrive and checks against the size and SHA-256 the coordinator stated.
//
// Thread safety: none; each object has one owner.
#pragma once

#include "core/checkpoint/sha256.hpp"
#include "core/job/job_config.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace troupe {

/// A file as the coordinator holds it.
struct file_digest {
  std::string path;
  int64_t bytes = 0;
  std::string sha256;
};

/// A shipped file travels in chunks of at most this many bytes: well under the frame limit a
/// node sets before it has the job (core/cluster/link_limits).
inline constexpr int64_t shipped_chunk_bytes = int64_t{4} << 20;

/// The largest model file a node accepts (it writes what it receives to its disk).
inline constexpr int64_t max_shipped_file_bytes = int64_t{8} << 30;

/// The files `config` reads: Fashion-MNIST's four, the train and test files of tensors and csv,
/// none for the synthetic set.
std::vector<std::string> data_files(const data_config& config);

/// Size and SHA-256 of a file, read in pieces. Throws data_error naming the file.
file_digest digest_file(const std::string& path);

/// "" when this process's copies of the coordinator's data files have the same size and
/// SHA-256; else which file differs (or cannot be read) and how.
std::string data_mismatch(const std::vector<file_digest>& coordinator);

/// A shipped file arriving: each chunk is written to `path` (created new, mode 0600) and hashed
/// on the way. Every problem is a std::runtime_error whose message says what arrived.
class file_receiver {
 public:
  /// `expected`: the size and digest the coordinator stated (expected.path is its name there).
  file_receiver(std::string path, file_digest expected);
  ~file_receiver();
  file_receiver(const file_receiver&) = delete;
  file_receiver& operator=(const file_receiver&) = delete;

  /// Appends a chunk; refuses an empty one and one past the stated size.
  void append(const std::string& chunk);
  int64_t received() const { return received_; }
  bool complete() const { return received_ == expected_.bytes; }
  /// After the last chunk: flushes and closes the file; throws when its digest is not the one
  /// stated.
  void finish();

 private:
  std::string path_;
  file_digest expected_;
  std::FILE* file_ = nullptr;
  int64_t received_ = 0;
  sha256_stream hash_;
};

}  // namespace troupe
