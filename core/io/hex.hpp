// Bytes as lowercase hexadecimal text and back: how digests, join challenges and proofs travel
// as text.
#pragma once

#include <string>
#include <string_view>

namespace troupe {

/// Two lowercase hex digits per byte.
std::string to_hex(std::string_view bytes);
/// The bytes `hex` spells (either case). Throws std::invalid_argument naming what is wrong: an
/// odd number of digits or a character that is not one.
std::string from_hex(std::string_view hex);

}  // namespace troupe
