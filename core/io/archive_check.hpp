// Checks the container of a PyTorch archive (the zip that torch::save and pickle_save write)
// before LibTorch reads it. LibTorch 1.13's zip reader trusts the offsets and sizes an archive
// states: a forged end-of-central-directory record made it read past the end of the buffer
// (found by the checkpoint_files fuzzer, a heap-buffer-overflow inside mz_zip_reader_init).
// Every offset and size the reader will follow is checked against the buffer here, so bytes
// from outside (a checkpoint's files, an optimizer's state) reach LibTorch only when its reads
// stay inside them. A structural check, not a parser: what passes may still be refused by
// LibTorch, with an exception.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

/// Why `bytes` is not a well-formed zip archive whose every entry lies inside it, or "".
std::string archive_problem(std::string_view bytes);

/// One entry of the central directory: what LibTorch's reader allocates when it reads it.
struct archive_entry {
  std::string name;
  uint64_t uncompressed_bytes = 0;
  bool deflated = false;
};

/// The entries of an archive, in the directory's order. Throws std::runtime_error with
/// archive_problem's reason for an archive that fails it.
std::vector<archive_entry> archive_entries(std::string_view bytes);

}  // namespace troupe
