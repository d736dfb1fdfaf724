#include "core/policy/step_watch.hpp"

#include <algorithm>
#include <limits>

namespace troupe {
namespace {

constexpr int64_t gone = std::numeric_limits<int64_t>::max();

}  // namespace

step_watch::step_watch(int64_t workers, double fixed_s, double startup_s, double floor_s)
    : fixed_s_(fixed_s),
      startup_s_(startup_s),
      floor_s_(floor_s),
      last_reported_(static_cast<std::size_t>(std::max<int64_t>(workers, 0)), -1) {}

void step_watch::start(double now) {
  since_ = now;
}

void step_watch::heard(int64_t worker, int64_t step) {
  if (worker >= 0 && worker < static_cast<int64_t>(last_reported_.size())) {
    auto& last = last_reported_[static_cast<std::size_t>(worker)];
    last = std::max(last, step);
  }
}

void step_watch::completed(int64_t step, double now) {
  if (since_ && any_completed_)
    longest_gap_ = std::max(longest_gap_, now - *since_);
  any_completed_ = true;
  since_ = now;
  last_step_ = std::max(last_step_, step);
}

void step_watch::forget(int64_t worker) {
  if (worker >= 0 && worker < static_cast<int64_t>(last_reported_.size()))
    last_reported_[static_cast<std::size_t>(worker)] = gone;
}

void step_watch::regrouped(const std::vector<int64_t>& workers, int64_t step, double now) {
  since_ = now;
  for (auto w : workers)
    if (w >= 0 && w < static_cast<int64_t>(last_reported_.size()))
      last_reported_[static_cast<std::size_t>(w)] = step;
}

double step_watch::limit_s() const {
  if (fixed_s_ > 0)
    return fixed_s_;
  if (!any_completed_)
    return startup_s_;
  return std::max(floor_s_, gap_factor * longest_gap_);
}

std::optional<step_stall> step_watch::overdue(double now) const {
  if (!since_ || now - *since_ <= limit_s())
    return std::nullopt;
  step_stall stall{now - *since_, limit_s(), any_completed_ ? last_step_ : -1, {}, -1};
  if (last_reported_.empty())
    return stall;
  stall.behind_step = *std::min_element(last_reported_.begin(), last_reported_.end());
  if (stall.behind_step == gone)
    return stall;  // nobody left to wait for
  for (std::size_t w = 0; w < last_reported_.size(); ++w)
    if (last_reported_[w] == stall.behind_step)
      stall.behind.push_back(static_cast<int64_t>(w));
  return stall;
}

}  // namespace troupe
