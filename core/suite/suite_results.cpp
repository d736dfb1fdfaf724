#include "core/suite/suite_results.hpp"

#include "core/suite/judged_figure.hpp"
#include "core/suite/seed_groups.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace troupe {
namespace {

template <class T>
nlohmann::json optional_json(const std::optional<T>& x) {
  return x ? nlohmann::json(*x) : nlohmann::json(nullptr);
}

// The leaderboard's blocks, in order: ranked jobs, jobs that completed without the ranking
// figure, jobs stopped by stop_losers (they did not complete), those whose loss diverged, then
// failures and the unstarted.
int block_of(const suite_job_result& r, const ranking_figure& by) {
  if (is_ranked(r, by))
    return 0;
  switch (r.status) {
    case run_status::succeeded:
      return 1;
    case run_status::stopped:
      return 2;
    case run_status::diverged:
      return 3;
    case run_status::failed:
      return 4;
    case run_status::not_started:
      return 5;
  }
  return 5;
}

std::string percent(const std::optional<double>& x) {
  return x ? fmt::format("{:.2f}%", *x * 100) : std::string("-");
}

std::string loss(const std::optional<double>& x) {
  return x ? fmt::format("{:.4f}", *x) : std::string("-");
}

// Why a job that succeeded has no place ("" for a ranked one), before its overrides.
std::string unranked_reason(const suite_job_result& r, const ranking_figure& by) {
  if (is_ranked(r, by))
    return "";
  if (by.by_loss && r.loss != by.loss)
    return fmt::format("unranked, trains with {} and the suite ranks {} losses: ",
                       to_string(r.loss), to_string(by.loss));
  return fmt::format("unranked, no {}: ", to_string(by));
}

}  // namespace

ranking_figure ranking_of(const std::vector<suite_job_result>& results) {
  ranking_figure by;
  by.by_loss = !results.empty() &&
               std::all_of(results.begin(), results.end(),
                           [](const suite_job_result& r) { return is_regression(r.loss); });
  if (by.by_loss)
    by.loss = results.front().loss;
  // Validation where some job has the ranked figure of it.
  by.validation = std::any_of(results.begin(), results.end(), [&](const suite_job_result& r) {
    return by.by_loss ? r.validation_loss.has_value() : r.validation_accuracy.has_value();
  });
  return by;
}

const char* to_string(const ranking_figure& by) {
  if (by.by_loss)
    return by.validation ? "validation_loss" : "test_loss";
  return by.validation ? "validation_accuracy" : "test_accuracy";
}

const char* tie_breaker_name(const ranking_figure& by) {
  if (by.by_loss)
    return nullptr;
  return by.validation ? "validation_loss" : "test_loss";
}

std::optional<double> ranking_value(const suite_job_result& r, const ranking_figure& by) {
  if (by.by_loss)
    return r.loss != by.loss ? std::nullopt : by.validation ? r.validation_loss : r.test_loss;
  return by.validation ? r.validation_accuracy : r.test_accuracy;
}

bool ranks_before(double a, double b, const ranking_figure& by) {
  return by.by_loss ? a < b : a > b;
}

bool is_ranked(const suite_job_result& r, const ranking_figure& by) {
  return r.status == run_status::succeeded && ranking_value(r, by).has_value();
}

std::vector<std::size_t> rank_jobs(const std::vector<suite_job_result>& results) {
  const auto by = ranking_of(results);
  std::vector<std::size_t> order(results.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = results[a];
    const auto& y = results[b];
    if (block_of(x, by) != block_of(y, by))
      return block_of(x, by) < block_of(y, by);
    if (!is_ranked(x, by))
      return false;
    const auto vx = *ranking_value(x, by);
    const auto vy = *ranking_value(y, by);
    if (vx != vy)
      return ranks_before(vx, vy, by);
    if (by.by_loss)
      return false;
    const auto tie = [&](const suite_job_result& r) {
      return (by.validation ? r.validation_loss : r.test_loss).value_or(0);
    };
    return tie(x) < tie(y);
  });
  return order;
}

nlohmann::json to_json(const suite_job_result& r) {
  nlohmann::json j = {{"name", r.name},
                      {"status", to_string(r.status)},
                      {"device", r.device},
                      {"overrides", r.overrides},
                      {"validation_accuracy", optional_json(r.validation_accuracy)},
                      {"validation_loss", optional_json(r.validation_loss)},
                      {"test_accuracy", optional_json(r.test_accuracy)},
                      {"test_loss", optional_json(r.test_loss)},
                      {"final_train_loss", optional_json(r.final_train_loss)},
                      {"wall_s", r.wall_s},
                      {"samples_per_s", r.samples_per_s},
                      {"peak_rss_mb", r.peak_rss_mb}};
  if (!r.error.empty())
    j["error"] = r.error;
  if (r.retries > 0)
    j["retries"] = r.retries;
  return j;
}

nlohmann::json leaderboard_json(const std::vector<suite_job_result>& results) {
  const auto by = ranking_of(results);
  nlohmann::json rows = nlohmann::json::array();
  int rank = 0;
  for (auto i : rank_jobs(results)) {
    auto j = to_json(results[i]);
    j["rank"] = is_ranked(results[i], by) ? nlohmann::json(++rank) : nlohmann::json(nullptr);
    rows.push_back(j);
  }
  nlohmann::json board = {{"ranked_by", to_string(by)}, {"jobs", rows}};
  const auto settings = group_settings(results);
  if (has_seed_groups(settings))
    board["settings"] = settings_json(settings, results, by);
  return board;
}

bool suite_succeeded(const std::vector<suite_job_result>& results) {
  return std::all_of(results.begin(), results.end(), [](const suite_job_result& r) {
    // A diverged trial is what its settings gave, as a stopped one is: the search worked.
    return r.status == run_status::succeeded || r.status == run_status::stopped ||
           r.status == run_status::diverged;
  });
}

nlohmann::json suite_summary_json(const std::string& name,
                                  const std::vector<suite_job_result>& results, bool interrupted) {
  const auto by = ranking_of(results);
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& r : results)
    jobs.push_back(to_json(r));
  nlohmann::json summary = {{"name", name},
                            {"status", to_string(interrupted                ? run_status::stopped
                                                 : suite_succeeded(results) ? run_status::succeeded
                                                                            : run_status::failed)},
                            {"ranked_by", to_string(by)},
                            {"jobs", jobs},
                            {"leaderboard", "leaderboard.json"}};
  const auto settings = group_settings(results);
  if (has_seed_groups(settings))
    summary["settings"] = settings_json(settings, results, by);
  return summary;
}

std::string render_leaderboard(const std::vector<suite_job_result>& results) {
  const auto by = ranking_of(results);
  const bool validation = by.validation;
  std::string out;
  const auto settings = group_settings(results);
  if (has_seed_groups(settings))
    out = render_settings(settings, by) + "\n";
  std::size_t width = 4;
  for (const auto& r : results)
    width = std::max(width, r.name.size());
  // A suite of regression jobs has no accuracy to show: its losses alone.
  const auto accuracy = [&](const std::optional<double>& x) {
    return by.by_loss ? std::string() : fmt::format("{:>9}  ", percent(x));
  };
  out += fmt::format("{:>4}  {:<{}}  ", "rank", "job", width);
  if (validation)
    out +=
        (by.by_loss ? "" : fmt::format("{:>9}  ", "val acc")) + fmt::format("{:>9}  ", "val loss");
  if (!by.by_loss)
    out += fmt::format("{:>9}  ", validation ? "test acc" : "accuracy");
  out += fmt::format("{:>9}  {:>8}  {}\n", "test loss", "wall s", "status / overrides");
  int rank = 0;
  for (auto i : rank_jobs(results)) {
    const auto& r = results[i];
    const auto place = is_ranked(r, by) ? std::to_string(++rank) : std::string("-");
    out += fmt::format("{:>4}  {:<{}}  ", place, r.name, width);
    if (validation)
      out += accuracy(r.validation_accuracy) + fmt::format("{:>9}  ", loss(r.validation_loss));
    // "stopped by stop_losers ...", "diverged: loss ...": the cause may name its status itself.
    const std::string status = to_string(r.status);
    auto what = r.error.rfind(status, 0) == 0 ? r.error : status + ": " + r.error;
    if (r.status == run_status::succeeded)
      what = unranked_reason(r, by) + r.overrides.dump();
    out += accuracy(r.test_accuracy) +
           fmt::format("{:>9}  {:>8.1f}  {}\n", loss(r.test_loss), r.wall_s, what);
  }
  return out;
}

}  // namespace troupe
