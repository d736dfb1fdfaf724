#include "core/policy/schedule_strategy.hpp"

#include "core/policy/replica_steps.hpp"

namespace troupe {

schedule_strategy::schedule_strategy(int64_t ranks, const policy_schedule& schedule,
                                     const step_rules& rules, bool driver_combines,
                                     int64_t first_step)
    : ranks_(ranks),
      first_step_(first_step),
      schedule_(schedule),
      sync_(ranks, schedule, rules, driver_combines, first_step),
      local_sgd_(ranks, schedule, rules, first_step) {}

step_strategy& schedule_strategy::phase_of(int64_t step) {
  if (schedule_.policy_at(step) == policy_kind::local_sgd)
    return local_sgd_;
  return sync_;
}

step_actions schedule_strategy::start() {
  return {act::compute{first_step_, all_ranks(ranks_)}};
}

step_actions schedule_strategy::on_gradient(const arrival& a) {
  return sync_.on_gradient(a);  // checks that a.step is a sync step
}

step_actions schedule_strategy::on_weights(const arrival& a) {
  return local_sgd_.on_weights(a);  // checks that a.step is an averaging step
}

step_actions schedule_strategy::on_report(const arrival& a) {
  return phase_of(a.step).on_report(a);
}

}  // namespace troupe
