// What an ensemble run's report holds beyond any run's, once the run driver has ended it with
// the stacked weights of every member (the final ones, or early stopping's): each member's
// named weights (saved as one file per member, no weights.pt), and with a validation set the
// test set's one evaluation, of every member and of their averaged prediction.
#pragma once

#include "core/data/dataset.hpp"
#include "core/run/run_options.hpp"
#include "core/run/run_plan.hpp"
#include "core/train/run_report.hpp"

namespace troupe {

/// Fills report.member_weights (and with a validation set the test figures of the report and
/// its members, recording member_eval and eval "test" records) from report.final_weights, which
/// it then clears. A failed run's report is left as it is.
void finish_ensemble_report(const run_plan& plan, const dataset_ptr& data,
                            const run_options& options, run_report& report);

}  // namespace troupe
