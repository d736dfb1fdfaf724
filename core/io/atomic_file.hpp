// Writes a file so that readers see either the old content or the whole new content, never a
// half-written file: the bytes go to a temporary file in the same folder, are flushed to disk,
// and the temporary is renamed over the target (rename is atomic within one file system).
#pragma once

#include <string>
#include <string_view>

namespace troupe {

/// Throws std::runtime_error naming the path if any step fails (the temporary is removed then),
/// or if the path names something other than a regular file (a device, a pipe, a folder, a
/// link), which the rename would replace.
void write_file_atomically(const std::string& path, std::string_view bytes);

/// Removes the temporaries of write_file_atomically in `folder` that a process killed mid-write
/// left behind (those whose process no longer runs). Returns how many it removed.
int remove_abandoned_temporaries(const std::string& folder);

}  // namespace troupe
