#include "core/suite/seed_groups.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace troupe {
namespace {

nlohmann::json optional_json(const std::optional<double>& x) {
  return x ? nlohmann::json(*x) : nlohmann::json(nullptr);
}

const figure_stats& stats(const suite_setting& s, const std::string& figure) {
  static const figure_stats none;
  const auto it = s.figures.find(figure);
  return it == s.figures.end() ? none : it->second;
}

// The mean that ranks a setting: none for a setting of another loss than the one ranked.
std::optional<double> ranking_mean(const suite_setting& s, const ranking_figure& by) {
  if (by.by_loss && s.loss != by.loss)
    return std::nullopt;
  return stats(s, to_string(by)).mean;
}

std::string as_percent(const figure_stats& s) {
  if (!s.mean)
    return "-";
  if (!s.std)
    return fmt::format("{:.2f}%", *s.mean * 100);
  return fmt::format("{:.2f} ± {:.2f}%", *s.mean * 100, *s.std * 100);
}

std::string as_number(const figure_stats& s, int decimals) {
  if (!s.mean)
    return "-";
  if (!s.std)
    return fmt::format("{:.{}f}", *s.mean, decimals);
  return fmt::format("{:.{}f} ± {:.{}f}", *s.mean, decimals, *s.std, decimals);
}

}  // namespace

figure_stats mean_and_std(const std::vector<double>& xs) {
  figure_stats s;
  s.n = xs.size();
  if (xs.empty())
    return s;
  const double mean = std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
  s.mean = mean;
  if (xs.size() < 2)
    return s;
  // Two passes: the squares of deviations, not of values, so that close values lose nothing.
  double squares = 0;
  for (double x : xs)
    squares += (x - mean) * (x - mean);
  s.std = std::sqrt(squares / static_cast<double>(xs.size() - 1));
  return s;
}

const std::vector<std::string>& setting_figures() {
  static const std::vector<std::string> names{
      "validation_loss",  "validation_accuracy", "test_loss", "test_accuracy",
      "final_train_loss", "samples_per_s",       "wall_s"};
  return names;
}

std::optional<double> figure_of(const suite_job_result& r, const std::string& figure) {
  if (figure == "validation_loss")
    return r.validation_loss;
  if (figure == "validation_accuracy")
    return r.validation_accuracy;
  if (figure == "test_loss")
    return r.test_loss;
  if (figure == "test_accuracy")
    return r.test_accuracy;
  if (figure == "final_train_loss")
    return r.final_train_loss;
  if (figure == "samples_per_s")
    return r.samples_per_s;
  if (figure == "wall_s")
    return r.wall_s;
  return std::nullopt;
}

std::vector<suite_setting> group_settings(const std::vector<suite_job_result>& results) {
  std::vector<suite_setting> settings;
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto overrides =
        results[i].overrides.is_object() ? results[i].overrides : nlohmann::json::object();
    overrides.erase("seed");
    // JSON objects compare key by key, whatever order the keys were written in.
    auto it = std::find_if(settings.begin(), settings.end(),
                           [&](const suite_setting& s) { return s.overrides == overrides; });
    if (it == settings.end()) {
      settings.push_back({overrides, {}, 0, {}, results[i].loss});
      it = std::prev(settings.end());
    }
    it->jobs.push_back(i);
  }
  for (auto& s : settings) {
    for (const auto& figure : setting_figures()) {
      std::vector<double> xs;
      for (auto i : s.jobs)
        if (results[i].status == run_status::succeeded)
          if (const auto x = figure_of(results[i], figure))
            xs.push_back(*x);
      s.figures[figure] = mean_and_std(xs);
    }
    for (auto i : s.jobs)
      s.succeeded += results[i].status == run_status::succeeded ? 1 : 0;
  }
  return settings;
}

bool has_seed_groups(const std::vector<suite_setting>& settings) {
  return std::any_of(settings.begin(), settings.end(),
                     [](const suite_setting& s) { return s.jobs.size() >= 2; });
}

std::vector<std::size_t> rank_settings(const std::vector<suite_setting>& settings,
                                       const ranking_figure& by) {
  std::vector<std::size_t> order(settings.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto x = ranking_mean(settings[a], by);
    const auto y = ranking_mean(settings[b], by);
    if (x.has_value() != y.has_value())
      return x.has_value();
    if (!x)
      return false;
    if (*x != *y)
      return ranks_before(*x, *y, by);
    const char* tie = tie_breaker_name(by);
    if (tie == nullptr)
      return false;
    return stats(settings[a], tie).mean.value_or(0) < stats(settings[b], tie).mean.value_or(0);
  });
  return order;
}

nlohmann::json settings_json(const std::vector<suite_setting>& settings,
                             const std::vector<suite_job_result>& results,
                             const ranking_figure& by) {
  nlohmann::json list = nlohmann::json::array();
  int rank = 0;
  for (auto k : rank_settings(settings, by)) {
    const auto& s = settings[k];
    nlohmann::json names = nlohmann::json::array();
    for (auto i : s.jobs)
      names.push_back(results[i].name);
    const bool ranked = ranking_mean(s, by).has_value();
    nlohmann::json j = {{"rank", ranked ? nlohmann::json(++rank) : nlohmann::json(nullptr)},
                        {"overrides", s.overrides},
                        {"jobs", names},
                        {"succeeded", s.succeeded}};
    for (const auto& figure : setting_figures()) {
      const auto& f = stats(s, figure);
      j[figure] = {{"mean", optional_json(f.mean)}, {"std", optional_json(f.std)}};
    }
    list.push_back(j);
  }
  return list;
}

std::string render_settings(const std::vector<suite_setting>& settings, const ranking_figure& by) {
  const bool validation = by.validation;
  // Regression settings have no accuracy: the ranked loss, the test loss, the train loss.
  const std::string first = by.by_loss ? (validation ? "val loss" : "test loss")
                                       : (validation ? "val accuracy" : "accuracy");
  const std::string second = by.by_loss ? (validation ? "test loss" : "train loss")
                                        : (validation ? "val loss" : "test loss");
  const std::string third =
      by.by_loss ? (validation ? "train loss" : "") : (validation ? "test accuracy" : "train loss");
  std::string out =
      fmt::format("{:>4}  {:>7}  {:>17}  {:>17}  {:>17}  {:>8}  {}\n", "rank", "ok/jobs", first,
                  second, third, "wall s", "setting (mean ± std over seeds)");
  int rank = 0;
  for (auto k : rank_settings(settings, by)) {
    const auto& s = settings[k];
    const auto place = ranking_mean(s, by) ? std::to_string(++rank) : std::string("-");
    std::string a, b, c;
    if (by.by_loss) {
      a = as_number(stats(s, to_string(by)), 4);
      b = as_number(stats(s, validation ? "test_loss" : "final_train_loss"), 4);
      c = validation ? as_number(stats(s, "final_train_loss"), 4) : "";
    } else {
      a = as_percent(stats(s, to_string(by)));
      b = as_number(stats(s, tie_breaker_name(by)), 4);
      c = validation ? as_percent(stats(s, "test_accuracy"))
                     : as_number(stats(s, "final_train_loss"), 4);
    }
    out += fmt::format("{:>4}  {:>7}  {:>17}  {:>17}  {:>17}  {:>8}  {}\n", place,
                       fmt::format("{}/{}", s.succeeded, s.jobs.size()), a, b, c,
                       as_number(stats(s, "wall_s"), 1), s.overrides.dump());
  }
  return out;
}

}  // namespace troupe
