// What a suite's output folder says: its summary and leaderboard (once it has ended), and each
// job's run history, read while the suite runs too (a job not yet started has no folder).
#pragma once

#include "core/report/run_history.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct suite_job_history {
  std::string name;
  std::optional<run_history> run;  ///< nullopt: the job has not started
};

struct suite_history {
  std::string folder;
  std::string name;
  nlohmann::json summary;               ///< summary.json; null while the suite runs
  nlohmann::json leaderboard;           ///< leaderboard.json; null while the suite runs
  std::vector<suite_job_history> jobs;  ///< in suite order
};

/// Whether `folder` is a suite's output folder (it holds suite.json).
bool is_suite_folder(const std::string& folder);

/// Reads the suite folder; throws data_error naming a file that cannot be read. `read_job`
/// reads a job's folder (a live report passes its followers' refresh).
suite_history read_suite_history(
    const std::string& folder,
    const std::function<run_history(const std::string&)>& read_job = read_run_history);

}  // namespace troupe
