#include "core/checkpoint/sha256.hpp"

#include "core/io/hex.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace troupe {
namespace {

std::string digest_hex(const unsigned char* digest, unsigned int length) {
  return to_hex({reinterpret_cast<const char*>(digest), length});
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256: OpenSSL's EVP_Digest failed");
  return digest_hex(digest, length);
}

struct sha256_stream::context {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~context() { EVP_MD_CTX_free(md); }
};

sha256_stream::sha256_stream() : context_(std::make_unique<context>()) {
  if (context_->md == nullptr || EVP_DigestInit_ex(context_->md, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256: OpenSSL's EVP_DigestInit_ex failed");
}

sha256_stream::~sha256_stream() = default;

void sha256_stream::update(std::string_view bytes) {
  if (EVP_DigestUpdate(context_->md, bytes.data(), bytes.size()) != 1)
    throw std::runtime_error("sha256: OpenSSL's EVP_DigestUpdate failed");
}

std::string sha256_stream::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context_->md, digest, &length) != 1)
    throw std::runtime_error("sha256: OpenSSL's EVP_DigestFinal_ex failed");
  return digest_hex(digest, length);
}

}  // namespace troupe
