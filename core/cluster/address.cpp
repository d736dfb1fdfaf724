#include "core/cluster/address.hpp"

#include "core/errors.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cctype>

namespace troupe {

host_port parse_host_port(const std::string& text, const std::string& default_host,
                          const std::string& what) {
  const auto colon = text.rfind(':');
  host_port out;
  std::string port = text;
  out.host = default_host;
  if (colon != std::string::npos) {
    out.host = colon == 0 ? default_host : text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  // "[::1]:80": brackets only group an IPv6 address.
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']')
    out.host = out.host.substr(1, out.host.size() - 2);
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port)
    digits = digits && std::isdigit(static_cast<unsigned char>(c));
  if (!digits || std::stoul(port) > 65535 || out.host.empty())
    throw job_error(
        {what + ": expected HOST:PORT with a port from 0 to 65535, got \"" + text + "\""});
  out.port = static_cast<uint16_t>(std::stoul(port));
  return out;
}

bool is_loopback(const std::string& host) {
  if (host == "localhost")
    return true;
  // Numeric addresses only: a name such as 127.example.com passed as 127.x.x.x, though it may
  // resolve to any address.
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return ::inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace troupe
