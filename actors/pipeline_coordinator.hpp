// The coordinator of pipelined runs: replicas x stages stage workers, driven step by step.
//
// For each step s (protocol in messages/pipeline_step.hpp):
//   a. it sends (compute, s) to every stage; each runs its schedule and sends its stage gradient;
//   b. per stage index, a sync barrier (core/policy/sync_policy) over the replicas: when the
//      stage's gradients from every pipeline are in, it sums them in replica order and sends the
//      sum back to that stage of every pipeline (one pipeline: its own gradient, by handle);
//   c. when every stage has applied and reported, the step is complete: its loss comes from the
//      last stages, each stage's idle (bubble) time is its pipeline's flush window less its busy
//      time, and all of it goes to metrics.jsonl;
//   d. when an evaluation is due, it asks the first stage of every pipeline to push the test
//      shard through, and waits for every last stage's report before the next step.
// After the last step each stage hands in its weights; the same stage of every pipeline must
// agree bit for bit, and stage 0..P-1 of pipeline 0 concatenate into the model's flat weights.
// A stage that dies ends the run at once, naming it; the others are told to exit.
#pragma once

#include "actors/coordinator.hpp"
#include "messages/interfaces.hpp"

namespace troupe {

/// Spawns the coordinator on the cooperative scheduler; send it (run_atom) to start.
/// `options.setup->stage_slices` must hold one slice per stage.
pipeline_coordinator_actor spawn_pipeline_coordinator(caf::actor_system& system,
                                                      coordinator_options options);

}  // namespace troupe
