// Seed groups: jobs whose overrides differ only in `seed` are one setting, run several times.
// One seed's figure says little (the spread between seeds is often larger than the gap between
// settings), so the suite reports each setting's mean and sample standard deviation over the
// jobs that succeeded, and ranks settings, not seeds.
#pragma once

#include "core/suite/suite_results.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct figure_stats {
  std::size_t n = 0;
  std::optional<double> mean;  ///< null when n = 0
  std::optional<double> std;   ///< sample standard deviation (n - 1); null when n < 2
};

/// Mean and sample standard deviation (the n - 1 one, as Python's statistics.stdev).
figure_stats mean_and_std(const std::vector<double>& xs);

/// The figures every setting reports: validation_loss, validation_accuracy, test_loss,
/// test_accuracy, final_train_loss, samples_per_s, wall_s.
const std::vector<std::string>& setting_figures();
/// A job's figure by one of those names; nullopt where it has none.
std::optional<double> figure_of(const suite_job_result& r, const std::string& figure);

struct suite_setting {
  nlohmann::json overrides = nlohmann::json::object();  ///< the jobs' overrides, seed removed
  std::vector<std::size_t> jobs;                        ///< indices into the results, in order
  std::size_t succeeded = 0;
  std::map<std::string, figure_stats> figures;  ///< over the jobs that succeeded
  loss_kind loss = loss_kind::cross_entropy;    ///< its jobs' training.loss (the first's)
};

/// The settings in order of first appearance; every job is in exactly one.
std::vector<suite_setting> group_settings(const std::vector<suite_job_result>& results);
/// Whether some setting has two or more jobs (only then does a suite report settings).
bool has_seed_groups(const std::vector<suite_setting>& settings);

/// Settings by the mean of the ranking figure (ties: lower mean loss); settings with no mean
/// (nothing succeeded, or a loss of another kind than the one ranked) follow in order. Indices
/// into `settings`.
std::vector<std::size_t> rank_settings(const std::vector<suite_setting>& settings,
                                       const ranking_figure& by);

/// The `settings` list of summary.json and leaderboard.json, ranked, each with "rank" (null for
/// the unranked), "overrides", "jobs" (names), "succeeded" and {"mean", "std"} per figure.
nlohmann::json settings_json(const std::vector<suite_setting>& settings,
                             const std::vector<suite_job_result>& results,
                             const ranking_figure& by);

/// One table line per setting, ranked, figures as "mean ± std".
std::string render_settings(const std::vector<suite_setting>& settings, const ranking_figure& by);

}  // namespace troupe
