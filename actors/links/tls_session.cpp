#include "actors/links/tls_session.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <signal.h>

#include <climits>
#include <stdexcept>

namespace troupe {
namespace {

using caf::io::network::rw_state;

std::string openssl_errors() {
  std::string out;
  while (const auto e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    out += (out.empty() ? "" : "; ") + std::string(reason != nullptr ? reason : "unknown error");
  }
  return out;
}

// OpenSSL writes to the socket with write(2), which raises SIGPIPE when the peer has gone (CAF's
// own TCP path uses send with MSG_NOSIGNAL). Blocked on the threads that run sessions (the
// multiplexer's and the middleman actor's), a SIGPIPE stays pending there and write fails with
// EPIPE, which ends only that connection. Once per thread: a mask change per call would cost
// two system calls on every read and write.
void block_sigpipe_on_this_thread() {
  thread_local bool blocked = false;
  if (blocked)
    return;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  blocked = true;
}

void require(bool ok, const std::string& what) {
  if (!ok)
    throw std::runtime_error(what + ": " + openssl_errors());
}

int clamp(std::size_t len) {
  return len > static_cast<std::size_t>(INT_MAX) ? INT_MAX : static_cast<int>(len);
}

}  // namespace

tls_context::tls_context(const tls_files& files) {
  ctx_ = SSL_CTX_new(TLS_method());
  require(ctx_ != nullptr, "cannot make a TLS context");
  try {
    require(SSL_CTX_set_min_proto_version(ctx_, TLS1_3_VERSION) == 1, "cannot require TLS 1.3");
    require(SSL_CTX_use_certificate_chain_file(ctx_, files.certificate.c_str()) == 1,
            files.certificate);
    require(SSL_CTX_use_PrivateKey_file(ctx_, files.key.c_str(), SSL_FILETYPE_PEM) == 1, files.key);
    require(SSL_CTX_check_private_key(ctx_) == 1, files.key);
    require(SSL_CTX_load_verify_locations(ctx_, files.ca.c_str(), nullptr) == 1, files.ca);
  } catch (...) {
    SSL_CTX_free(ctx_);
    throw;
  }
  // Both sides must present a certificate the CA signed.
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  // A peer that closes without a TLS close_notify (a process exiting, CAF closing a socket) is
  // a plain end of the connection, not an error: every CAF frame carries its length, so a
  // truncated stream cannot pass for a complete one.
  SSL_CTX_set_options(ctx_, SSL_OP_IGNORE_UNEXPECTED_EOF);
  // No resumption: every connection shows its certificate, and no ticket key lives in memory.
  SSL_CTX_set_num_tickets(ctx_, 0);
  SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_OFF);
  // The stream hands SSL_write large buffers: report what went out so far, as send(2) does.
  SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

tls_context::~tls_context() {
  SSL_CTX_free(ctx_);
}

tls_session::tls_session(const tls_context& context, native_socket fd, bool accepted,
                         tls_observer* observer)
    : observer_(observer) {
  block_sigpipe_on_this_thread();
  ssl_ = SSL_new(context.native());
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd) != 1) {
    SSL_free(ssl_);
    throw std::runtime_error("cannot start a TLS session: " + openssl_errors());
  }
  // The handshake moves on as the stream reads and writes (a client's first empty write sends
  // its hello); nothing runs here, where the observer is still being built.
  if (accepted)
    SSL_set_accept_state(ssl_);
  else
    SSL_set_connect_state(ssl_);
}

tls_session::~tls_session() {
  SSL_free(ssl_);
}

std::string tls_session::failure(int error) {
  auto why = openssl_errors();
  if (why.empty())
    return error == SSL_ERROR_SYSCALL || error == SSL_ERROR_ZERO_RETURN
               ? "the peer closed the connection during the TLS handshake"
               : "TLS handshake failed";
  const long verify = SSL_get_verify_result(ssl_);
  if (verify != X509_V_OK)
    why += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
  // What a plaintext CAF client, an HTTP request or random bytes look like to a TLS server.
  for (const char* not_tls : {"wrong version number", "http request", "unknown protocol",
                              "packet length too long", "record layer failure"})
    if (why.find(not_tls) != std::string::npos)
      return "not TLS (" + why + "): a peer without --tls, or garbage";
  return "TLS handshake failed: " + why;
}

rw_state tls_session::handshake() {
  const int ret = SSL_do_handshake(ssl_);
  if (ret == 1) {
    established_ = true;
    X509* peer = SSL_get1_peer_certificate(ssl_);
    const auto name = peer != nullptr ? subject_common_name(peer) : std::string();
    X509_free(peer);
    observer_->tls_established(name);
    return rw_state::success;
  }
  const int error = SSL_get_error(ssl_, ret);
  if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE)
    return rw_state::indeterminate;
  failed_ = true;
  observer_->tls_failed(failure(error));
  return rw_state::failure;
}

// After SSL_read or SSL_write returned `ret`: bytes moved, nothing to do yet (success with 0
// bytes: the stream waits for the socket), or the connection is over. A TLS error after the
// handshake (the server refusing this client's certificate under TLS 1.3 shows up here) is
// reported; a plain close is not.
rw_state tls_session::after_io(int ret, std::size_t& result) {
  if (ret > 0) {
    result = static_cast<std::size_t>(ret);
    return rw_state::success;
  }
  result = 0;
  const int error = SSL_get_error(ssl_, ret);
  if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE)
    return rw_state::success;
  failed_ = true;
  if (const auto why = openssl_errors(); !why.empty())
    observer_->tls_failed("TLS error: " + why);
  return rw_state::failure;
}

rw_state tls_session::read_some(std::size_t& result, native_socket, void* buf, std::size_t len) {
  block_sigpipe_on_this_thread();
  result = 0;
  if (failed_)
    return rw_state::failure;
  if (!established_) {
    if (handshake() == rw_state::failure)
      return rw_state::failure;
    if (!established_ || len == 0)
      return rw_state::success;
  }
  return after_io(SSL_read(ssl_, buf, clamp(len)), result);
}

rw_state tls_session::write_some(std::size_t& result, native_socket, const void* buf,
                                 std::size_t len) {
  block_sigpipe_on_this_thread();
  result = 0;
  if (failed_)
    return rw_state::failure;
  if (!established_) {
    if (handshake() == rw_state::failure)
      return rw_state::failure;
    // An empty write only drives the handshake: indeterminate takes the socket off the write
    // list until there is data. guarded_links holds data back until the handshake is done;
    // should some come early it waits (success, 0 bytes) rather than being dropped.
    if (!established_)
      return len == 0 ? rw_state::indeterminate : rw_state::success;
  }
  if (len == 0)
    return rw_state::indeterminate;
  return after_io(SSL_write(ssl_, buf, clamp(len)), result);
}

bool tls_session::must_read_more(native_socket, std::size_t threshold) {
  return established_ && static_cast<std::size_t>(SSL_pending(ssl_)) >= threshold;
}

}  // namespace troupe
