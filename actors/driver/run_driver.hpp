// The run driver: the one actor that runs a job's workers, whatever the policy or the layout.
//
// It owns what every run has (the roster of workers, the tracker, the stop request, the ending
// and the final-weights check) and nothing that belongs to a policy: the policy is a pure
// strategy (core/policy/step_strategy.hpp) made from the plan, and the driver carries its
// actions out. A run goes like this:
//   a. (run_atom): start every worker (here, detached; or on its node, asked without
//      blocking), monitor it, connect the workers as the plan says (pipeline neighbours, ring
//      successors, an NCCL id), start the parameter server if the plan has one;
//   b. feed the strategy what arrives: gradients, weights to average and pushes (their tensors
//      are held by rank until an action names them), step reports (recorded first), completed
//      evaluations;
//   c. carry out its actions: send compute, combine held tensors in rank order and send the
//      result, record a completed step (then honor a stop request), start an evaluation, hand
//      work to the parameter server;
//   d. when the strategy says training is done, the last evaluation is recorded and every final
//      weight is in (from the workers, which must agree bit for bit, or from the server), answer
//      the run request with the report.
// A worker that dies ends the run naming it and why, at once; a message that breaks the
// protocol ends it with errc::protocol_error; either way the other workers are told to exit and
// the run request is answered. Nothing blocks: no handler waits for another actor.
#pragma once

#include "actors/workers/worker_context.hpp"
#include "core/run/run_options.hpp"
#include "messages/interfaces.hpp"

#include <functional>
#include <string>
#include <vector>

namespace troupe {

/// A node of a run across processes, as the driver needs to know it.
struct node_slot {
  std::string name;
  std::string peer_host;   ///< where its agent listens for peers
  uint16_t peer_port = 0;  ///< 0: it takes no peer connections
};

struct driver_options {
  context_ptr context;
  /// Metrics, progress and the stop request (`cluster` is not read here).
  run_options run;
  /// Starts worker `rank` in this process. Empty: the plan's kind of worker (a replica or a
  /// stage), detached. Tests put fakes here.
  std::function<caf::actor(caf::actor_system&, int64_t rank, run_driver_actor driver)> spawn_local;
  /// Across processes: node_agents[rank] starts worker `rank` on its node, answering
  /// (spawn_atom, rank, driver) with the worker's handle. Empty: workers start here.
  std::vector<caf::actor> node_agents;
  /// Where each worker runs, for messages ("node a"); empty inside one process.
  std::vector<std::string> worker_places;
  /// Across processes: the nodes sum sync gradients through one host's shared memory instead of
  /// the ring (the coordinator found that they can, cluster.shared_memory); for messages.
  bool host_memory = false;
  /// Across processes: the nodes sum sync gradients over the socket ring, formed before the
  /// replicas started; a run that carries on without lost nodes forms it again at every regroup.
  bool socket_ring = false;
  /// Across processes: the node slot hosting each rank and the slots (a lost node is lost with
  /// all its ranks; a replacement takes a slot over). Empty inside one process.
  std::vector<int64_t> node_of;
  std::vector<node_slot> nodes;
  /// Across processes, async with a sharded server: the node agents (in node order) that start
  /// its shards, one on each in turn. Empty: the shards start in this process.
  std::vector<caf::actor> shard_hosts;
  /// Across processes with cluster.on_node_loss "continue": the gatekeeper, which hands the
  /// driver the replacement nodes that join during the run (replace_atom). May be null.
  caf::actor gatekeeper;
};

/// Spawns the driver on the cooperative scheduler; send it (run_atom) to start. The reply is
/// the run's report, also when the run failed.
run_driver_actor spawn_run_driver(caf::actor_system& system, driver_options options);

/// Sends a spawned driver the run request and waits for its report (a failed one if it dies).
run_report await_report(caf::actor_system& system, const run_driver_actor& driver);

}  // namespace troupe
