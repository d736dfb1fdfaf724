// async: the parameter server, an actor of its own on a thread of its own, so that the run
// driver never waits for an optimizer step or an evaluation. It owns the master weights and
// the optimizer (a replica_engine) and does, in the order the driver asked:
//   (apply_atom, lr, rank, gradient)        one optimizer step with that gradient and rate
//   (hand_out_atom, worker, rank, version, step)  send the worker (params_atom, version, step,
//                                           a snapshot of the weights)
//   (evaluate_atom, step)                   evaluate the whole evaluation set; the eval_report
//                                           (and, with keep_best or early stopping, the
//                                           weights) go to the driver
//   weights_atom -> the final weights
// The order is what makes it exact: a snapshot handed out after an apply holds that apply.
// Any exception ends the actor with an errc error; the driver monitors it.
#pragma once

#include "actors/workers/worker_context.hpp"
#include "messages/interfaces.hpp"

#include <functional>
#include <string>
#include <vector>

namespace troupe {

/// With a sharded server (run_plan::sharded_server) the server spawned passes the driver's words
/// on to its shards (actors/workers/sharded_server), started on `shard_hosts` (node agents, a
/// shard on each in turn) or, with none, in this process.
parameter_server_actor spawn_parameter_server(caf::actor_system& system, context_ptr context,
                                              run_driver_actor driver,
                                              std::vector<caf::actor> shard_hosts = {},
                                              std::function<void(const std::string&)> log = {});

}  // namespace troupe
