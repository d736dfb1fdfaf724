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

/// configure_system plus the middleman, with heartbeats on every connection. A peer that falls
/// silent (a hung or unplugged process) is cut off by actors/links/guarded_links after its idle
/// timeout, not by CAF's own check, which is off: CAF 0.17 starts the silence of a connection it
/// opened at time zero, so its check closes that connection on the next heartbeat tick (0.1 s)
/// unless the peer's first frame came first, which TLS handshakes make rare.
caf::actor_system_config& configure_networked(caf::actor_system_config& cfg);

}  // namespace troupe
