#include "core/io/hex.hpp"

#include <stdexcept>

namespace troupe {
namespace {

int digit_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string to_hex(std::string_view bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::string from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0)
    throw std::invalid_argument("hex text of " + std::to_string(hex.size()) +
                                " digits: not whole bytes");
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int high = digit_value(hex[i]);
    const int low = digit_value(hex[i + 1]);
    if (high < 0 || low < 0)
      throw std::invalid_argument("hex text holds '" + std::string(hex.substr(i, 2)) + "' at " +
                                  std::to_string(i) + ": not hex digits");
    out += static_cast<char>(high * 16 + low);
  }
  return out;
}

}  // namespace troupe
