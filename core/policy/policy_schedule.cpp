#include "core/policy/policy_schedule.hpp"

#include <c10/util/Exception.h>

#include <algorithm>

namespace troupe {

policy_schedule::policy_schedule(const parallelism_config& p, const step_rules& rules)
    : rules_(rules) {
  const int64_t total_steps = rules.total_steps();
  std::vector<phase_config> configs = p.phases;
  if (p.policy != policy_kind::schedule) {
    phase_config whole;
    whole.policy = p.policy;
    whole.period = p.period;
    whole.average_momenta = p.average_momenta;
    configs = {whole};
    if (p.policy == policy_kind::local_sgd) {
      fragments_ = std::max<int64_t>(1, p.fragments);
      overlap_ = fragments_ > 1 ? std::max<int64_t>(0, p.fragment_overlap) : 0;
    }
  }
  int64_t first = 0;
  for (std::size_t i = 0; i < configs.size() && first < total_steps; ++i) {
    const bool last = i + 1 == configs.size();
    const int64_t end = last ? total_steps : std::min(total_steps, first + configs[i].steps);
    phases_.push_back({first, end, configs[i]});
    first = end;
  }
  if (!phases_.empty())
    phases_.back().end_step = total_steps;  // the last phase to start runs to the end
  TORCH_CHECK(!phases_.empty(), "policy_schedule: a run needs at least one step");
}

const policy_schedule::phase& policy_schedule::at(int64_t step) const {
  for (const auto& ph : phases_)
    if (step < ph.end_step)
      return ph;
  return phases_.back();
}

bool policy_schedule::averages_whole_after(int64_t step) const {
  const auto& ph = at(step);
  if (ph.config.policy != policy_kind::local_sgd)
    return false;
  return (fragments_ == 1 && (step - ph.first_step + 1) % ph.config.period == 0) ||
         step + 1 == ph.end_step || rules_.evaluates_after(step);
}

int64_t policy_schedule::fragment_after(int64_t step) const {
  if (fragments_ == 1 || averages_whole_after(step))
    return -1;
  const auto& ph = at(step);
  const int64_t period = ph.config.period;
  const int64_t into = step - ph.first_step + 1;
  for (int64_t f = 0; f < fragments_; ++f)
    if ((into + f * period / fragments_) % period == 0)
      return f;
  return -1;
}

int64_t policy_schedule::merge_before(int64_t step) const {
  return std::min(step + overlap_, next_averaging_step(step + 1));
}

bool policy_schedule::fragment_in_flight(int64_t step) const {
  // One fragment is in flight at a time (overlap <= period / fragments): the one handed in
  // within the last `overlap` steps, if any.
  for (int64_t s = std::max<int64_t>(0, step - overlap_ + 1); s <= step; ++s)
    if (fragment_after(s) >= 0 && merge_before(s) > step)
      return true;
  return false;
}

bool policy_schedule::averages_after(int64_t step) const {
  return averages_whole_after(step) || fragment_after(step) >= 0;
}

bool policy_schedule::averages_momenta_after(int64_t step) const {
  if (!averages_after(step))
    return false;
  const auto& ph = at(step);
  return ph.config.average_momenta ||
         (switches_after(step) && policy_at(step + 1) == policy_kind::sync);
}

int64_t policy_schedule::next_averaging_step(int64_t from) const {
  for (int64_t s = from; s < rules_.total_steps(); ++s)
    if (averages_after(s))
      return s;
  return rules_.total_steps();
}

int64_t policy_schedule::next_step_under(policy_kind policy, int64_t from) const {
  for (const auto& ph : phases_)
    if (ph.config.policy == policy && ph.end_step > from)
      return std::max(from, ph.first_step);
  return rules_.total_steps();
}

bool policy_schedule::switches_after(int64_t step) const {
  const auto& ph = at(step);
  return step + 1 == ph.end_step && step + 1 < rules_.total_steps();
}

}  // namespace troupe
