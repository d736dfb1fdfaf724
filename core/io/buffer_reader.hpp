// An archive in memory as LibTorch's zip reader reads it: every read clamped to the buffer, so a
// read past its end returns what there is. Only for bytes that passed archive_problem
// (core/io/archive_check): the reader follows the offsets they state.
//
// Thread safety: reads only; the buffer must outlive the reader.
#pragma once

#include <caffe2/serialize/read_adapter_interface.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace troupe {

class buffer_reader final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit buffer_reader(std::string_view bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char*) const override {
    if (pos >= bytes_.size())
      return 0;
    n = std::min<uint64_t>(n, bytes_.size() - pos);
    std::memcpy(buf, bytes_.data() + pos, n);
    return n;
  }

 private:
  std::string_view bytes_;
};

}  // namespace troupe
