// A run across processes, coordinator side: `troupe coordinator` and `troupe run --local-nodes`.
//
// The coordinator publishes only a gatekeeper. Nodes connect, present the token and their
// version (core/cluster/join_check) and receive the job; once job.cluster.nodes have joined,
// replicas are placed on them in contiguous rank blocks, every node is told which other nodes
// to trust, nodes hosting ring neighbors open direct connections to each other, and the
// ordinary coordinator runs the job with workers its nodes spawned. Sync steps reduce in a ring
// among the replicas; async and local_sgd exchange through the coordinator as in one process.
#pragma once

#include "core/cluster/address.hpp"
#include "core/config/job_config.hpp"
#include "core/data/dataset.hpp"
#include "core/train/run_options.hpp"
#include "core/train/run_report.hpp"

#include <functional>
#include <string>

namespace troupe {

struct cluster_options {
  host_port listen;
  std::string token;  ///< "" accepts any node (the CLI allows that on loopback only)
  /// Called once the gatekeeper listens, with the port (the OS's pick when listen.port is 0).
  std::function<void(uint16_t port)> on_listening;
  /// One line for the user per event: listening, joined, refused, placed.
  std::function<void(const std::string&)> log;
};

/// Runs `job` (job.cluster.enabled()) with the nodes that join. Never throws for what happens
/// during the run: a port that cannot be opened, nodes that do not come, a node that dies, all
/// yield a failed report whose error says so.
run_report run_cluster(const job_config& job, dataset_ptr data, const run_options& options,
                       const cluster_options& cluster);

}  // namespace troupe
