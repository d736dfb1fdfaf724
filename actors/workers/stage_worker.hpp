// A pipeline stage actor: owns one slice of the model's layers (a stage_engine) on its own
// thread, and runs the pipeline schedule's operations for its stage in every step, each as soon
// as its input has arrived. Protocol: messages/pipeline_step.hpp. Any exception (LibTorch's, a
// non-finite loss, a protocol violation) ends the actor with an errc error carrying the message;
// the run driver monitors it and names the stage.
#pragma once

#include "actors/workers/worker_context.hpp"
#include "core/train/stage_engine.hpp"
#include "messages/interfaces.hpp"

#include <memory>

namespace troupe {

/// Spawns stage `where.stage` of pipeline `where.pipeline` on a thread of its own (detached: an
/// operation blocks it for a whole forward or backward). Its worker id is
/// pipeline * stages + stage. The caller monitors it and then sends it (link_atom, prev, next).
stage_worker_actor spawn_stage_worker(caf::actor_system& system, context_ptr context,
                                      stage_position where, run_driver_actor driver);

}  // namespace troupe
