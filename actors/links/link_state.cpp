#include "actors/links/link_state.hpp"

#include <fmt/format.h>
#include <sys/socket.h>

namespace troupe {

// A flood of strangers must not flood the log; another kind of event still gets its own lines.
void link_state::log(link_event kind, const std::string& line) {
  const auto n = logged[static_cast<std::size_t>(kind)].fetch_add(1);
  if (!log_line || (n >= 20 && n % 100 != 0))
    return;
  log_line(n < 20 ? line : fmt::format("{} ({} such so far)", line, n + 1));
}

void link_state::count_joined(watched_connection& c) {
  if (c.accepted && !c.joined.exchange(true))
    pending.fetch_sub(1);
}

void link_state::close(watched_connection& c, link_event kind, const std::string& why) {
  if (c.closing.exchange(true))
    return;
  log(kind,
      fmt::format("closed the connection {} {}: {}", c.accepted ? "from" : "to", c.peer, why));
  ::shutdown(c.fd, SHUT_RDWR);
}

std::string address_of(caf::io::network::native_socket fd) {
  const auto addr = caf::io::network::remote_addr_of_fd(fd);
  const auto port = caf::io::network::remote_port_of_fd(fd);
  return (addr ? *addr : std::string("?")) + ":" + (port ? std::to_string(*port) : "?");
}

}  // namespace troupe
