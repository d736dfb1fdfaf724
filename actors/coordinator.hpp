// The coordinator actor of a data-parallel run under the sync or local_sgd policy.
//
// sync, for each step s (the sync policy in core/policy decides when a step is complete):
//   a. every worker sends (gradient, meta, grad) for s; the coordinator keeps them by rank;
//   b. when the policy says complete, it sums the gradients in rank order, and
//   c. sends every worker (update, {s, evaluate, last}, combined);
//   d. workers answer with step_stats (and eval_report when asked); the coordinator writes them
//      to metrics.jsonl and folds them into the report.
// local_sgd: workers step alone and send step_stats every step (a step is complete when every
// live worker's is in); at each averaging step they send (average, meta, weights, momenta), and
// when the same barrier completes, the coordinator averages by rows in rank order and sends
// (averaged, {s, evaluate, last}, weights, momenta) back.
// Across processes (setup->ring) sync workers sum their gradients in a ring among themselves
// and apply the sum; the coordinator links each to its successor and completes each step from
// the workers' reports, as for a single replica.
// Both: after the last step each worker sends its weights; when all have (and agree bit for
// bit), the run succeeded.
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
#include <string>
#include <vector>

namespace troupe {

struct coordinator_options {
  std::shared_ptr<const replica_setup> setup;
  /// Receives one JSON record per event; owned by the caller, used only by the coordinator
  /// while the run lasts. May be null.
  jsonl_writer* metrics = nullptr;
  /// Called on the coordinator's thread after each step and evaluation. May be empty.
  std::function<void(const progress_update&)> on_progress;
  /// Checked after every step: when it reads true the run ends as interrupted. May be null.
  const std::atomic<bool>* stop_requested = nullptr;
  /// Starts replica `rank` (across processes: on its node). Empty: a detached worker here.
  /// May throw; the run then fails with the message.
  std::function<replica_worker_actor(int64_t rank, coordinator_actor coordinator)> spawn_worker;
  /// Where each replica runs, for messages ("node a"); empty inside one process.
  std::vector<std::string> worker_places;
};

/// Spawns the coordinator on the cooperative scheduler; send it (run_atom) to start.
coordinator_actor spawn_coordinator(caf::actor_system& system, coordinator_options options);

}  // namespace troupe
