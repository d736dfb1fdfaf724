#include "core/train/validation_keeper.hpp"

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
                                     std::optional<early_stopping_config> early_stopping) {
  if (keep_best)
    keep_.emplace(*keep_best, 0.0);
  if (early_stopping) {
    stop_.emplace(early_stopping->metric, early_stopping->min_delta);
    patience_ = early_stopping->patience;
  }
}

std::optional<double> validation_keeper::best_value() const {
  return keep_ ? keep_->best() : std::nullopt;
}

void validation_keeper::on_evaluation(int64_t step, double loss, double accuracy) {
  if (!wants_snapshots() || stop_decided_)
    return;
  auto& p = pending_[step];
  p.best = keep_ && keep_->improves(loss, accuracy);
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
  const auto weights = p.parts.size() == 1 ? p.parts.front() : at::cat(p.parts);
  if (*p.best) {
    best_step_ = step;
    best_weights_ = weights;
  }
  if (p.stop) {
    stopped_at_ = step;
    stop_weights_ = weights;
  }
  pending_.erase(it);
}

}  // namespace troupe
