// A listening TCP socket on host:port, for `troupe report --serve`'s server, and for telling
// `troupe coordinator --listen` before anything runs that its address cannot be listened on.
#pragma once

#include <string>

namespace troupe {

/// A socket listening on host:port (port 0: one the OS picks, written to `bound`), with
/// SO_REUSEADDR as CAF's acceptor has it; -1 when none could be, `error` then errno's reason
/// (EADDRINUSE: the port is taken), or 0 when `host` names no address.
int open_listener(const std::string& host, int port, int& bound, int& error);

}  // namespace troupe
