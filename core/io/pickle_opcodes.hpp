// The opcodes of the pickles torch's picklers write (protocol 2, with the protocol 4 opcodes
// Python's may use), as core/io/pickle_walk reads them: what bytes follow each one, and the
// storage types a pickle may name with their element sizes. Anything not listed is refused.
//
// Thread safety: immutable tables.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace troupe {

/// What follows an opcode.
enum class pickle_operand_kind : uint8_t {
  unknown,  ///< not an opcode troupe reads: refused
  fixed,    ///< `bytes` bytes
  counted,  ///< a little-endian length of `bytes` bytes, then that many
  index,    ///< a memo index (or frame size) of `bytes` bytes, at most the pickle's size
  lines,    ///< GLOBAL: two newline-terminated names
  stop,
};

struct pickle_operand {
  pickle_operand_kind kind = pickle_operand_kind::unknown;
  int bytes = 0;
};

/// By opcode byte.
const std::array<pickle_operand, 256>& pickle_operands();

/// The bytes of one element of a storage type LibTorch rebuilds ("FloatStorage": 4); 0 for a
/// type troupe does not read.
uint64_t storage_element_bytes(std::string_view type);

}  // namespace troupe
