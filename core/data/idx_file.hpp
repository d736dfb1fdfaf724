// Reads an IDX file (the MNIST family's format) straight from its gzipped form with zlib; no
// unpacking step. Layout: two zero bytes, a type byte (0x08: unsigned byte, the only one
// accepted), a dimension count, the big-endian uint32 size of each dimension, then the data.
//
// Every size in the header is checked before anything is allocated: a hostile or corrupt header
// cannot make the reader reserve gigabytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct idx_array {
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;  ///< row-major, product(dims) bytes
};

/// Throws data_error naming `path` when the file is missing, not a valid gzip stream, has a bad
/// header, is truncated or has trailing bytes.
idx_array read_idx_file(const std::string& path);

}  // namespace troupe
