// Runs one job in an embedded actor system (one coordinator, N detached replica workers) and
// returns its report. This is the library entry point the CLI, tests and benchmarks share.
#pragma once

#include "core/config/job_config.hpp"
#include "core/data/dataset.hpp"
#include "core/train/run_options.hpp"
#include "core/train/run_report.hpp"

namespace troupe {

/// Trains `job` on `data`. Throws job_error only for a pipeline split the model cannot take
/// (make_plan reports the same before a run). Never throws for a failure inside the run: a failed
/// worker yields a report with status "failed" and the cause in `error`.
run_report run_training(const job_config& job, dataset_ptr data, const run_options& options);

}  // namespace troupe
