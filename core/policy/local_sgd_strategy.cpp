#include "core/policy/local_sgd_strategy.hpp"

#include "core/policy/replica_steps.hpp"

#include <algorithm>
#include <iterator>
#include <utility>
#include <variant>

namespace troupe {

local_sgd_strategy::local_sgd_strategy(int64_t ranks, const policy_schedule& schedule,
                                       const step_rules& rules, int64_t first_step)
    : ranks_(ranks),
      live_(all_ranks(ranks)),
      schedule_(schedule),
      rules_(rules),
      first_step_(first_step),
      next_average_(schedule.next_averaging_step(first_step)),
      averaged_through_(static_cast<std::size_t>(ranks), first_step - 1),
      unaveraged_(static_cast<std::size_t>(ranks)),
      averaged_unreported_(static_cast<std::size_t>(ranks)),
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
  for (const auto& p : parts) {
    average.weights.push_back(static_cast<double>(p.samples) / static_cast<double>(rows));
    const auto r = static_cast<std::size_t>(p.worker);
    averaged_through_[r] = step;
    // A worker sends its reports before it hands its weights in: every one before `step` is
    // in. `step`'s own comes after the average, or before it where the replica goes on while
    // a fragment's average is on its way (fragment_overlap), and so may later ones.
    auto& pending = unaveraged_[r];
    const auto later = std::find_if(pending.begin(), pending.end(),
                                    [step](const auto& entry) { return entry.first > step; });
    const bool reported = later != pending.begin() && std::prev(later)->first == step;
    pending.erase(pending.begin(), later);
    if (!reported)
      averaged_unreported_[r].emplace(step, p.samples);
  }
  return {std::move(average)};
}

step_actions local_sgd_strategy::on_report(const arrival& a) {
  auto out = close_when_reported(reports_, a, schedule_, rules_);
  if (!out.empty() && std::holds_alternative<act::violation>(out.front()))
    return out;  // refused: an unknown rank, a second report
  const auto r = static_cast<std::size_t>(a.rank);
  if (a.step > averaged_through_[r])
    unaveraged_[r].emplace_back(a.step, a.samples);
  else if (averaged_unreported_[r] && averaged_unreported_[r]->first == a.step)
    averaged_unreported_[r].reset();
  return out;
}

step_actions local_sgd_strategy::on_worker_left(int64_t rank) {
  if (!remove_rank(live_, rank))
    return {};
  if (live_.empty())
    return {act::cannot_continue{rank}};
  step_actions out;
  const auto lost = static_cast<std::size_t>(rank);
  act::recount recount{rank, averaged_through_[lost], {}};
  // Rows it trained since its last average never reach the weights: those of completed steps
  // were counted and are taken off; those of steps still open leave the steps (which may never
  // complete, when no one is left to report them).
  for (const auto& [step, rows] : std::exchange(unaveraged_[lost], {}))
    if (step <= reports_.completed_through())
      recount.rows.emplace_back(step, -rows);
  reports_.drop_parts(rank, averaged_through_[lost]);
  if (const auto averaged = std::exchange(averaged_unreported_[lost], std::nullopt))
    recount.rows.push_back(*averaged);
  out.push_back(std::move(recount));
  if (auto r = round_.remove(rank); r.complete)
    append(out, average(next_average_, *r.complete));
  for (auto& [step, parts] : reports_.remove(rank))
    append(out, close_step(step, std::move(parts), schedule_, rules_));
  out.push_back(act::regroup{live_, true});
  return out;
}

step_actions local_sgd_strategy::close_through(int64_t after_step) {
  step_actions out;
  for (auto& [step, parts] : reports_.close_through(after_step))
    append(out, close_step(step, std::move(parts), schedule_, rules_));
  return out;
}

step_actions local_sgd_strategy::resume(const std::vector<int64_t>& live, int64_t after_step) {
  live_ = live;
  auto out = close_through(after_step);
  next_average_ = schedule_.next_averaging_step(after_step + 1);
  round_.restart(live_);
  reports_.restart(live_, after_step + 1);
  if (after_step + 1 < rules_.total_steps())
    out.push_back(act::compute{after_step + 1, live_});
  return out;
}

}  // namespace troupe
