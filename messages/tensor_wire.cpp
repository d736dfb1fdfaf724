#include "messages/tensor_wire.hpp"

#include <ATen/ATen.h>
#include <caf/binary_deserializer.hpp>
#include <caf/sec.hpp>

#include <optional>
#include <vector>

namespace troupe::wire {
namespace {

// Explicit codes: at::ScalarType's numbering is an implementation detail, not a wire format.
constexpr at::ScalarType codes[] = {at::kFloat, at::kDouble, at::kLong,     at::kInt,
                                    at::kByte,  at::kHalf,   at::kBFloat16, at::kBool};

uint8_t code_of(at::ScalarType t) {
  for (uint8_t i = 0; i < std::size(codes); ++i)
    if (codes[i] == t)
      return static_cast<uint8_t>(i + 1);
  return 0;
}

std::optional<at::ScalarType> type_of(uint8_t code) {
  if (code < 1 || code > std::size(codes))
    return std::nullopt;
  return codes[code - 1];
}

caf::error refuse(const std::string& what) {
  return caf::make_error(caf::sec::invalid_argument, "tensor on the wire: " + what);
}

}  // namespace

std::string describe(const at::Tensor& t) {
  if (!t.defined())
    return "undefined";
  std::string d = std::string(t.dtype().name()) + "[";
  for (int64_t i = 0; i < t.dim(); ++i)
    d += (i > 0 ? "," : "") + std::to_string(t.size(i));
  return d + "]";
}

}  // namespace troupe::wire

namespace at {

using namespace troupe::wire;

// Layout: u8 dtype code (0 = undefined tensor) | u8 rank | i64 dims[rank] | u64 byte count |
// the bytes.
caf::error inspect(caf::serializer& f, at::Tensor& x) {
  if (!x.defined())
    return f(uint8_t{0});
  const at::Tensor c = x.device().is_cpu() && x.is_contiguous() ? x : x.to(at::kCPU).contiguous();
  const uint8_t code = code_of(c.scalar_type());
  if (code == 0)
    return refuse("dtype " + std::string(c.dtype().name()) + " cannot be sent");
  if (c.dim() > max_tensor_dims)
    return refuse(std::to_string(c.dim()) + " dimensions, at most " +
                  std::to_string(max_tensor_dims) + " can be sent");
  const uint64_t bytes = c.nbytes();
  if (bytes > max_tensor_bytes)
    return refuse(std::to_string(bytes) + " bytes, at most " + std::to_string(max_tensor_bytes) +
                  " can be sent in one message");
  if (auto err = f(code, static_cast<uint8_t>(c.dim())))
    return err;
  for (int64_t d : c.sizes())
    if (auto err = f(d))
      return err;
  if (auto err = f(bytes))
    return err;
  return bytes > 0 ? f.apply_raw(bytes, const_cast<void*>(c.data_ptr())) : caf::error{};
}

caf::error inspect(caf::deserializer& f, at::Tensor& x) {
  uint8_t code = 0;
  if (auto err = f(code))
    return err;
  if (code == 0) {
    x = at::Tensor();
    return caf::none;
  }
  const auto type = type_of(code);
  if (!type)
    return refuse("unknown dtype code " + std::to_string(code));
  uint8_t rank = 0;
  if (auto err = f(rank))
    return err;
  if (rank > max_tensor_dims)
    return refuse(std::to_string(rank) + " dimensions, at most " + std::to_string(max_tensor_dims));
  const uint64_t element = at::elementSize(*type);
  std::vector<int64_t> shape(rank);
  uint64_t elements = 1;
  for (auto& d : shape) {
    if (auto err = f(d))
      return err;
    if (d < 0)
      return refuse("negative dimension " + std::to_string(d));
    // Overflow-safe: elements * d * element_size must stay within the limit.
    if (d > 0 && elements > max_tensor_bytes / element / static_cast<uint64_t>(d))
      return refuse("shape larger than " + std::to_string(max_tensor_bytes) + " bytes");
    elements *= static_cast<uint64_t>(d);
  }
  uint64_t bytes = 0;
  if (auto err = f(bytes))
    return err;
  if (bytes != elements * element)
    return refuse("the header promises " + std::to_string(bytes) + " bytes but the shape holds " +
                  std::to_string(elements * element));
  // Messages from the network always load through a binary_deserializer: a payload shorter than
  // the header claims is refused before the allocation, not after.
  if (auto* bd = dynamic_cast<caf::binary_deserializer*>(&f);
      bd != nullptr && bd->remaining() < bytes)
    return refuse("the header promises " + std::to_string(bytes) + " bytes, the message holds " +
                  std::to_string(bd->remaining()));
  x = at::empty(shape, at::TensorOptions().dtype(*type));
  return bytes > 0 ? f.apply_raw(bytes, x.data_ptr()) : caf::error{};
}

}  // namespace at
