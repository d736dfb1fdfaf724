// Mutual TLS on one connection between troupe processes: the byte-moving policy of a CAF stream
// (caf::io::network::stream_impl<Policy>) that actors/links/guarded_links puts under every
// connection when a run has --tls.
//
// Why not CAF's own libcaf_openssl: its session keeps the SSL object private, so nobody can ask
// which certificate a peer presented, and a node could join under another node's name; it also
// reads the certificate files again for every connection and throws on the multiplexer's thread
// when they fail. Here the context is loaded once, at start-up, with errors that name the file,
// and the peer's certificate name is handed to the connection when the handshake completes.
//
// Both sides present a certificate and verify the peer's against the cluster's CA (TLS 1.3
// only; no host name check: troupe checks the name on the certificate itself, against the
// name a node joins with or the name the coordinator expects at an address).
#pragma once

#include "core/cluster/certs.hpp"

#include <caf/io/network/native_socket.hpp>
#include <caf/io/network/rw_state.hpp>

#include <cstddef>
#include <string>

struct ssl_ctx_st;
struct ssl_st;

namespace troupe {

/// One process's certificate, key and CA, loaded once. Shared by every session, on any thread
/// (OpenSSL's SSL_CTX is thread-safe once set up).
class tls_context {
 public:
  /// Throws std::runtime_error naming the file OpenSSL could not use.
  explicit tls_context(const tls_files& files);
  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;
  ssl_ctx_st* native() const { return ctx_; }

 private:
  ssl_ctx_st* ctx_ = nullptr;
};

/// Told how a session's handshake ended. Called on the thread that moves the session's bytes.
class tls_observer {
 public:
  /// The peer presented a certificate the CA signed, with this subject CN.
  virtual void tls_established(const std::string& peer_name) = 0;
  /// The handshake failed (why, in words) or the peer left during it.
  virtual void tls_failed(const std::string& why) = 0;

 protected:
  ~tls_observer() = default;
};

/// One connection's TLS state. Not thread-safe: one thread at a time moves its bytes (the
/// multiplexer's, or the middleman actor's while it connects).
class tls_session {
 public:
  using native_socket = caf::io::network::native_socket;
  using rw_state = caf::io::network::rw_state;

  /// `accepted`: this side accepted the connection (it waits for the client's hello); otherwise
  /// the client's hello goes out at once. `observer` must outlive the session.
  tls_session(const tls_context& context, native_socket fd, bool accepted, tls_observer* observer);
  ~tls_session();
  tls_session(const tls_session&) = delete;
  tls_session& operator=(const tls_session&) = delete;

  /// The stream policy: move bytes, or make handshake progress (0 bytes, success) until the
  /// handshake is done; failure ends the connection.
  rw_state read_some(std::size_t& result, native_socket fd, void* buf, std::size_t len);
  rw_state write_some(std::size_t& result, native_socket fd, const void* buf, std::size_t len);
  /// Decrypted bytes already buffered cover `threshold`: read on without waiting for the socket.
  bool must_read_more(native_socket fd, std::size_t threshold);

  bool established() const { return established_; }

 private:
  rw_state handshake();
  rw_state after_io(int ret, std::size_t& result);
  std::string failure(int error);

  ssl_st* ssl_ = nullptr;
  tls_observer* observer_;
  bool established_ = false;
  bool failed_ = false;
};

}  // namespace troupe
