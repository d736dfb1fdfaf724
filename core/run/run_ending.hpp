// How every run ends (the run driver's glue calls these for every mode): when a stop request
// takes effect, and the report of a run that ends.
#pragma once

#include "core/run/run_options.hpp"
#include "core/run/run_plan.hpp"
#include "core/train/run_tracker.hpp"

#include <string>
#include <vector>

namespace troupe {

/// What the run's tracker records besides steps: the evaluation set, the learning rate.
tracker_options tracking_of(const run_plan& plan);

/// "interrupted after step N" when a stop was requested and `step` was not the last; else "".
std::string stop_reason(const run_options& options, const step_rules& rules, int64_t step);

/// The test set's one evaluation at the end of a run with a validation set, `weights` ("best"
/// or "final") after `step`, from its sums over `count` rows taking `eval_s`: into the report's
/// test figures and wall_s (not train_s) and an eval record (when the run records metrics), with
/// a confusion record when `confusion` holds counts (core/train/confusion).
void record_test_evaluation(const run_plan& plan, const run_options& options, run_report& report,
                            int64_t step, const char* weights, double loss_sum, double metric_sum,
                            int64_t count, double eval_s,
                            const std::vector<int64_t>& confusion = {});

/// The report of a run that ends now with `error` ("" when it succeeded, with `weights`), which
/// then has status `failed_as` (failed, or diverged). A failure is recorded in the metrics
/// first; a metrics file that cannot take it does not hide the error, which the report carries.
run_report end_run(run_tracker& tracker, const run_plan& plan, const std::string& error,
                   at::Tensor weights, run_status failed_as = run_status::failed);

}  // namespace troupe
