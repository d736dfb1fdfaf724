// What a suite reports: each job's outcome and figures, and the leaderboard that ranks the jobs
// that succeeded by their last test accuracy (ties: lower test loss first); jobs that failed
// follow, unranked, with their cause.
#pragma once

#include "core/metrics/records.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct suite_job_result {
  std::string name;
  run_status status = run_status::not_started;  ///< not started: the suite was interrupted
  std::string error;
  std::string device;
  nlohmann::json overrides = nlohmann::json::object();
  std::optional<double> test_accuracy;
  std::optional<double> test_loss;
  std::optional<double> final_train_loss;
  double wall_s = 0;       ///< from its start to its end, as the runner saw it
  double peak_rss_mb = 0;  ///< of its process, sampled
  double samples_per_s = 0;
};

/// The order of the leaderboard: indices into `results`.
std::vector<std::size_t> rank_jobs(const std::vector<suite_job_result>& results);

nlohmann::json leaderboard_json(const std::vector<suite_job_result>& results);
nlohmann::json to_json(const suite_job_result& r);

/// A fixed-width table for the terminal, one line per job in leaderboard order.
std::string render_leaderboard(const std::vector<suite_job_result>& results);

}  // namespace troupe
