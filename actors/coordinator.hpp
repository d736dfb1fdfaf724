// The coordinator actor of a synchronous data-parallel run.
//
// Protocol, for each step s (the sync policy in core/policy decides when a step is complete):
//   a. every worker sends (gradient, meta, grad) for s; the coordinator keeps them by rank;
//   b. when the policy says complete, it sums the gradients in rank order, and
//   c. sends every worker (update, {s, evaluate, last}, combined);
//   d. workers answer with step_stats (and eval_report when asked); the coordinator writes them
//      to metrics.jsonl and folds them into the report;
//   e. after the last step each worker sends its weights; when all have, the run succeeded.
// A worker that dies (down_msg) ends the run at once: the others are told to exit, and the run
// request is answered with a failed report naming the worker and the cause. Nothing waits.
#pragma once

#include "actors/replica_worker.hpp"
#include "core/metrics/jsonl_writer.hpp"
#include "core/train/progress.hpp"
#include "messages/interfaces.hpp"

#include <atomic>
#include <functional>
#include <memory>

namespace troupe {

struct coordinator_options {
  std::shared_ptr<const replica_setup> setup;
  int64_t total_steps = 0;
  int64_t steps_per_epoch = 0;
  /// Receives one JSON record per event; owned by the caller, used only by the coordinator
  /// while the run lasts. May be null.
  jsonl_writer* metrics = nullptr;
  /// Called on the coordinator's thread after each step and evaluation. May be empty.
  std::function<void(const progress_update&)> on_progress;
  /// Checked after every step: when it reads true the run ends as interrupted. May be null.
  const std::atomic<bool>* stop_requested = nullptr;
};

/// Spawns the coordinator on the cooperative scheduler; send it (run_atom) to start.
coordinator_actor spawn_coordinator(caf::actor_system& system, coordinator_options options);

}  // namespace troupe
