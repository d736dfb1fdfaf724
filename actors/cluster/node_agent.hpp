// A node's agent (node_agent.cpp): the behavior run_node spawns, once the node reached the
// coordinator.
#pragma once

#include "actors/cluster/node_agent_state.hpp"

#include <caf/behavior.hpp>

namespace troupe {

/// The agent of this node, with `init` as its state.
caf::behavior node_agent(agent_actor* self, agent_state init);

}  // namespace troupe
