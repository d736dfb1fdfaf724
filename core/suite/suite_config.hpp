// A suite: many independent jobs from one file. Beside the keys of a job (the shared base), the
// file holds `jobs` (each entry is merged onto the base as a JSON merge patch: a complete job or
// a few overrides), and/or `sweep` (dotted key -> list of values; every combination becomes a
// job), `devices` (what the machine offers), `max_concurrent`, `stop_losers` (stop a job whose
// validation accuracy after K evaluations is below the finished jobs' median; see
// core/suite/stop_losers), `asha` (core/suite/asha), and per job `device` (what it asks for) and
// `limits` (memory and wall time). Every expanded job is validated like a job file.
#pragma once

#include "core/job/job_config.hpp"
#include "core/suite/asha.hpp"
#include "core/suite/placement.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace troupe {

/// What a suite's folder holds beside its jobs' folders: no job may be named so.
inline const std::set<std::string> suite_folder_entries = {
    "summary.json", "leaderboard.json", "suite.json", "specs", "logs", "report.html"};

struct job_limits {
  std::optional<double> memory_mb;  ///< resident memory of the job's process
  std::optional<double> time_s;     ///< wall time from its start
};

struct suite_job {
  job_config job;
  nlohmann::json resolved;   ///< the job's own JSON (suite keys removed), as a job file
  nlohmann::json overrides;  ///< what it changes on the base, for the plan and leaderboard
  placement_request request;
  job_limits limits;
  /// How often a job whose process crashed is started again, from its newest checkpoint when
  /// it wrote one (else from the start).
  int64_t retries = 0;
};

struct suite_config {
  std::string name;
  std::vector<device_offer> devices;
  int64_t max_concurrent = 0;
  std::vector<suite_job> jobs;
  std::size_t entries = 1;       ///< entries of `jobs` (1 without it)
  std::size_t combinations = 1;  ///< combinations of `sweep` x trials of `search` (1: neither)
  std::size_t trials = 0;        ///< trials of `search` (core/suite/random_search); 0: none
  /// stop_losers.after: the evaluations after which a job meets the median rule (off: none).
  std::optional<int64_t> stop_losers_after;
  /// asha: successive halving's rungs (core/suite/asha); off: none.
  std::optional<asha_config> asha;
  /// What stop_losers and asha compare: validation accuracy, or in a suite of regression jobs
  /// (all of one training.loss, mse or l1) the validation loss.
  judged_figure judged;
};

/// Whether a job file is a suite (has `jobs`, `sweep` or `search`).
bool is_suite(const nlohmann::json& file);

/// Expands and validates; throws job_error with every problem, each naming its place
/// ("/sweep/optimizer.lr", "job name (/jobs/2): /optimizer/lr: ...").
suite_config parse_suite(const nlohmann::json& file);

}  // namespace troupe
