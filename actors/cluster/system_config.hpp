// The actor-system settings every troupe process shares, in one place: the message types, the
// error category, the scheduler, and (for runs across processes) the middleman's heartbeats.
#pragma once

#include <caf/actor_system_config.hpp>

namespace troupe {

/// Heartbeats go out this often on every connection a node opens: before the job arrives it
/// cannot know the job's cluster.node_timeout_s, which may be as short as 0.1 s.
constexpr double heartbeat_interval_s = 0.1;

/// The coordinator's heartbeats, which know the job: five in each cluster.node_timeout_s (so a
/// node never takes it for lost), at most one a second: with many idle nodes, sending each of
/// them 10 a second was half of what an idle coordinator cost.
double coordinator_heartbeat_s(double node_timeout_s);

/// One cooperative thread (only the run driver, gatekeeper and agents run there; compute actors are
/// detached), troupe's message types and its error category.
caf::actor_system_config& configure_system(caf::actor_system_config& cfg);

/// configure_system plus the middleman, with heartbeats on every connection. A peer that falls
/// silent (a hung or unplugged process) is cut off by actors/links/guarded_links after its idle
/// timeout, not by CAF's own check, which is off: CAF 0.17 starts the silence of a connection it
/// opened at time zero, so its check closes that connection on the next heartbeat tick (0.1 s)
/// unless the peer's first frame came first, which TLS handshakes make rare.
caf::actor_system_config& configure_networked(caf::actor_system_config& cfg,
                                              double heartbeat_s = heartbeat_interval_s);

}  // namespace troupe
