// async with a sharded parameter server (parallelism.ps_shards > 1): the server the driver talks
// to, in the driver's process, holding no weights of its own. It starts the shards
// (actors/workers/server_shard: in this process, or a shard on each node agent in turn) and
// passes the driver's words on to every shard in the order they came, so that every shard
// applies the same gradients in the same order and hands out slices of the same version:
//   (apply_atom, lr, rank, _), (hand_out_atom, hand_out)  to every shard (a worker is first
//                                  told the shards, link_atom, with its first hand-out)
//   (evaluate_atom, step)          the shards' slices, gathered, evaluated here
//   weights_atom                   the shards' slices, gathered: the final weights
//   (checkpoint_atom, step)        the shards' states, joined into a whole server's state
//                                  (core/train/shard_engine): the checkpoint is the same for
//                                  any number of shards
//   (restore_atom, restored_state) to every shard, each taking its part
// A shard that is lost (its node, under cluster.on_node_loss "continue") starts again in this
// process from its slice of the newest whole weights this server gathered (the last
// evaluation's or checkpoint's; the run's first weights before either) and of the last
// checkpoint's optimizer state (fresh before any): its updates since are lost, the other
// shards' are not. Every worker is told the new shards, and the hand-outs still owed go to the
// new shard again. Lost otherwise, the server fails, naming the shard.
#pragma once

#include "actors/workers/worker_context.hpp"
#include "messages/interfaces.hpp"

#include <functional>
#include <string>
#include <vector>

namespace troupe {

parameter_server_actor spawn_sharded_server(caf::actor_system& system, context_ptr context,
                                            run_driver_actor driver,
                                            std::vector<caf::actor> shard_hosts,
                                            std::function<void(const std::string&)> log);

}  // namespace troupe
