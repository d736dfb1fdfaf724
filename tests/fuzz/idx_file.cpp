// Fuzz target: an IDX data file (core/data/idx_file) as it lies on disk, read twice: the bytes as
// they are (zlib reads what is not gzip as plain bytes, and a gzip stream as one) and the same
// bytes gzip-compressed first, which reaches the IDX checks behind a valid stream. Whatever
// read_idx_file accepts must hold exactly the bytes its dimensions promise, and read_idx_dims
// must agree with it.
#include "core/data/idx_file.hpp"
#include "core/errors.hpp"
#include "tests/fuzz/fuzz_common.hpp"

#include <optional>

namespace {

void read_both(const std::string& path) {
  std::optional<std::vector<int64_t>> dims;
  try {
    dims = troupe::read_idx_dims(path);
  } catch (const troupe::data_error&) {
  }
  troupe::idx_array array;
  try {
    array = troupe::read_idx_file(path);
  } catch (const troupe::data_error&) {
    return;
  }
  if (!dims || *dims != array.dims)
    troupe::fuzz::fail("read_idx_dims disagrees with read_idx_file");
  uint64_t product = 1;
  for (auto d : array.dims) {
    if (d < 1)
      troupe::fuzz::fail("a dimension below 1 was accepted");
    product *= static_cast<uint64_t>(d);
  }
  if (array.dims.empty() || array.dims.size() > 4 || product != array.bytes.size())
    troupe::fuzz::fail("the data does not match the dimensions");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  read_both(troupe::fuzz::scratch_file("raw", troupe::fuzz::as_text(data, size)));
  read_both(troupe::fuzz::scratch_file("gz", troupe::fuzz::gzip(data, size)));
  return 0;
}
