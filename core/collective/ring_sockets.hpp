// The connections of a ring over plain TCP (core/collective/socket_ring.hpp): each rank
// listens, connects to its successor and accepts its predecessor. Nothing but the ring's own
// peers may take a place in it: the first bytes on every connection are a hello carrying the
// ring's secret (handed to its members over the authenticated control plane), the membership
// epoch and the sender's rank, and the listener keeps the first connection whose hello is the
// one it expects. A stranger's connection, a wrong secret, a stale epoch, a silent peer or
// garbage is closed without a byte read past the hello, and the wait for the real one goes on.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace troupe {

/// A ring connection that failed without breaking the protocol: refused, closed or reset by the
/// peer, silent past its timeout, or given up because the caller raised its abort flag. The
/// message names which and the peer.
class ring_link_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An owned file descriptor, closed when it goes.
class socket_fd {
 public:
  socket_fd() = default;
  explicit socket_fd(int fd) : fd_(fd) {}
  socket_fd(socket_fd&& other) noexcept : fd_(other.release()) {}
  socket_fd& operator=(socket_fd&& other) noexcept;
  socket_fd(const socket_fd&) = delete;
  socket_fd& operator=(const socket_fd&) = delete;
  ~socket_fd();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();

 private:
  int fd_ = -1;
};

/// What a connection into the ring says first.
struct ring_hello {
  std::array<uint8_t, 32> secret{};  ///< the ring's; equal on every member
  int64_t epoch = 0;                 ///< the membership the ring belongs to
  int64_t sender = 0;                ///< the connecting rank: the listener's predecessor
};

/// A fresh random secret (from the kernel's generator).
std::array<uint8_t, 32> new_ring_secret();

/// A listening TCP socket on `host` (a name or an IPv4 or IPv6 address: its first address),
/// port chosen by the kernel.
class ring_listener {
 public:
  explicit ring_listener(const std::string& host);
  uint16_t port() const { return port_; }

  /// The predecessor's connection: the first one whose hello equals `expected`, read within
  /// `timeout_s` of its arrival. Throws ring_link_error when none came within `timeout_s`, or
  /// when `*abort` is raised (checked every few milliseconds).
  socket_fd accept_from(const ring_hello& expected, double timeout_s,
                        const std::atomic<bool>* abort = nullptr);

 private:
  socket_fd fd_;
  uint16_t port_ = 0;
};

/// Connects to the successor's listener at `host`:`port` and sends `hello`; retries a refused
/// connection until `timeout_s` (the successor may still be starting). Throws ring_link_error.
socket_fd connect_to_successor(const std::string& host, uint16_t port, const ring_hello& hello,
                               double timeout_s, const std::atomic<bool>* abort = nullptr);

}  // namespace troupe
