// Which features of a job combine, in one place: pipelines, ensembles, local SGD, schedules,
// CUDA and nodes each work with some of the others and not (yet) with the rest. Field checks
// (parse_job) come first; these rules read several sections at once. The rules that need the
// data's size are checked when the plan is made (core/run/run_plan), with the same messages'
// shape: a JSON path, what is wrong, and the value.
#pragma once

#include "core/job/job_config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

/// Appends a problem for every combination the job asks for that troupe cannot run. A rule
/// whose fields were already reported (in `problems`) is skipped: a bad value was not stored,
/// and comparing the default in its place would report a phantom.
void check_feature_combinations(const job_config& job, std::vector<std::string>& problems);

/// Throws job_error when the data cannot fill a global batch (`train_rows`, after
/// `validation_rows` were held out) or when a phase of a schedule would start after the run's
/// `total_steps`.
void check_against_data(const job_config& job, int64_t train_rows, int64_t validation_rows,
                        int64_t total_steps);

}  // namespace troupe
