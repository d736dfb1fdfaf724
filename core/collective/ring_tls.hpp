// TLS 1.3 on one connection of the socket ring (core/collective/socket_ring.hpp), in user space
// with OpenSSL: this kernel offers no kernel TLS (no "tls" in net.ipv4.tcp_available_ulp), so
// every byte is encrypted and decrypted by the ring's own thread, AES-GCM with the CPU's AES
// instructions, a few GB/s a core.
//
// The connection is already the ring's: its plain hello carried the ring's secret (ring_sockets).
// The handshake comes after it, inside the ring's first sum: the connecting side is the client,
// the listening side the server, each presents its node's certificate and checks the other's
// against the cluster's CA (the context's settings, actors/links/tls_session.hpp). The steps
// that form the ring run on one node after another, so neither side can wait for the other's
// handshake there; inside the sum both ends move at once, non-blocking.
//
// Thread safety: one thread at a time (the ring's).
#pragma once

#include <sys/types.h>

#include <string>

struct ssl_ctx_st;
struct ssl_st;

namespace troupe {

class ring_tls {
 public:
  /// `fd`: the connection (made non-blocking here); `server`: this side accepted it. `peer`
  /// names the other end in messages. Throws ring_link_error when OpenSSL cannot start.
  ring_tls(ssl_ctx_st* context, int fd, bool server, std::string peer);
  ~ring_tls();
  ring_tls(const ring_tls&) = delete;
  ring_tls& operator=(const ring_tls&) = delete;

  /// Encrypts and sends up to `bytes` (the handshake first, while it is not done): how many
  /// went, or -1 with errno EAGAIN when the socket must be ready first (wants()). Throws
  /// ring_link_error naming the peer and OpenSSL's reason (a certificate the CA did not sign).
  ssize_t write(const void* data, std::size_t bytes);
  /// Receives and decrypts up to `bytes`: how many, 0 when the peer closed, or -1 with errno
  /// EAGAIN. Throws as write does.
  ssize_t read(void* into, std::size_t bytes);
  /// What to poll the socket for before the call that would block goes on: POLLIN or POLLOUT.
  short wants() const { return wants_; }

 private:
  ssize_t after(int ret, short natural);

  ssl_st* ssl_ = nullptr;
  std::string peer_;
  short wants_ = 0;
};

}  // namespace troupe
