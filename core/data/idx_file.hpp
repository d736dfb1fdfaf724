// Reads an IDX file (the MNIST family's format) straight from its gzipped form with zlib; no
// unpacking step (a file that is not gzipped is read as is). Layout: two zero bytes, a type byte
// (0x08: unsigned byte, the only one accepted), a dimension count, the big-endian uint32 size of
// each dimension, then the data.
//
// Sizes from the header are never trusted to allocate: a product over 2^31 bytes is refused
// outright, and below that the buffer grows with the data actually read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct idx_array {
  std::vector<int64_t> dims;   ///< 1 to 4 sizes, each >= 1
  std::vector<uint8_t> bytes;  ///< row-major, product(dims) bytes
};

/// Throws data_error whose message starts with "<path>: " and says what is wrong: "cannot open:
/// <strerror>", "read error: ...", "corrupt gzip stream: <zlib's message>", "gzip stream is cut
/// short: ...", "truncated: ... promises N data bytes, found M", "K trailing bytes after ...",
/// "not an IDX file: bad magic number 0x...", "unsupported IDX element type 0x..", "unsupported
/// IDX dimension count", "dimension D has size 0", "header promises more than 2147483648 bytes".
idx_array read_idx_file(const std::string& path);

/// The dimensions an IDX file's header declares, checked as read_idx_file checks them, without
/// reading the data (a few bytes of the gzip stream). Throws data_error as read_idx_file does.
std::vector<int64_t> read_idx_dims(const std::string& path);

}  // namespace troupe
