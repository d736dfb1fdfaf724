// A private folder (mode 0700) under the temporary directory for what one process keeps while
// it lives: a node's fetched job files, a local cluster's keys and certificates. The process
// holds an flock on it, which the kernel lets go however the process ends; the folder goes with
// the object, and where the process was killed (SIGKILL runs no destructor: 1,180 node folders
// were found under /tmp, and private keys), with the next process that makes a folder of the
// same prefix.
//
// Thread safety: none needed; one owner.
#pragma once

#include <string>

namespace troupe {

class owned_temp_folder {
 public:
  /// Makes $TMPDIR/PREFIX-XXXXXX, locked, after removing the abandoned ones of that prefix.
  /// Throws std::runtime_error naming the temporary directory when it cannot.
  explicit owned_temp_folder(const std::string& prefix);
  ~owned_temp_folder();
  owned_temp_folder(const owned_temp_folder&) = delete;
  owned_temp_folder& operator=(const owned_temp_folder&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

/// Removes the folders PREFIX-* in `parent` that this user owns, that no process holds locked
/// and that have not changed for `quiet_s` seconds (a folder just made is locked a moment
/// later). Returns how many went.
int remove_abandoned_folders(const std::string& parent, const std::string& prefix,
                             double quiet_s = 60);

}  // namespace troupe
