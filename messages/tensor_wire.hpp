// How an at::Tensor crosses a process boundary: a dtype code, the shape and the raw contiguous
// bytes (host byte order; troupe's nodes are little endian). Inside one process CAF never
// serializes a message, so tensors still travel by handle there; these functions run only when
// a message leaves for, or arrives from, another node.
//
// Decoding trusts nothing: the dtype code, the rank, every dimension and the byte count are
// checked against each other, and the byte count against the bytes the message really holds,
// before anything is allocated. A tensor that fails a check is refused with an error naming
// what was wrong, and CAF drops the message.
//
// The sender must not modify a tensor after sending it: the middleman serializes it later, on
// its own thread.
//
// The overloads live in namespace `at` because CAF finds `inspect` by argument-dependent lookup
// on the inspected type; defining them there keeps every message that names at::Tensor as is.
#pragma once

#include <ATen/core/Tensor.h>
#include <caf/deserializer.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/serializer.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace troupe::wire {

/// Largest tensor on the wire: a CAF (BASP) message's payload length is 32 bits.
constexpr uint64_t max_tensor_bytes = uint64_t{1} << 31;
constexpr uint8_t max_tensor_dims = 16;

/// "float32[3,4]" or "undefined": what logs and to_string show instead of the data.
std::string describe(const at::Tensor& t);

}  // namespace troupe::wire

namespace at {

caf::error inspect(caf::serializer& f, at::Tensor& x);
caf::error inspect(caf::deserializer& f, at::Tensor& x);

/// Every other inspector (to_string, deep_to_string): the description, never the data. Kept
/// away from serializers explicitly: for a class derived from caf::serializer this template
/// would otherwise be a better match than the overloads above.
template <class Inspector,
          class = std::enable_if_t<!std::is_base_of<caf::serializer, Inspector>::value &&
                                   !std::is_base_of<caf::deserializer, Inspector>::value>>
typename Inspector::result_type inspect(Inspector& f, at::Tensor& x) {
  auto d = troupe::wire::describe(x);
  return f(caf::meta::type_name("tensor"), d);
}

}  // namespace at
