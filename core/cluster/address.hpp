// HOST:PORT arguments of `troupe coordinator --listen` and `troupe node --join`.
#pragma once

#include <cstdint>
#include <string>

namespace troupe {

struct host_port {
  std::string host;
  uint16_t port = 0;
};

/// Parses "HOST:PORT" or ":PORT" (host `default_host`) or "PORT". The port must be 0..65535
/// (0: the OS picks one, when listening). Throws job_error naming `what` (e.g. "--listen").
host_port parse_host_port(const std::string& text, const std::string& default_host,
                          const std::string& what);

/// True for addresses only this machine can reach: 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& host);

}  // namespace troupe
