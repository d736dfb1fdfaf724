// Blocking requests from the coordinator's own thread to the nodes' agents, and everything
// between "all nodes joined" and "the driver may start": trust between the nodes, and where
// their sync gradients will meet (one host's shared memory, the sum by host, the socket ring,
// or the ring over actors). Internal to actors/cluster.
#pragma once

#include "actors/cluster/gatekeeper.hpp"
#include "core/run/run_plan.hpp"

#include <caf/scoped_actor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace troupe {

using log_function = std::function<void(const std::string&)>;

// Blocks on a request from a scoped actor (on the caller's thread, never in a handler);
// returns the error text, or "" on success.
template <class Timeout, class... Ts>
std::string ask(caf::scoped_actor& self, const caf::actor& to, Timeout timeout, Ts&&... xs) {
  std::string error;
  self->request(to, timeout, std::forward<Ts>(xs)...)
      .receive(
          [](caf::ok_atom) {},
          [&](caf::error& e) {
            // CAF's "system_error(request_timeout)" says nothing of the likely cause.
            error =
                e == caf::sec::request_timeout
                    ? "no answer within " +
                          std::to_string(
                              std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
                          " s (the node stopped, or its connection was lost)"
                    : self->system().render(e);
          });
  return error;
}

/// Every node trusts the others, and ring neighbours are linked or (`shared` set) all share
/// memory or (`socket` set) the socket ring is formed, over each host's leaders where hosts
/// hold several ranks. Returns the error text, or "".
std::string prepare_nodes(caf::scoped_actor& self, const std::vector<joined_node>& nodes,
                          const std::vector<int64_t>& node_of, const run_plan& plan, bool tls,
                          const log_function& log, bool& shared, bool& socket);

}  // namespace troupe
