#include "core/policy/report_barrier.hpp"

namespace troupe {

report_barrier::report_barrier(int64_t ranks, int64_t first_step)
    : ranks_(ranks), completed_through_(first_step - 1) {}

report_barrier::result report_barrier::add(const arrival& a) {
  result r;
  const auto who = "worker " + std::to_string(a.rank);
  if (a.rank < 0 || a.rank >= ranks_) {
    r.violation = who + " is unknown (there are " + std::to_string(ranks_) + ")";
    return r;
  }
  if (a.step <= completed_through_) {
    r.violation = who + " reported step " + std::to_string(a.step) + ", which is complete";
    return r;
  }
  auto& step = steps_[a.step];
  if (!step.emplace(a.rank, step_part{a.rank, a.loss, a.samples}).second) {
    r.violation = who + " reported step " + std::to_string(a.step) + " twice";
    return r;
  }
  if (static_cast<int64_t>(step.size()) < ranks_)
    return r;
  std::vector<step_part> parts;
  for (const auto& [rank, part] : step)  // a std::map: in rank order
    parts.push_back(part);
  steps_.erase(a.step);
  completed_through_ = a.step;
  r.complete = std::move(parts);
  return r;
}

}  // namespace troupe
