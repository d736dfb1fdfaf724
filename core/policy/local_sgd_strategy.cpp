#include "core/policy/local_sgd_strategy.hpp"

#include "core/policy/replica_steps.hpp"

namespace troupe {

local_sgd_strategy::local_sgd_strategy(int64_t ranks, const policy_schedule& schedule,
                                       const step_rules& rules, int64_t first_step)
    : ranks_(ranks),
      schedule_(schedule),
      rules_(rules),
      first_step_(first_step),
      next_average_(schedule.next_averaging_step(first_step)),
      round_(ranks, "weights"),
      reports_(ranks, first_step) {}

step_actions local_sgd_strategy::start() {
  return {act::compute{first_step_, all_ranks(ranks_)}};
}

step_actions local_sgd_strategy::on_weights(const arrival& a) {
  if (a.step != next_average_)
    return {act::violation{"worker " + std::to_string(a.rank) +
                           " sent weights to average after step " + std::to_string(a.step) +
                           ", expected after step " + std::to_string(next_average_)}};
  auto r = round_.add(a.rank, a);
  if (!r.violation.empty())
    return {act::violation{r.violation}};
  if (!r.complete)
    return {};
  next_average_ = schedule_.next_averaging_step(a.step + 1);
  int64_t rows = 0;
  for (const auto& p : *r.complete)
    rows += p.samples;
  act::combine average{act::combine::what::weights,
                       ranks_of(*r.complete),
                       {},
                       all_ranks(ranks_),
                       rules_.outcome_of(a.step)};
  for (const auto& p : *r.complete)
    average.weights.push_back(static_cast<double>(p.samples) / static_cast<double>(rows));
  return {std::move(average)};
}

step_actions local_sgd_strategy::on_report(const arrival& a) {
  return close_when_reported(reports_, a, schedule_, rules_);
}

}  // namespace troupe
