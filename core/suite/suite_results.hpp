// What a suite reports: each job's outcome and figures, and the leaderboard. Jobs rank by their
// validation accuracy (ties: lower validation loss) so that a sweep never tunes on the test set;
// only a suite whose jobs hold out no validation set ranks by test accuracy. A suite of
// regression jobs (mse, l1: no accuracy) ranks by the loss instead, lower first. Test figures
// stand beside the validation ones. Jobs that succeeded without the ranking figure, jobs stopped
// by stop_losers, and jobs that failed or never started follow, unranked, with their cause.
#pragma once

#include "core/job/job_config.hpp"
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
  loss_kind loss = loss_kind::cross_entropy;  ///< its training.loss: what its figures measure
};

/// Which figure ranks. The split: validation when any job has a validation figure, else test.
/// The figure: accuracy (ties: lower loss) when any job is a classifier; in a suite of regression
/// jobs, the loss of the first job's kind, lower first (a job of the other regression loss
/// measures another thing, and is not ranked).
struct ranking_figure {
  bool validation = true;
  bool by_loss = false;
  loss_kind loss = loss_kind::cross_entropy;  ///< by_loss: the training.loss ranked

  bool operator==(const ranking_figure& o) const {
    return validation == o.validation && by_loss == o.by_loss && (!by_loss || loss == o.loss);
  }
};

ranking_figure ranking_of(const std::vector<suite_job_result>& results);
/// "validation_accuracy", "test_accuracy", "validation_loss" or "test_loss", as
/// leaderboard.json's `ranked_by` says.
const char* to_string(const ranking_figure& by);
/// The figure of the split that is not ranked on: the loss under accuracy ("validation_loss"),
/// nothing under loss (nullptr).
const char* tie_breaker_name(const ranking_figure& by);
/// The figure that ranks a job (nullopt: it has none, or it is a loss of another kind).
std::optional<double> ranking_value(const suite_job_result& r, const ranking_figure& by);
/// Whether ranking figure `a` goes before `b`: higher accuracy, lower loss.
bool ranks_before(double a, double b, const ranking_figure& by);
/// Succeeded and has the ranking figure.
bool is_ranked(const suite_job_result& r, const ranking_figure& by);

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
