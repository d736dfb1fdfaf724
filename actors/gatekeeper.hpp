// The coordinator's gatekeeper, the only actor it publishes: it answers joins (token, version,
// name, core/cluster/join_check) with the job, keeps the roster of nodes that joined, and tells
// the session once every node is in, or why they never will be (the join timeout).
//
//   node -> gatekeeper     (join_atom, join_request) -> join_reply
//   session -> gatekeeper  (get_atom) -> answered, as an ordinary message, with "" once the
//                          roster is complete, or the reason it never will be
#pragma once

#include "actors/trusted_nodes.hpp"
#include "core/cluster/join_check.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace troupe {

struct joined_node {
  std::string name;
  caf::actor agent;
  std::string peer_host;
  uint16_t peer_port = 0;
};

using node_roster = std::shared_ptr<std::vector<joined_node>>;

struct gatekeeper_options {
  join_terms terms;
  std::string job_json;  ///< handed to every node that joins
  double join_timeout_s = 0;
  std::shared_ptr<trusted_nodes> trusted;  ///< filled with every node that joins
  std::function<void(const std::string&)> log;
  /// Shared with the session, which reads it only after the gatekeeper said it is complete.
  node_roster roster;
};

caf::actor spawn_gatekeeper(caf::actor_system& system, gatekeeper_options options);

/// "a, b" or "none".
std::string names_of(const std::vector<joined_node>& nodes);

}  // namespace troupe
