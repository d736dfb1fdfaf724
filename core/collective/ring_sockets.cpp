#include "core/collective/ring_sockets.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace troupe {
namespace {

using clock_type = std::chrono::steady_clock;

constexpr char hello_magic[8] = {'T', 'R', 'P', 'R', 'I', 'N', 'G', '1'};
constexpr std::size_t hello_bytes = sizeof(hello_magic) + 32 + 8 + 8;
// Connections whose hello is not complete yet that the listener keeps at once: a stranger
// opening many cannot make it forget the real predecessor's, only the oldest stranger's.
constexpr std::size_t max_pending = 16;
// How long a connection has to send its hello once accepted.
constexpr double hello_timeout_s = 5;
constexpr int poll_slice_ms = 10;

std::string errno_text() {
  return std::strerror(errno);
}

std::array<uint8_t, hello_bytes> encode(const ring_hello& h) {
  std::array<uint8_t, hello_bytes> out{};
  auto* p = out.data();
  std::memcpy(p, hello_magic, sizeof(hello_magic));
  p += sizeof(hello_magic);
  std::memcpy(p, h.secret.data(), h.secret.size());
  p += h.secret.size();
  std::memcpy(p, &h.epoch, 8);
  std::memcpy(p + 8, &h.sender, 8);
  return out;
}

// Every byte compared, whatever the first difference: the time says nothing of the secret.
bool same_bytes(const uint8_t* a, const uint8_t* b, std::size_t n) {
  uint8_t diff = 0;
  for (std::size_t i = 0; i < n; ++i)
    diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

void set_nonblocking_nodelay(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// The first address of `host` (a name, an IPv4 or IPv6 address): a node's --listen may be any.
struct socket_address {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = AF_INET;
  sockaddr* get() { return reinterpret_cast<sockaddr*>(&storage); }
};

socket_address resolve(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const auto service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    throw ring_link_error("ring: cannot resolve '" + host + "': " + ::gai_strerror(rc) +
                          " (give an address such as 127.0.0.1, or add the name to /etc/hosts)");
  socket_address a;
  std::memcpy(&a.storage, found->ai_addr, found->ai_addrlen);
  a.length = found->ai_addrlen;
  a.family = found->ai_family;
  ::freeaddrinfo(found);
  return a;
}

uint16_t port_of(const sockaddr_storage& addr) {
  return ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(addr).sin6_port
                                          : reinterpret_cast<const sockaddr_in&>(addr).sin_port);
}

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

bool aborted(const std::atomic<bool>* abort) {
  return abort != nullptr && abort->load(std::memory_order_relaxed);
}

struct pending_hello {
  socket_fd fd;
  clock_type::time_point since;
  std::array<uint8_t, hello_bytes> bytes{};
  std::size_t got = 0;
};

// Reads what `p` has sent of its hello. False: the connection is closed or failed.
bool read_hello(pending_hello& p) {
  const auto n = ::recv(p.fd.get(), p.bytes.data() + p.got, hello_bytes - p.got, MSG_DONTWAIT);
  if (n > 0) {
    p.got += static_cast<std::size_t>(n);
    return true;
  }
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

}  // namespace

socket_fd& socket_fd::operator=(socket_fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

socket_fd::~socket_fd() {
  if (fd_ >= 0)
    ::close(fd_);
}

int socket_fd::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

std::array<uint8_t, 32> new_ring_secret() {
  std::array<uint8_t, 32> secret{};
  std::size_t got = 0;
  while (got < secret.size()) {
    const auto n = ::getrandom(secret.data() + got, secret.size() - got, 0);
    if (n < 0 && errno != EINTR)
      throw std::runtime_error("ring: no random bytes for a secret: " + errno_text());
    if (n > 0)
      got += static_cast<std::size_t>(n);
  }
  return secret;
}

ring_listener::ring_listener(const std::string& host) {
  auto addr = resolve(host, 0);
  fd_ = socket_fd(::socket(addr.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd_.valid())
    throw ring_link_error("ring: cannot make a socket: " + errno_text());
  if (::bind(fd_.get(), addr.get(), addr.length) != 0 || ::listen(fd_.get(), 16) != 0)
    throw ring_link_error("ring: cannot listen on " + host + ": " + errno_text());
  socklen_t len = sizeof(addr.storage);
  ::getsockname(fd_.get(), addr.get(), &len);
  port_ = port_of(addr.storage);
}

socket_fd ring_listener::accept_from(const ring_hello& expected, double timeout_s,
                                     const std::atomic<bool>* abort) {
  const auto want = encode(expected);
  const auto start = clock_type::now();
  std::vector<pending_hello> pending;
  while (true) {
    if (aborted(abort))
      throw ring_link_error("ring: waiting for the predecessor (rank " +
                            std::to_string(expected.sender) + "): aborted");
    if (seconds_since(start) > timeout_s)
      throw ring_link_error("ring: the predecessor (rank " + std::to_string(expected.sender) +
                            ") did not connect within " + std::to_string(timeout_s) + " s");
    std::vector<pollfd> fds{{fd_.get(), POLLIN, 0}};
    for (const auto& p : pending)
      fds.push_back({p.fd.get(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), poll_slice_ms) < 0 && errno != EINTR)
      throw ring_link_error("ring: poll: " + errno_text());
    for (std::size_t i = pending.size(); i-- > 0;) {
      auto& p = pending[i];
      const bool alive = !(fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) || read_hello(p);
      if (alive && p.got == hello_bytes) {
        if (same_bytes(p.bytes.data(), want.data(), hello_bytes))
          return std::move(p.fd);
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));  // not the one: closed
      } else if (!alive || seconds_since(p.since) > hello_timeout_s) {
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    if (fds[0].revents & POLLIN) {
      socket_fd fd(::accept4(fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (fd.valid()) {
        set_nonblocking_nodelay(fd.get());
        if (pending.size() == max_pending)
          pending.erase(pending.begin());
        pending.push_back({std::move(fd), clock_type::now(), {}, 0});
      }
    }
  }
}

socket_fd connect_to_successor(const std::string& host, uint16_t port, const ring_hello& hello,
                               double timeout_s, const std::atomic<bool>* abort) {
  auto addr = resolve(host, port);
  const auto where = host + ":" + std::to_string(port);
  const auto start = clock_type::now();
  const auto give_up = [&](const std::string& why) {
    throw ring_link_error("ring: connecting to the successor at " + where + ": " + why);
  };
  while (true) {
    if (aborted(abort))
      give_up("aborted");
    if (seconds_since(start) > timeout_s)
      give_up("no connection within " + std::to_string(timeout_s) + " s");
    socket_fd fd(::socket(addr.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid())
      give_up(errno_text());
    int error = 0;
    if (::connect(fd.get(), addr.get(), addr.length) != 0) {
      error = errno;
      if (error == EINPROGRESS) {
        pollfd p{fd.get(), POLLOUT, 0};
        while (::poll(&p, 1, poll_slice_ms) == 0 && seconds_since(start) <= timeout_s &&
               !aborted(abort)) {
        }
        socklen_t len = sizeof(error);
        error = p.revents ? 0 : ETIMEDOUT;
        if (p.revents)
          ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len);
      }
    }
    if (error == ECONNREFUSED || error == ETIMEDOUT) {
      std::this_thread::sleep_for(std::chrono::milliseconds(poll_slice_ms));
      continue;
    }
    if (error != 0)
      give_up(std::strerror(error));
    set_nonblocking_nodelay(fd.get());
    const auto bytes = encode(hello);
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      if (aborted(abort) || seconds_since(start) > timeout_s)
        give_up("the hello could not be sent in time");
      const auto n =
          ::send(fd.get(), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        give_up(errno_text());
      } else {
        pollfd p{fd.get(), POLLOUT, 0};
        ::poll(&p, 1, poll_slice_ms);
      }
    }
    return fd;
  }
}

}  // namespace troupe
