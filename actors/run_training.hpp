// Runs one job in an embedded actor system (one coordinator, N detached replica workers) and
// returns its report. This is the library entry point the CLI, tests and benchmarks share.
#pragma once

#include "actors/coordinator.hpp"
#include "core/config/job_config.hpp"
#include "core/data/dataset.hpp"
#include "core/train/run_options.hpp"
#include "core/train/run_report.hpp"

#include <caf/fwd.hpp>

namespace troupe {

/// Trains `job` on `data`. Throws job_error only for a pipeline split the model cannot take
/// (make_plan reports the same before a run). Never throws for a failure inside the run: a failed
/// worker yields a report with status "failed" and the cause in `error`.
run_report run_training(const job_config& job, dataset_ptr data, const run_options& options);

/// The coordinator's options for `setup` with the caller's metrics, progress and stop flag.
coordinator_options make_coordinator_options(std::shared_ptr<const replica_setup> setup,
                                             const run_options& options);

/// Starts a spawned coordinator and waits for its report (a failed one if it dies).
run_report run_coordinator(caf::actor_system& system, const caf::actor& coordinator);

}  // namespace troupe
