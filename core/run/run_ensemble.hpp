// Trains a stacked ensemble (job.ensemble) on the calling thread: one device, one worker, one
// stacked model, so there is nothing for actors to coordinate. Records the same metrics as an
// actor run (step, worker_step, eval) plus a `member_eval` record per member and evaluation;
// the run's test figures are the ensemble's averaged prediction. Stops and ends the way the
// run driver does (core/run/run_ending.hpp).
#pragma once

#include "core/data/dataset.hpp"
#include "core/run/run_options.hpp"
#include "core/run/run_plan.hpp"
#include "core/train/run_report.hpp"

namespace troupe {

/// Never throws for a failure inside the run: a diverging member or a LibTorch error yields a
/// report with status "failed" and the cause.
run_report run_ensemble(const run_plan& plan, dataset_ptr data, const run_options& options);

}  // namespace troupe
