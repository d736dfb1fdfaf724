// One run writes a folder at a time. A run (or a suite) holds its folder's lock while it lives:
// an exclusive flock on the folder's own descriptor, which the kernel lets go when the process
// ends however it ends (a killed run leaves no stale lock to clear). A second run into the folder
// (--force, --resume, a suite) is refused instead of mixing its files with the first's.
#pragma once

#include <memory>
#include <string>

namespace troupe {

class folder_lock {
 public:
  /// Throws job_error beginning with "`option` `folder`: " when another process holds the
  /// folder (or it cannot be opened).
  folder_lock(const std::string& folder, const std::string& option);
  ~folder_lock();
  folder_lock(const folder_lock&) = delete;
  folder_lock& operator=(const folder_lock&) = delete;

 private:
  int fd_ = -1;
};

using folder_lock_ptr = std::shared_ptr<const folder_lock>;

}  // namespace troupe
