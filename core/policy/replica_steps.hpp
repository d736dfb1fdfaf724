// What the data-parallel strategies (sync, local SGD and schedules of both) share: the ranks,
// and how a step is closed.
#pragma once

#include "core/policy/policy_schedule.hpp"
#include "core/policy/report_barrier.hpp"
#include "core/policy/step_strategy.hpp"

#include <cstdint>
#include <vector>

namespace troupe {

/// 0, 1, ..., n - 1.
std::vector<int64_t> all_ranks(int64_t n);

/// The ranks of `parts`, in their order.
std::vector<int64_t> ranks_of(const std::vector<step_part>& parts);

/// The actions that close `step`: its completion (naming the next step's policy at a phase
/// boundary) and, after the last step, the end of training.
step_actions close_step(int64_t step, std::vector<step_part> parts, const policy_schedule& schedule,
                        const step_rules& rules);

/// Counts `a` in `reports`; closes its step once every rank has reported it.
step_actions close_when_reported(report_barrier& reports, const arrival& a,
                                 const policy_schedule& schedule, const step_rules& rules);

/// Appends `more` to `to`.
void append(step_actions& to, step_actions more);

/// Takes `rank` out of the ascending `live`; false when it was not in it.
bool remove_rank(std::vector<int64_t>& live, int64_t rank);

}  // namespace troupe
