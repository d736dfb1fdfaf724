#include "core/collective/ring_tls.hpp"

#include "core/collective/ring_sockets.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace troupe {
namespace {

// OpenSSL's queued reasons, oldest first, then cleared.
std::string openssl_errors() {
  std::string text;
  while (const auto code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof buffer);
    text += (text.empty() ? "" : "; ") + std::string(buffer);
  }
  return text;
}

}  // namespace

ring_tls::ring_tls(ssl_ctx_st* context, int fd, bool server, std::string peer)
    : peer_(std::move(peer)), wants_(server ? POLLIN : POLLOUT) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
    throw ring_link_error("ring: TLS with " + peer_ + ": " + std::strerror(errno));
  ssl_ = SSL_new(context);
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd) != 1) {
    SSL_free(ssl_);
    throw ring_link_error("ring: TLS with " + peer_ + ": " + openssl_errors());
  }
  // What the ring moves is bulk: megabytes a step in records of 16 KB. Reading ahead into a
  // buffer of several records takes one read() for many of them instead of two per record
  // (header, then body), and AES-128-GCM is a sixth faster than AES-256 with the same AES
  // instructions (4.9 against 4.2 GB/s a core, `openssl speed`, on the machine of
  // docs/benchmarks.md). Encrypting into memory and sending many records per send() was
  // tried: no faster there.
  SSL_set_read_ahead(ssl_, 1);
  SSL_set_default_read_buffer_len(ssl_, 256 * 1024);
  SSL_set_ciphersuites(ssl_, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384");
  if (server)
    SSL_set_accept_state(ssl_);
  else
    SSL_set_connect_state(ssl_);
}

ring_tls::~ring_tls() {
  SSL_free(ssl_);  // no close_notify: the ring's end is its own protocol's
}

ssize_t ring_tls::after(int ret, short natural) {
  if (ret > 0) {
    wants_ = natural;
    return ret;
  }
  switch (SSL_get_error(ssl_, ret)) {
    case SSL_ERROR_WANT_READ:
      wants_ = POLLIN;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_WANT_WRITE:
      wants_ = POLLOUT;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_ZERO_RETURN:
      return 0;
    case SSL_ERROR_SYSCALL:
      if (errno == 0 || errno == EAGAIN)  // an end of file in the middle of a record
        return 0;
      throw ring_link_error("ring: TLS with " + peer_ + ": " + std::strerror(errno));
    default: {
      std::string why = openssl_errors();
      if (const long verify = SSL_get_verify_result(ssl_); verify != X509_V_OK)
        why += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
      throw ring_link_error("ring: TLS with " + peer_ + ": " + why);
    }
  }
}

ssize_t ring_tls::write(const void* data, std::size_t bytes) {
  ERR_clear_error();
  errno = 0;
  return after(SSL_write(ssl_, data, static_cast<int>(std::min<std::size_t>(bytes, INT_MAX))),
               POLLOUT);
}

ssize_t ring_tls::read(void* into, std::size_t bytes) {
  ERR_clear_error();
  errno = 0;
  return after(SSL_read(ssl_, into, static_cast<int>(std::min<std::size_t>(bytes, INT_MAX))),
               POLLIN);
}

}  // namespace troupe
