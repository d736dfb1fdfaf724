#include "core/policy/replica_steps.hpp"

#include <algorithm>

namespace troupe {

std::vector<int64_t> all_ranks(int64_t n) {
  std::vector<int64_t> ranks;
  for (int64_t r = 0; r < n; ++r)
    ranks.push_back(r);
  return ranks;
}

std::vector<int64_t> ranks_of(const std::vector<step_part>& parts) {
  std::vector<int64_t> ranks;
  for (const auto& p : parts)
    ranks.push_back(p.worker);
  return ranks;
}

step_actions close_step(int64_t step, std::vector<step_part> parts, const policy_schedule& schedule,
                        const step_rules& rules) {
  act::complete done{step, std::move(parts), std::nullopt};
  if (schedule.switches_after(step))
    done.switches_to = schedule.policy_at(step + 1);
  step_actions out{std::move(done)};
  if (rules.is_last(step))
    out.push_back(act::training_done{});
  return out;
}

step_actions close_when_reported(report_barrier& reports, const arrival& a,
                                 const policy_schedule& schedule, const step_rules& rules) {
  auto r = reports.add(a);
  if (!r.violation.empty())
    return {act::violation{r.violation}};
  if (!r.complete)
    return {};
  return close_step(a.step, std::move(*r.complete), schedule, rules);
}

bool remove_rank(std::vector<int64_t>& live, int64_t rank) {
  const auto it = std::find(live.begin(), live.end(), rank);
  if (it == live.end())
    return false;
  live.erase(it);
  return true;
}

void append(step_actions& to, step_actions more) {
  for (auto& a : more)
    to.push_back(std::move(a));
}

}  // namespace troupe
