#include "core/train/validation_keeper.hpp"

#include "core/pipeline/stage_weights.hpp"
#include "core/train/saved_count.hpp"

#include <ATen/ATen.h>

namespace troupe {

metric_watch::metric_watch(monitor_metric metric, double min_delta)
    : metric_(metric), min_delta_(min_delta) {}

bool metric_watch::improves(double loss, double accuracy) {
  const bool by_loss = metric_ == monitor_metric::validation_loss;
  const double value = by_loss ? loss : accuracy;
  const bool better =
      !best_ || (by_loss ? value < *best_ - min_delta_ : value > *best_ + min_delta_);
  if (better) {
    best_ = value;
    since_best_ = 0;
  } else {
    ++since_best_;
  }
  return better;
}

validation_keeper::validation_keeper(std::optional<monitor_metric> keep_best,
                                     std::optional<early_stopping_config> early_stopping,
                                     std::vector<int64_t> stage_parameters)
    : stage_parameters_(std::move(stage_parameters)) {
  if (keep_best)
    keep_.emplace(*keep_best, 0.0);
  if (early_stopping) {
    stop_.emplace(early_stopping->metric, early_stopping->min_delta);
    patience_ = early_stopping->patience;
  }
}

void validation_keeper::on_evaluation(int64_t step, double loss, double accuracy) {
  if (!wants_snapshots() || stop_decided_)
    return;
  auto& p = pending_[step];
  p.best = keep_ && keep_->improves(loss, accuracy);
  if (*p.best)
    p.value = *keep_->best();
  if (stop_) {
    stop_->improves(loss, accuracy);
    p.stop = stop_->since_best() >= patience_;
    stop_decided_ = p.stop;
  }
  settle(step);
}

void validation_keeper::on_snapshot(int64_t step, int64_t part, int64_t parts, at::Tensor weights) {
  if (!wants_snapshots())
    return;
  auto& p = pending_[step];
  if (p.parts.empty())
    p.parts.resize(static_cast<std::size_t>(parts));
  p.parts.at(static_cast<std::size_t>(part)) = std::move(weights);
  ++p.received;
  settle(step);
}

// Acts on `step` once its verdict and every part of its weights are in.
void validation_keeper::settle(int64_t step) {
  auto it = pending_.find(step);
  auto& p = it->second;
  if (!p.best || p.parts.empty() || p.received < static_cast<int64_t>(p.parts.size()))
    return;
  const auto weights = model_weights_of_stages(p.parts, stage_parameters_);
  if (*p.best) {
    best_step_ = step;
    best_value_ = p.value;
    best_weights_ = weights;
  }
  if (p.stop) {
    stopped_at_ = step;
    stop_weights_ = weights;
  }
  pending_.erase(it);
}

nlohmann::json metric_watch::save() const {
  return {{"best", best_ ? nlohmann::json(*best_) : nlohmann::json()}, {"since_best", since_best_}};
}

void metric_watch::restore(const nlohmann::json& saved) {
  const auto& best = saved.at("best");
  best_ = best.is_null() ? std::nullopt : std::optional<double>(best.get<double>());
  since_best_ = saved_count(saved.at("since_best"), "since_best");
}

namespace {

nlohmann::json save_watch(const std::optional<metric_watch>& w) {
  return w ? w->save() : nlohmann::json();
}

void restore_watch(std::optional<metric_watch>& w, const nlohmann::json& saved) {
  if (w && !saved.is_null())
    w->restore(saved);
}

}  // namespace

nlohmann::json validation_keeper::save() const {
  return {{"keep", save_watch(keep_)},
          {"stop", save_watch(stop_)},
          {"best_step", best_step_ ? nlohmann::json(*best_step_) : nlohmann::json()}};
}

void validation_keeper::restore(const nlohmann::json& saved, at::Tensor best_weights) {
  restore_watch(keep_, saved.at("keep"));
  restore_watch(stop_, saved.at("stop"));
  const auto& step = saved.at("best_step");
  if (!step.is_null() && best_weights.defined()) {
    best_step_ = saved_count(step, "best_step");
    best_value_ = keep_ ? keep_->best() : std::nullopt;  // no evaluation pends at a checkpoint
    best_weights_ = std::move(best_weights);
  }
}

}  // namespace troupe
