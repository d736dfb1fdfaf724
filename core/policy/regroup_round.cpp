#include "core/policy/regroup_round.hpp"

#include <algorithm>

namespace troupe {

regroup_round::regroup_round(int64_t epoch, std::vector<int64_t> live, int64_t max_lag)
    : epoch_(epoch), live_(std::move(live)), max_lag_(max_lag) {
  std::sort(live_.begin(), live_.end());
}

regroup_round::result regroup_round::on_answer(int64_t rank, int64_t applied, bool has_state) {
  result r;
  const auto who = "worker " + std::to_string(rank);
  if (!std::binary_search(live_.begin(), live_.end(), rank))
    r.violation = who + " answered the regroup of epoch " + std::to_string(epoch_) +
                  ", which it is not part of";
  else if (answers_.count(rank) > 0)
    r.violation = who + " answered the regroup of epoch " + std::to_string(epoch_) + " twice";
  if (!r.violation.empty())
    return r;
  answers_[rank] = {applied, has_state};
  if (answers_.size() < live_.size())
    return r;
  plan_ = decide(r.violation);
  r.plan = plan_;
  return r;
}

std::optional<regroup_plan> regroup_round::decide(std::string& violation) const {
  regroup_plan p;
  int64_t lowest = 0;
  bool any = false;
  for (const auto& [rank, a] : answers_) {
    if (!a.has_state)
      continue;
    if (!any || a.applied > p.target) {
      p.target = a.applied;
      p.donor = rank;
    }
    lowest = any ? std::min(lowest, a.applied) : a.applied;
    any = true;
  }
  if (!any) {
    violation = "no live worker holds the run's state (every node that trained was lost)";
    return std::nullopt;
  }
  if (p.target - lowest > max_lag_) {
    violation = "the live workers are " + std::to_string(p.target - lowest) +
                " steps apart (last applied: " + std::to_string(lowest) + " to " +
                std::to_string(p.target) + "), at most " + std::to_string(max_lag_) +
                " can be made good";
    return std::nullopt;
  }
  for (const auto& [rank, a] : answers_) {
    if (a.has_state && a.applied == p.target && rank < p.donor)
      p.donor = rank;  // the lowest rank at the target, whatever order the map gave
    if (!a.has_state || a.applied < p.target)
      p.recipients.push_back(rank);
  }
  return p;
}

regroup_round::result regroup_round::on_taken(int64_t rank, int64_t step) {
  result r;
  const auto who = "worker " + std::to_string(rank);
  if (!plan_ || std::find(plan_->recipients.begin(), plan_->recipients.end(), rank) ==
                    plan_->recipients.end())
    r.violation = who + " took a state it was not sent";
  else if (step != plan_->target)
    r.violation = who + " took the state after step " + std::to_string(step) + ", sent was " +
                  std::to_string(plan_->target);
  else if (!taken_.insert(rank).second)
    r.violation = who + " took the state twice";
  r.plan = plan_;
  return r;
}

bool regroup_round::done() const {
  return plan_ && taken_.size() == plan_->recipients.size();
}

}  // namespace troupe
