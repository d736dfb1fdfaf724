// The actor-system settings every troupe process shares, in one place: the message types, the
// error category, the scheduler, and (for runs across processes) the middleman's heartbeats.
#pragma once

#include <caf/actor_system_config.hpp>

namespace troupe {

/// Heartbeats go out this often on every connection between troupe processes.
constexpr double heartbeat_interval_s = 0.1;

/// One cooperative thread (only the run driver, gatekeeper and agents run there; compute actors are
/// detached), troupe's message types and its error category.
caf::actor_system_config& configure_system(caf::actor_system_config& cfg);

/// configure_system plus the middleman, with heartbeats: a peer silent for `peer_timeout_s`
/// (a hung or unplugged process) is declared down, as a killed one is at once.
caf::actor_system_config& configure_networked(caf::actor_system_config& cfg, double peer_timeout_s);

}  // namespace troupe
