// A replica worker actor: owns one model replica (a replica_engine) on its own thread.
//
// Protocol: messages/training_step.hpp. Each step's policy comes from the plan's schedule, and
// where a sync step's gradients meet from the plan's gradient_meeting, which the driver reads
// too. sync: on (compute, s) it computes its gradient for step s and either sends it to the
// driver and applies the combined gradient that comes back, or sums it with the other replicas
// itself (one replica: nothing to sum; a ring; NCCL) and applies that; then it reports its
// timings, evaluates if the step's outcome says so, and goes on to s + 1 or, after the last
// step, sends its final weights. local_sgd: it steps on its own gradient; at averaging steps it
// sends its weights and continues once the average comes back. async: it computes on the
// weights the parameter server sends and pushes its gradient. Any exception (LibTorch's
// included) ends the actor with an errc error that carries the message; the driver monitors it.
#pragma once

#include "actors/workers/worker_context.hpp"
#include "messages/interfaces.hpp"

namespace troupe {

/// Spawns a worker on a thread of its own (detached: a step blocks it for the whole
/// forward/backward pass). The caller monitors it.
replica_worker_actor spawn_replica_worker(caf::actor_system& system, context_ptr context,
                                          int64_t rank, run_driver_actor driver);

}  // namespace troupe
