#include "core/train/failure_log.hpp"

#include "core/train/saved_count.hpp"

#include <algorithm>
#include <cmath>

namespace troupe {

std::optional<double> percentile(std::vector<double> values, double p) {
  if (values.empty())
    return std::nullopt;
  std::sort(values.begin(), values.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(rank));
  const auto above = std::min(below + 1, values.size() - 1);
  const double f = rank - static_cast<double>(below);
  return values[below] + f * (values[above] - values[below]);
}

void failure_log::lost(failure_entry e) {
  failures_.push_back(std::move(e));
  recover_from_ = std::numeric_limits<int64_t>::max();  // nothing recovers before a regroup
}

void failure_log::regrouped(int64_t first_step) {
  recover_from_ = first_step;
}

void failure_log::completed(int64_t step, double t) {
  if (step < recover_from_)
    return;
  for (auto& f : failures_)
    if (!f.recovery_s)
      f.recovery_s = std::max(0.0, t - (f.t - f.detection_s));
}

namespace {

nlohmann::json optional_json(const std::optional<double>& x) {
  return x ? nlohmann::json(*x) : nlohmann::json();
}

nlohmann::json to_json(const failure_entry& f) {
  return {{"node", f.node},
          {"workers", f.workers},
          {"reason", f.reason},
          {"step", f.step},
          {"t", f.t},
          {"detection_s", f.detection_s},
          {"recovery_s", optional_json(f.recovery_s)}};
}

nlohmann::json to_json(const join_entry& j) {
  return {{"node", j.node}, {"workers", j.workers}, {"step", j.step}, {"t", j.t}};
}

}  // namespace

nlohmann::json failure_log::summary() const {
  nlohmann::json out = nlohmann::json::object();
  if (!failures_.empty()) {
    std::vector<double> detection, recovery;
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : failures_) {
      list.push_back(to_json(f));
      detection.push_back(f.detection_s);
      if (f.recovery_s)
        recovery.push_back(*f.recovery_s);
    }
    out["failures"] = list;
    out["failure_times"] = {{"count", failures_.size()},
                            {"recovered", recovery.size()},
                            {"detection_p50_s", optional_json(percentile(detection, 50))},
                            {"detection_p99_s", optional_json(percentile(detection, 99))},
                            {"recovery_p50_s", optional_json(percentile(recovery, 50))},
                            {"recovery_p99_s", optional_json(percentile(recovery, 99))}};
  }
  if (!joins_.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& j : joins_)
      list.push_back(to_json(j));
    out["joins"] = list;
  }
  return out;
}

nlohmann::json failure_log::save() const {
  nlohmann::json failures = nlohmann::json::array();
  for (const auto& f : failures_)
    failures.push_back(to_json(f));
  nlohmann::json joins = nlohmann::json::array();
  for (const auto& j : joins_)
    joins.push_back(to_json(j));
  return {{"failures", failures}, {"joins", joins}};
}

void failure_log::restore(const nlohmann::json& saved) {
  failures_.clear();
  joins_.clear();
  for (const auto& f : saved.at("failures")) {
    failure_entry e{f.at("node").get<std::string>(),
                    saved_counts(f.at("workers"), "failures/workers"),
                    f.at("reason").get<std::string>(),
                    saved_count(f.at("step"), "failures/step"),
                    f.at("t").get<double>(),
                    f.at("detection_s").get<double>(),
                    std::nullopt};
    if (!f.at("recovery_s").is_null())
      e.recovery_s = f.at("recovery_s").get<double>();
    failures_.push_back(std::move(e));
  }
  for (const auto& j : saved.at("joins"))
    joins_.push_back({j.at("node").get<std::string>(),
                      saved_counts(j.at("workers"), "joins/workers"),
                      saved_count(j.at("step"), "joins/step"), j.at("t").get<double>()});
}

}  // namespace troupe
