#include "core/suite/suite_results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace troupe {
namespace {

template <class T>
nlohmann::json optional_json(const std::optional<T>& x) {
  return x ? nlohmann::json(*x) : nlohmann::json(nullptr);
}

bool ranked(const suite_job_result& r) {
  return r.status == run_status::succeeded && r.test_accuracy.has_value();
}

}  // namespace

std::vector<std::size_t> rank_jobs(const std::vector<suite_job_result>& results) {
  std::vector<std::size_t> order(results.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = results[a];
    const auto& y = results[b];
    if (ranked(x) != ranked(y))
      return ranked(x);
    if (!ranked(x))
      return false;
    if (*x.test_accuracy != *y.test_accuracy)
      return *x.test_accuracy > *y.test_accuracy;
    return x.test_loss.value_or(0) < y.test_loss.value_or(0);
  });
  return order;
}

nlohmann::json to_json(const suite_job_result& r) {
  nlohmann::json j = {{"name", r.name},
                      {"status", to_string(r.status)},
                      {"device", r.device},
                      {"overrides", r.overrides},
                      {"test_accuracy", optional_json(r.test_accuracy)},
                      {"test_loss", optional_json(r.test_loss)},
                      {"final_train_loss", optional_json(r.final_train_loss)},
                      {"wall_s", r.wall_s},
                      {"samples_per_s", r.samples_per_s},
                      {"peak_rss_mb", r.peak_rss_mb}};
  if (!r.error.empty())
    j["error"] = r.error;
  return j;
}

nlohmann::json leaderboard_json(const std::vector<suite_job_result>& results) {
  nlohmann::json board = nlohmann::json::array();
  int rank = 0;
  for (auto i : rank_jobs(results)) {
    auto j = to_json(results[i]);
    j["rank"] = ranked(results[i]) ? nlohmann::json(++rank) : nlohmann::json(nullptr);
    board.push_back(j);
  }
  return board;
}

std::string render_leaderboard(const std::vector<suite_job_result>& results) {
  std::size_t width = 4;
  for (const auto& r : results)
    width = std::max(width, r.name.size());
  std::string out = fmt::format("{:>4}  {:<{}}  {:>9}  {:>9}  {:>8}  {}\n", "rank", "job", width,
                                "accuracy", "test loss", "wall s", "status / overrides");
  int rank = 0;
  for (auto i : rank_jobs(results)) {
    const auto& r = results[i];
    const auto place = ranked(r) ? std::to_string(++rank) : std::string("-");
    const auto accuracy =
        r.test_accuracy ? fmt::format("{:.2f}%", *r.test_accuracy * 100) : std::string("-");
    const auto loss = r.test_loss ? fmt::format("{:.4f}", *r.test_loss) : std::string("-");
    const auto what = r.status == run_status::succeeded
                          ? r.overrides.dump()
                          : std::string(to_string(r.status)) + ": " + r.error;
    out += fmt::format("{:>4}  {:<{}}  {:>9}  {:>9}  {:>8.1f}  {}\n", place, r.name, width,
                       accuracy, loss, r.wall_s, what);
  }
  return out;
}

}  // namespace troupe
