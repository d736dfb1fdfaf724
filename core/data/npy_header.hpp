// The header of a NumPy .npy file (format versions 1, 2 and 3, as numpy.save writes them):
// magic "\x93NUMPY", a version, the header's length, and a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 28, 28), }. The array's bytes follow
// it, C order. Only the header is read to plan a run; the rows are read through a memory map.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

/// The element types troupe reads: inputs float32, float16 (widened) or uint8 (scaled by 1/255
/// like images); targets int64 or int32 labels, float32 or float64 values.
enum class npy_dtype { float32, float16, uint8, int64, int32, float64 };

struct npy_header {
  npy_dtype dtype = npy_dtype::float32;
  std::vector<int64_t> shape;   ///< [rows, ...]
  std::size_t data_offset = 0;  ///< where the array's bytes start
  std::size_t data_bytes = 0;   ///< rows x row_bytes
  std::size_t row_bytes = 0;    ///< one row's bytes: the element size times the row's values
};

/// "float32", "uint8", ...
const char* to_string(npy_dtype dtype);
std::size_t element_size(npy_dtype dtype);

/// Parses the header at the start of a file of `size` bytes, `bytes` (the whole file, or at
/// least its header), and checks the file's size against it: a file shorter than its header
/// declares is truncated, a longer one lies about its shape. Throws data_error starting with
/// `path` for anything that is not a C-order, little-endian array of at least one row of one of
/// the types above.
npy_header parse_npy_header(const std::string& path, const unsigned char* bytes, std::size_t size);

}  // namespace troupe
