#include "core/policy/local_sgd_strategy.hpp"

#include "core/policy/replica_steps.hpp"

namespace troupe {

local_sgd_strategy::local_sgd_strategy(int64_t ranks, const policy_schedule& schedule,
                                       const step_rules& rules, int64_t first_step)
    : ranks_(ranks),
      live_(all_ranks(ranks)),
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
  return average(a.step, *r.complete);
}

// The average of the weights handed in after `step`, weighted by each one's rows.
step_actions local_sgd_strategy::average(int64_t step, const std::vector<step_part>& parts) {
  next_average_ = schedule_.next_averaging_step(step + 1);
  int64_t rows = 0;
  for (const auto& p : parts)
    rows += p.samples;
  act::combine average{
      act::combine::what::weights, ranks_of(parts), {}, live_, rules_.outcome_of(step)};
  for (const auto& p : parts)
    average.weights.push_back(static_cast<double>(p.samples) / static_cast<double>(rows));
  return {std::move(average)};
}

step_actions local_sgd_strategy::on_report(const arrival& a) {
  return close_when_reported(reports_, a, schedule_, rules_);
}

step_actions local_sgd_strategy::on_worker_left(int64_t rank) {
  if (!remove_rank(live_, rank))
    return {};
  if (live_.empty())
    return {act::cannot_continue{rank}};
  step_actions out;
  if (auto r = round_.remove(rank); r.complete)
    append(out, average(next_average_, *r.complete));
  for (auto& [step, parts] : reports_.remove(rank))
    append(out, close_step(step, std::move(parts), schedule_, rules_));
  out.push_back(act::regroup{live_, true});
  return out;
}

step_actions local_sgd_strategy::resume(const std::vector<int64_t>& live, int64_t after_step) {
  live_ = live;
  step_actions out;
  for (auto& [step, parts] : reports_.close_through(after_step))
    append(out, close_step(step, std::move(parts), schedule_, rules_));
  next_average_ = schedule_.next_averaging_step(after_step + 1);
  round_.restart(live_);
  reports_.restart(live_, after_step + 1);
  if (after_step + 1 < rules_.total_steps())
    out.push_back(act::compute{after_step + 1, live_});
  return out;
}

}  // namespace troupe
