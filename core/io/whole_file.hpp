// A whole file read into memory at its size, in one allocation: a file of F bytes costs F bytes
// of memory, not the up to 2F a growing string takes while it doubles (a 188 MB tensor file
// would otherwise peak at well over twice its size while it loads).
#pragma once

#include <string>

namespace troupe {

/// Throws std::runtime_error beginning with `path` when the file cannot be opened or read
/// whole (including a file that changed size while it was read).
std::string read_whole_file(const std::string& path);

}  // namespace troupe
