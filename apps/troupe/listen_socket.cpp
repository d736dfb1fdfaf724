#include "apps/troupe/listen_socket.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace troupe {

int open_listener(const std::string& host, int port, int& bound, int& error) {
  error = 0;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0)
    return -1;
  int fd = -1;
  for (auto* a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    const int on = 1;
    if (fd >= 0 && (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
                    ::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 64) != 0)) {
      error = errno;
      ::close(fd);
      fd = -1;
    } else if (fd < 0) {
      error = errno;
    }
  }
  ::freeaddrinfo(found);
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (fd >= 0 && ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
    bound =
        ntohs(address.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&address)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  return fd;
}

}  // namespace troupe
