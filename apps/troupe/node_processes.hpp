// `troupe node --processes K`: K nodes on this host from one start.
//
// A troupe process spends most of its start-up resolving LibTorch's ~300 shared libraries and
// registering its operators (0.4 s of CPU here). Forked after that and before any thread
// exists, K node processes share it, and the pages of the libraries, instead of paying it K
// times: what makes 64 nodes on a 2-core machine start in seconds, and one node per device of
// a many-device host cheap to launch. The parent only supervises: it passes SIGINT, SIGTERM and
// SIGHUP on to the nodes, and a node whose parent dies is sent SIGTERM by the kernel, so none
// outlives a killed launch.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace troupe {

struct forked_node {
  bool is_child = false;
  int64_t index = 0;  ///< in a child: which of the K, from 0
  int status =
      0;  ///< in the parent: 0 when every node exited 0, 130 when they left on a stop, else 1
};

/// Forks `count` processes, each running with the signal mask and dispositions the caller had.
/// In a child it returns at once with `is_child` and its index; in the parent it waits until
/// every child has ended and says how they ended (`log` names each that failed). Call it before
/// any thread is started: a fork copies only the calling thread.
forked_node fork_node_processes(int64_t count,
                                const std::function<std::string(int64_t index)>& name_of,
                                const std::function<void(const std::string&)>& log);

}  // namespace troupe
