#include "core/policy/sync_strategy.hpp"

#include "core/policy/replica_steps.hpp"

namespace troupe {

sync_strategy::sync_strategy(int64_t ranks, const policy_schedule& schedule,
                             const step_rules& rules, bool driver_combines, int64_t first_step)
    : ranks_(ranks),
      live_(all_ranks(ranks)),
      schedule_(schedule),
      rules_(rules),
      driver_combines_(driver_combines),
      first_step_(first_step),
      next_step_(schedule.next_step_under(policy_kind::sync, first_step)),
      round_(ranks, "gradient"),
      reports_(ranks, first_step) {}

step_actions sync_strategy::start() {
  return {act::compute{first_step_, all_ranks(ranks_)}};
}

step_actions sync_strategy::on_gradient(const arrival& a) {
  if (!driver_combines_)
    return unexpected("worker " + std::to_string(a.rank) + " sent its gradient to the driver");
  if (a.step != next_step_)
    return {act::violation{"worker " + std::to_string(a.rank) + " sent a gradient for step " +
                           std::to_string(a.step) + ", expected step " +
                           std::to_string(next_step_)}};
  auto r = round_.add(a.rank, a);
  if (!r.violation.empty())
    return {act::violation{r.violation}};
  if (!r.complete)
    return {};
  next_step_ = schedule_.next_step_under(policy_kind::sync, a.step + 1);
  step_actions out{act::combine{
      act::combine::what::gradients, ranks_of(*r.complete), {}, live_, rules_.outcome_of(a.step)}};
  append(out, close_step(a.step, std::move(*r.complete), schedule_, rules_));
  return out;
}

step_actions sync_strategy::on_report(const arrival& a) {
  if (driver_combines_)
    return {};  // the step completed when its gradients were combined
  return close_when_reported(reports_, a, schedule_, rules_);
}

step_actions sync_strategy::on_worker_left(int64_t rank) {
  if (!remove_rank(live_, rank))
    return {};
  if (live_.empty())
    return {act::cannot_continue{rank}};
  step_actions out;
  // Gradients meeting at the driver: the round in flight is dropped whole (the driver drops the
  // tensors it holds); without the lost rows its sum would be another batch's gradient.
  if (!driver_combines_)
    for (auto& [step, parts] : reports_.remove(rank))
      append(out, close_step(step, std::move(parts), schedule_, rules_));
  out.push_back(act::regroup{live_, false});
  return out;
}

step_actions sync_strategy::close_through(int64_t after_step) {
  step_actions out;
  // Steps complete at the combine when gradients meet at the driver: nothing is left open.
  if (!driver_combines_)
    for (auto& [step, parts] : reports_.close_through(after_step))
      append(out, close_step(step, std::move(parts), schedule_, rules_));
  return out;
}

step_actions sync_strategy::resume(const std::vector<int64_t>& live, int64_t after_step) {
  live_ = live;
  auto out = close_through(after_step);
  next_step_ = schedule_.next_step_under(policy_kind::sync, after_step + 1);
  round_.restart(live_);
  reports_.restart(live_, after_step + 1);
  if (after_step + 1 < rules_.total_steps())
    out.push_back(act::compute{after_step + 1, live_});
  return out;
}

}  // namespace troupe
