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

const char* accuracy_name(ranking_figure by) {
  return by == ranking_figure::validation ? "validation_accuracy" : "test_accuracy";
}

const char* loss_name(ranking_figure by) {
  return by == ranking_figure::validation ? "validation_loss" : "test_loss";
}

const figure_stats& stats(const suite_setting& s, const std::string& figure) {
  static const figure_stats none;
  const auto it = s.figures.find(figure);
  return it == s.figures.end() ? none : it->second;
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
      settings.push_back({overrides, {}, 0, {}});
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
                                       ranking_figure by) {
  std::vector<std::size_t> order(settings.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = stats(settings[a], accuracy_name(by));
    const auto& y = stats(settings[b], accuracy_name(by));
    if (x.mean.has_value() != y.mean.has_value())
      return x.mean.has_value();
    if (!x.mean)
      return false;
    if (*x.mean != *y.mean)
      return *x.mean > *y.mean;
    const auto& xl = stats(settings[a], loss_name(by)).mean;
    const auto& yl = stats(settings[b], loss_name(by)).mean;
    return xl.value_or(0) < yl.value_or(0);
  });
  return order;
}

nlohmann::json settings_json(const std::vector<suite_setting>& settings,
                             const std::vector<suite_job_result>& results, ranking_figure by) {
  nlohmann::json list = nlohmann::json::array();
  int rank = 0;
  for (auto k : rank_settings(settings, by)) {
    const auto& s = settings[k];
    nlohmann::json names = nlohmann::json::array();
    for (auto i : s.jobs)
      names.push_back(results[i].name);
    const bool ranked = stats(s, accuracy_name(by)).mean.has_value();
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

std::string render_settings(const std::vector<suite_setting>& settings, ranking_figure by) {
  const bool validation = by == ranking_figure::validation;
  std::string out = fmt::format(
      "{:>4}  {:>7}  {:>17}  {:>17}  {:>17}  {:>8}  {}\n", "rank", "ok/jobs",
      validation ? "val accuracy" : "accuracy", validation ? "val loss" : "test loss",
      validation ? "test accuracy" : "train loss", "wall s", "setting (mean ± std over seeds)");
  int rank = 0;
  for (auto k : rank_settings(settings, by)) {
    const auto& s = settings[k];
    const auto& accuracy = stats(s, accuracy_name(by));
    const auto place = accuracy.mean ? std::to_string(++rank) : std::string("-");
    const auto third = validation ? as_percent(stats(s, "test_accuracy"))
                                  : as_number(stats(s, "final_train_loss"), 4);
    out += fmt::format("{:>4}  {:>7}  {:>17}  {:>17}  {:>17}  {:>8}  {}\n", place,
                       fmt::format("{}/{}", s.succeeded, s.jobs.size()), as_percent(accuracy),
                       as_number(stats(s, loss_name(by)), 4), third,
                       as_number(stats(s, "wall_s"), 1), s.overrides.dump());
  }
  return out;
}

}  // namespace troupe
