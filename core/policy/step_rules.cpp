#include "core/policy/step_rules.hpp"

namespace troupe {

step_rules::step_rules(int64_t total_steps, int64_t steps_per_epoch, int64_t eval_interval)
    : total_steps_(total_steps), steps_per_epoch_(steps_per_epoch), eval_interval_(eval_interval) {}

int64_t step_rules::epoch_of(int64_t step) const {
  return steps_per_epoch_ > 0 ? step / steps_per_epoch_ : 0;
}

bool step_rules::evaluates_after(int64_t step) const {
  if (is_last(step))
    return true;
  const int64_t every = eval_interval_ > 0 ? eval_interval_ : steps_per_epoch_;
  return every > 0 && (step + 1) % every == 0;
}

step_outcome step_rules::outcome_of(int64_t step) const {
  return {step, evaluates_after(step), is_last(step)};
}

}  // namespace troupe
