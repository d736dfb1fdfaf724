// A whole file read into memory at its size, in one allocation: a file of F bytes costs F bytes
// of memory, not the up to 2F a growing string takes while it doubles (a 188 MB tensor file
// would otherwise peak at well over twice its size while it loads). And a file that should be
// small, read up to a limit.
#pragma once

#include <cstddef>
#include <string>

namespace troupe {

/// Throws std::runtime_error beginning with `path` when the file cannot be opened or read
/// whole (including a file that changed size while it was read), or is not a regular file (a
/// pipe is refused, not waited on), and std::length_error when it is larger than `max_bytes`
/// (before any of it is read).
std::string read_whole_file(const std::string& path,
                            std::size_t max_bytes = static_cast<std::size_t>(-1));

/// A file that should be small (a job file, a token), read as a stream, so that a pipe works
/// (`troupe run <(make-job)`), but at most `limit` bytes of it: a longer one (a wrong path, a
/// device such as /dev/zero that never ends) throws std::length_error naming the limit instead of
/// filling memory. Throws std::runtime_error with the system's reason when it cannot be opened
/// or read (a folder included). Messages leave the path to the caller.
std::string read_small_file(const std::string& path, std::size_t limit);

}  // namespace troupe
