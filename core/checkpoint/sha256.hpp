// SHA-256 of bytes, as lowercase hex (OpenSSL's libcrypto): what a checkpoint's manifest
// records for every file, so that a torn or flipped file is found before it is trusted.
#pragma once

#include <string>
#include <string_view>

namespace troupe {

std::string sha256_hex(std::string_view bytes);

}  // namespace troupe
