// The one library entry to a run. Every mode goes through it: replicas, pipelines and the
// async parameter server in one process (a run driver and its workers in an embedded actor
// system), stacked ensembles (the driver and one ensemble worker: actors/workers/ensemble_worker),
// and replicas on nodes (the driver behind a gatekeeper that nodes join). The CLI, tests,
// benchmarks and examples call it.
#pragma once

#include "core/data/dataset.hpp"
#include "core/run/run_options.hpp"
#include "core/run/run_plan.hpp"
#include "core/train/run_report.hpp"
#include "messages/interfaces.hpp"

namespace troupe {

/// Runs `plan` on `data`, whose facts must be the plan's (else data_error, naming both). A job
/// across processes (`cluster.nodes`) needs `options.cluster` (else job_error). Never throws for
/// a failure inside the run: a failed worker, a node that does not come, an interruption all
/// yield a report with status failed and the cause in `error`.
run_report run_job(const run_plan& plan, dataset_ptr data, const run_options& options);

/// Plans `job` on `data` (with its facts) and runs it: for callers that build jobs in code
/// (tests, benchmarks, examples). Throws job_error where make_run_plan does.
run_report plan_and_run(const job_config& job, dataset_ptr data, const run_options& options = {});

}  // namespace troupe
