#include "actors/cluster/system_config.hpp"

#include "messages/error_code.hpp"
#include "messages/type_ids.hpp"

#include <caf/atom.hpp>
#include <caf/io/middleman.hpp>
#include <caf/timespan.hpp>

#include <algorithm>
#include <chrono>

namespace troupe {
namespace {

caf::timespan seconds(double s) {
  return std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(s));
}

}  // namespace

caf::actor_system_config& configure_system(caf::actor_system_config& cfg) {
  // One cooperative thread is plenty: the replicas have their own threads. "sharing" sleeps on a
  // condition variable instead of busy-polling, which would take CPU from the replicas on a
  // machine with as many cores as replicas.
  cfg.set("scheduler.max-threads", 1);
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.add_message_types<caf::id_block::troupe>();
  add_error_category(cfg);
  return cfg;
}

double coordinator_heartbeat_s(double node_timeout_s) {
  return std::min(1.0, node_timeout_s / 5);
}

caf::actor_system_config& configure_networked(caf::actor_system_config& cfg, double heartbeat_s) {
  configure_system(cfg);
  cfg.load<caf::io::middleman>();
  // Both ends send heartbeats, so a live peer is never silent for long; guarded_links closes a
  // connection that is (CAF's default sends none, and a hung process would never be noticed).
  cfg.set("middleman.heartbeat-interval", seconds(heartbeat_s));
  cfg.set("middleman.connection-timeout", caf::timespan{0});
  return cfg;
}

}  // namespace troupe
