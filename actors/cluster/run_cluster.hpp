// A run across processes, coordinator side: `troupe coordinator` and `troupe run --local-nodes`
// (reached through run_job).
//
// The coordinator publishes only a gatekeeper (actors/cluster/gatekeeper.hpp). Nodes connect,
// present the token and their version and receive the job; once job.cluster.nodes have joined,
// replicas are placed on them in contiguous rank blocks, every node is told which other nodes
// to trust, nodes hosting ring neighbors open direct connections to each other, and the run
// driver runs the plan with workers its nodes start. Sync steps reduce in a ring among the
// replicas; async and local_sgd exchange through the driver as in one process.
#pragma once

#include "core/data/dataset.hpp"
#include "core/run/run_options.hpp"
#include "core/run/run_plan.hpp"
#include "core/train/run_report.hpp"

namespace troupe {

/// Runs `plan` (its job has cluster.nodes) with the nodes that join, as `options.cluster` says.
/// Never throws for what happens during the run: a port that cannot be opened, nodes that do not
/// come, a node that dies, all yield a failed report whose error says so.
run_report run_cluster(const run_plan& plan, dataset_ptr data, const run_options& options);

}  // namespace troupe
