// SHA-256 of bytes, as lowercase hex (OpenSSL's libcrypto): what a checkpoint's manifest
// records for every file, so that a torn or flipped file is found before it is trusted, and
// what the coordinator states for the files its nodes must hold or receive.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace troupe {

std::string sha256_hex(std::string_view bytes);

/// SHA-256 over bytes given piece by piece (a file read in chunks, a file arriving in chunks).
/// Thread safety: none; one owner.
class sha256_stream {
 public:
  sha256_stream();
  ~sha256_stream();
  sha256_stream(const sha256_stream&) = delete;
  sha256_stream& operator=(const sha256_stream&) = delete;

  void update(std::string_view bytes);
  /// The digest of everything given so far, as lowercase hex; the stream is spent after it.
  std::string hex();

 private:
  struct context;
  std::unique_ptr<context> context_;
};

}  // namespace troupe
