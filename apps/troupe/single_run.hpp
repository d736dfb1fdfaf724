// One job run into its folder, as `troupe run JOB.json` does it, in the halves its callers need
// apart: what the job asks for (read, --set applied), everything before the first step (planned,
// folder claimed; a bad job throws here and nothing is written), and the run itself with what it
// leaves (never throws). The CLI wraps them in its signal handling and messages; the Python
// module (python/) runs the last half on a thread of its own and stops it with its own flag.
#pragma once

#include "apps/troupe/commands.hpp"
#include "apps/troupe/resume_point.hpp"
#include "core/data/dataset.hpp"
#include "core/run/run_directory.hpp"
#include "core/run/run_options.hpp"
#include "core/run/run_plan.hpp"
#include "core/train/run_report.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <optional>
#include <string>

namespace troupe {

/// What a run command asks to run.
struct job_request {
  job_source source;  ///< where the job came from, for messages (the checkpoint when resumed)
  nlohmann::json json;
  std::optional<resume_point> resumed;
};

/// The job file of `cmd` with its --set (and --local-nodes' node count) applied, or with
/// --resume the job of the newest checkpoint that verifies. Throws job_error.
job_request read_job_request(const run_command& cmd);

/// A job given as JSON rather than a file (`label` names it in messages), with `sets` applied as
/// --set would. Throws job_error listing every assignment that does not apply.
job_request job_request_from_json(const std::string& label, nlohmann::json json,
                                  const std::vector<std::string>& sets);

/// A single job, planned, with its folder claimed and nothing run yet.
struct single_run {
  run_plan plan;
  std::optional<run_directory> dir;
  run_options options;
  std::optional<resume_point> resumed;
  /// Tensor files and tables, read whole to plan (they have no header to plan from); the run
  /// trains on them rather than reading them again.
  dataset_ptr preloaded;
};

/// Checks and plans `request` (a single job, not a suite) and claims its folder: the plan's
/// checkpoints must fit on its disk, an existing --out is refused unless --force. Throws
/// job_error (nothing written) or data_error (a data file read to plan is bad).
single_run prepare_single_run(const run_command& cmd, job_request request);

struct single_run_result {
  run_report report;
  /// Why summary.json could not be written; empty when it was.
  std::string summary_error;
};

/// Trains and writes what the run leaves into its folder (job.json, plan.txt, metrics.jsonl,
/// the weights of a run that succeeded, summary.json last). `stop` set asks it to stop after a
/// step, as Ctrl-C does. Never throws: a run that cannot go on has status failed and its cause.
single_run_result complete_single_run(const run_command& cmd, single_run& run,
                                      const std::atomic<bool>& stop);

}  // namespace troupe
