// Fuzz target: the bytes of tensors arriving from another node (messages/tensor_wire), decoded
// one after another as a message holding several would be. Each tensor decoded must encode back
// to exactly the bytes it was read from.
#include "messages/tensor_wire.hpp"
#include "tests/fuzz/fuzz_common.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  at::set_num_threads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* bytes = reinterpret_cast<const char*>(data);
  caf::binary_deserializer source{nullptr, bytes, size};
  for (int i = 0; i < 8 && source.remaining() > 0; ++i) {
    const std::size_t start = size - source.remaining();
    at::Tensor t;
    if (auto err = inspect(source, t))
      return 0;
    const std::size_t used = size - source.remaining() - start;
    troupe::wire::describe(t);
    std::vector<char> again;
    caf::binary_serializer sink{nullptr, again};
    if (auto err = inspect(sink, t))
      troupe::fuzz::fail("a decoded tensor cannot be encoded again: " + caf::to_string(err));
    if (again.size() != used || std::memcmp(again.data(), bytes + start, used) != 0)
      troupe::fuzz::fail("a decoded tensor (" + troupe::wire::describe(t) + ") encodes to " +
                         std::to_string(again.size()) + " bytes, read from " +
                         std::to_string(used));
  }
  return 0;
}
