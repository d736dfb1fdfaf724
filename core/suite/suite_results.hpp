// What a suite reports: each job's outcome and figures, and the leaderboard. Jobs rank by their
// validation accuracy (ties: lower validation loss) so that a sweep never tunes on the test set;
// only a suite whose jobs hold out no validation set ranks by test accuracy. Test figures stand
// beside the validation ones. Jobs that succeeded without the ranking figure, jobs stopped by
// stop_losers, and jobs that failed or never started follow, unranked, with their cause.
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
  std::string error;                            ///< the cause, or why stop_losers stopped it
  std::string device;
  nlohmann::json overrides = nlohmann::json::object();
  std::optional<double> test_accuracy;
  std::optional<double> test_loss;
  std::optional<double> final_train_loss;
  double wall_s = 0;       ///< from its start to its end, as the runner saw it
  double peak_rss_mb = 0;  ///< of its process, sampled
  int64_t retries = 0;     ///< restarts after its process crashed (jobs[i].retries)
  double samples_per_s = 0;
  std::optional<double> validation_accuracy;  ///< its last evaluation, on the validation set
  std::optional<double> validation_loss;
};

/// Which figures rank: validation accuracy (then loss) when any job has a validation figure,
/// else test accuracy (then loss).
enum class ranking_figure { validation, test };

ranking_figure ranking_of(const std::vector<suite_job_result>& results);
/// "validation_accuracy" or "test_accuracy", as leaderboard.json's `ranked_by` says.
const char* to_string(ranking_figure x);
/// The figure that ranks a job, and the loss that breaks ties.
std::optional<double> ranking_accuracy(const suite_job_result& r, ranking_figure by);
std::optional<double> ranking_loss(const suite_job_result& r, ranking_figure by);
/// Succeeded and has the ranking figure.
bool is_ranked(const suite_job_result& r, ranking_figure by);

/// The order of the leaderboard: indices into `results`.
std::vector<std::size_t> rank_jobs(const std::vector<suite_job_result>& results);

nlohmann::json to_json(const suite_job_result& r);

/// {"ranked_by", "jobs": rows in leaderboard order with "rank" (null: unranked), and
/// "settings" when jobs that differ only in seed form groups (core/suite/seed_groups)}.
nlohmann::json leaderboard_json(const std::vector<suite_job_result>& results);

/// The suite's summary.json: its status, `ranked_by`, every job in suite order, and `settings`
/// as in the leaderboard. Jobs a rule stopped do not make the suite fail; a suite `interrupted`
/// (Ctrl-C) is "stopped", whatever its jobs did (it said "succeeded" of one whose jobs had all
/// been stopped by the interrupt).
nlohmann::json suite_summary_json(const std::string& name,
                                  const std::vector<suite_job_result>& results,
                                  bool interrupted = false);

/// Whether no job failed or was left unstarted (a stopped job is no failure).
bool suite_succeeded(const std::vector<suite_job_result>& results);

/// A fixed-width table for the terminal: one line per setting (mean ± std over its seeds) when
/// there are seed groups, then one line per job in leaderboard order.
std::string render_leaderboard(const std::vector<suite_job_result>& results);

}  // namespace troupe
