// The node agent's state (actors/cluster/run_node.cpp) and its handlers that prepare where the
// replicas' sync gradients will meet before any of them starts
// (actors/cluster/node_gradient_paths.cpp): a shared-memory segment, or places in the socket ring.
// Internal to the node.
#pragma once

#include "actors/links/guarded_links.hpp"
#include "actors/links/trusted_nodes.hpp"
#include "actors/workers/worker_context.hpp"
#include "messages/cluster.hpp"
#include "messages/interfaces.hpp"

#include <caf/stateful_actor.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace troupe {

/// How the node's part of the run ended, written by the agent before it quits.
struct node_outcome {
  std::string status;  ///< the run's status from the coordinator; "" if it never said
  std::string error;   ///< why the node stopped early
};

struct agent_state {
  std::string node_name;
  std::string peer_host;  ///< where peers reach this node (its socket ring listens there too)
  std::shared_ptr<trusted_nodes> trusted;
  std::shared_ptr<node_outcome> outcome;
  std::function<void(const std::string&)> log;
  context_ptr context;  ///< once joined
  caf::actor coordinator_gate;
  /// Outlives the agent (run_node's, destroyed after the agent has quit).
  guarded_links* links = nullptr;
  std::vector<replica_worker_actor> workers;
  std::vector<server_shard_actor> shards;  ///< async's server shards started here
  /// This node's private folder (mode 0700) for what the coordinator ships: the model file.
  std::string scratch;
  static inline const char* name = "node_agent";
};

using agent_actor = caf::stateful_actor<agent_state>;

// The coordinator's offer to sum through shared memory: create or open the segment (or a probe
// of who shares this host), and keep it in the context the replicas will be started with. An
// error means this node cannot (another host).
caf::result<caf::ok_atom> open_segment(agent_actor* self, const host_segment& segment);
/// Every node has the segment open (keep: its name can go), or not all could (drop it).
caf::result<caf::ok_atom> settle_segment(agent_actor* self, bool keep);

/// The three steps of forming the socket ring (messages/cluster.hpp, ring_places), each
/// answered with the places (after listening, with this node's ports), and dropping them.
caf::result<ring_places> open_ring_places(agent_actor* self, ring_places places);
caf::result<ring_places> connect_ring_places(agent_actor* self, const ring_places& places);
caf::result<ring_places> join_ring_places(agent_actor* self, const ring_places& places);
caf::result<caf::ok_atom> close_ring_places(agent_actor* self);

}  // namespace troupe
