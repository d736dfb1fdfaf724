// async with a sharded parameter server (parallelism.ps_shards > 1): one shard, an actor on a
// thread of its own, on a node of its own across nodes. It holds its slice of the master weights
// and of the optimizer (core/train/shard_engine) and does, in the order the server passed the
// driver's words on:
//   (push_atom, async_push) -> ok          a worker's slice of its gradient, kept by rank
//                                          until the driver's apply for it comes
//   (apply_atom, lr, rank, _)              one optimizer step with that rank's slice
//   (hand_out_atom, hand_out)              send the worker (params_atom, server_weights{...,
//                                          shard, slice})
//   weights_atom -> slice; (checkpoint_atom, step) -> checkpoint_part{step, shard, ...}
//   (restore_atom, restored_state)         take this shard's part of a whole server's state
// The worker sends its push to the driver only once every shard acknowledged its slice, so an
// apply finds its slice here; only a shard that replaced a lost one may not (the slice went to
// the lost one): it skips that apply.
#pragma once

#include "actors/workers/worker_context.hpp"
#include "messages/interfaces.hpp"

namespace troupe {

server_shard_actor spawn_server_shard(caf::actor_system& system, context_ptr context,
                                      int64_t shard);

}  // namespace troupe
