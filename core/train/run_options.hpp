// What the caller of a training run hands it besides the job and the data: where metrics go,
// who hears about progress, and the flag that asks it to stop. Shared by the actor runs
// (actors/run_training) and the stacked-ensemble loop (core/train/run_ensemble).
#pragma once

#include "core/metrics/jsonl_writer.hpp"
#include "core/train/progress.hpp"

#include <atomic>
#include <functional>

namespace troupe {

struct run_options {
  /// Receives metrics records; may be null (nothing recorded).
  jsonl_writer* metrics = nullptr;
  /// Called on the coordinator's thread after each step and evaluation; may be empty.
  std::function<void(const progress_update&)> on_progress;
  /// When set (e.g. by a SIGINT handler), the run stops after the step in progress and
  /// reports "failed" with the reason "interrupted". May be null.
  const std::atomic<bool>* stop_requested = nullptr;
};

}  // namespace troupe
