// A run across processes, node side: `troupe node --join HOST:PORT`.
//
// The node publishes its agent for peers (other nodes open direct ring links to it), connects
// to the coordinator (retrying until the coordinator is up or the connect timeout passes),
// presents its token, version and name, and receives the job. It loads the job's data from its
// own disk, tells the coordinator it is ready (or why it cannot be), and then spawns the
// replicas the coordinator places on it. Every connection goes through actors/links/guarded_links.
// It trusts messages only from the coordinator's node and the peers the coordinator names, and
// it exits when the coordinator says the run is over or when the coordinator is lost.
#pragma once

#include "core/cluster/address.hpp"
#include "core/cluster/certs.hpp"

#include <atomic>
#include <functional>
#include <optional>
#include <string>

namespace troupe {

struct node_options {
  host_port coordinator;
  std::string name;
  int64_t threads = 1;
  std::string token;
  std::string version = TROUPE_VERSION;  ///< what the node claims; tests change it
  std::string peer_host = "127.0.0.1";   ///< where peers reach this node's agent
  double connect_timeout_s = 30;         ///< keep retrying the coordinator this long
  /// A silent coordinator is lost after this long until the job arrives; from then on after
  /// the job's cluster.node_timeout_s, as the coordinator treats its nodes.
  double coordinator_timeout_s = 10;
  /// Mutual TLS: this node's certificate and key and the cluster's CA. The coordinator's
  /// certificate must name "coordinator", a ring neighbour's the name the coordinator gives.
  std::optional<tls_files> tls;
  std::function<void(const std::string&)> log;
  /// Set (by Ctrl-C or SIGTERM) to leave the run: the node stops its agent, which the
  /// coordinator sees as a lost node, and says so. Null: only the run ends it.
  const std::atomic<bool>* stop_requested = nullptr;
};

/// The exit status of a node that left because `stop_requested` was set.
constexpr int node_stopped = 130;

/// Serves one run. Returns 0 when the run ended and succeeded, node_stopped when it left on
/// request, 1 otherwise (refused, the data could not be loaded, the coordinator was lost, the
/// run failed); `log` says why.
int run_node(const node_options& options);

}  // namespace troupe
