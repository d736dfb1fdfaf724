// Runs one job in an embedded actor system (one coordinator, N detached replica workers) and
// returns its report. This is the library entry point the CLI, tests and benchmarks share.
#pragma once

#include "core/config/job_config.hpp"
#include "core/data/dataset.hpp"
#include "core/metrics/jsonl_writer.hpp"
#include "core/train/progress.hpp"
#include "core/train/run_report.hpp"

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

/// Trains `job` on `data`. Throws job_error only for a pipeline split the model cannot take
/// (make_plan reports the same before a run). Never throws for a failure inside the run: a failed
/// worker yields a report with status "failed" and the cause in `error`.
run_report run_training(const job_config& job, dataset_ptr data, const run_options& options);

}  // namespace troupe
