// A stacked ensemble's one worker: owns the ensemble_engine (every member in one stacked model)
// on its own thread and runs the steps the driver releases, as a lone replica would: on
// (compute, s) it steps every member on step s's batches, reports the members' mean loss,
// evaluates when the step's outcome says so (the averaged prediction's sums, and each member's
// for the driver's member_eval records), hands in its state for a checkpoint the driver
// announced, and after the last step sends its stacked weights. So stop requests, early
// stopping, checkpoints, resumes and the final evaluation are the driver's, as for every run.
// Any exception (a member's loss not finite: errc::diverged) ends the actor with an errc
// error; the driver monitors it.
#pragma once

#include "actors/workers/worker_context.hpp"
#include "messages/interfaces.hpp"

namespace troupe {

/// Spawns the worker on a thread of its own (detached: a step blocks it). The caller monitors it.
ensemble_worker_actor spawn_ensemble_worker(caf::actor_system& system, context_ptr context,
                                            run_driver_actor driver);

}  // namespace troupe
