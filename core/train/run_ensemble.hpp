// Trains a stacked ensemble (job.ensemble) on the calling thread: one device, one worker, one
// stacked model, so there is nothing for actors to coordinate. Records the same metrics as an
// actor run (step, worker_step, eval) plus a `member_eval` record per member and evaluation;
// the run's test figures are the ensemble's averaged prediction.
#pragma once

#include "core/config/job_config.hpp"
#include "core/data/dataset.hpp"
#include "core/train/run_options.hpp"
#include "core/train/run_report.hpp"

namespace troupe {

/// Never throws for a failure inside the run: a diverging member or a LibTorch error yields a
/// report with status "failed" and the cause.
run_report run_ensemble(const job_config& job, dataset_ptr data, const run_options& options);

}  // namespace troupe
