// Checkpoints on disk, crash-safe: DIR/checkpoints/step-S/ holds the files of the state after
// step S and a manifest.json with each file's size and SHA-256; DIR/checkpoints/latest names the
// newest. Writing: every file goes into .tmp-step-S/ and is fsynced, then the manifest, then the
// folder is renamed to step-S and the parent fsynced, then `latest` is replaced atomically, and
// only then are checkpoints beyond the newest `keep` removed: a kill at any moment leaves the
// previous checkpoint loadable, and retention never removes the newest one that verified.
// Reading: the newest checkpoint whose manifest and files verify, falling back to older ones.
// The manifest names the checkpoint's step (which its folder's name must agree with) and the
// digest of the job it belongs to, so that a checkpoint copied in from another run is not
// resumed as this one's.
//
// Thread safety: the functions are reentrant; one writer per run directory at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct checkpoint_file {
  std::string name;  ///< a plain file name, no folders
  std::string bytes;
};

struct stored_checkpoint {
  int64_t step = -1;  ///< the last step whose update the state holds
  /// The digest of the job it belongs to (core/checkpoint/run_checkpoint's job_digest), kept in
  /// the manifest; "" in checkpoints written before troupe recorded it.
  std::string job_sha256;
  std::vector<checkpoint_file> files;
  const std::string* find(const std::string& name) const;
};

/// The folder of the checkpoints of the run in `run_dir`.
std::string checkpoints_folder(const std::string& run_dir);

/// Writes `c` as described above; keeps the newest `keep` (>= 1) checkpoints. Returns the bytes
/// written. Throws std::runtime_error naming the file for any I/O failure (the previous
/// checkpoints are then untouched).
int64_t write_checkpoint(const std::string& run_dir, const stored_checkpoint& c, int64_t keep);

/// The newest checkpoint that verifies, or nullopt when there is none. Each one skipped (a
/// missing file, a size or checksum that differs, an unreadable manifest, a manifest that names
/// another job than `job_sha256` where that is given) is told to `log`.
std::optional<stored_checkpoint> read_latest_checkpoint(
    const std::string& run_dir, const std::function<void(const std::string&)>& log,
    const std::string& job_sha256 = "");

}  // namespace troupe
