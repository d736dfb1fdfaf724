#include "core/policy/report_barrier.hpp"

#include <algorithm>

namespace troupe {

report_barrier::report_barrier(int64_t ranks, int64_t first_step)
    : ranks_(ranks), completed_through_(first_step - 1) {
  for (int64_t r = 0; r < ranks; ++r)
    live_.insert(r);
}

bool report_barrier::complete(const std::map<int64_t, step_part>& reported) const {
  for (auto r : live_)
    if (reported.count(r) == 0)
      return false;
  return true;
}

std::vector<step_part> report_barrier::parts_of(int64_t step) {
  std::vector<step_part> parts;
  auto it = steps_.find(step);
  if (it != steps_.end())
    for (const auto& [rank, part] : it->second)  // a std::map: in rank order
      parts.push_back(part);
  steps_.erase(step);
  completed_through_ = step;
  return parts;
}

report_barrier::result report_barrier::add(const arrival& a) {
  result r;
  const auto who = "worker " + std::to_string(a.rank);
  if (a.rank < 0 || a.rank >= ranks_) {
    r.violation = who + " is unknown (there are " + std::to_string(ranks_) + ")";
    return r;
  }
  if (live_.count(a.rank) == 0) {
    r.violation = who + " reported step " + std::to_string(a.step) + " after it left";
    return r;
  }
  if (a.step <= completed_through_) {
    r.violation = who + " reported step " + std::to_string(a.step) + ", which is complete";
    return r;
  }
  auto& step = steps_[a.step];
  if (!step.emplace(a.rank, step_part{a.rank, a.loss, a.samples, a.span_s, a.sum_rows}).second) {
    r.violation = who + " reported step " + std::to_string(a.step) + " twice";
    return r;
  }
  if (!complete(step))
    return r;
  r.complete = parts_of(a.step);
  return r;
}

std::vector<report_barrier::closed> report_barrier::remove(int64_t rank) {
  live_.erase(rank);
  std::vector<closed> out;
  if (live_.empty())
    return out;
  // Steps complete in order: the open ones from the lowest, while every survivor reported them.
  while (!steps_.empty() && complete(steps_.begin()->second)) {
    const auto step = steps_.begin()->first;
    out.emplace_back(step, parts_of(step));
  }
  return out;
}

void report_barrier::drop_parts(int64_t rank, int64_t after) {
  for (auto it = steps_.upper_bound(after); it != steps_.end(); ++it)
    it->second.erase(rank);
}

std::vector<report_barrier::closed> report_barrier::close_through(int64_t step) {
  std::vector<closed> out;
  while (!steps_.empty() && steps_.begin()->first <= step) {
    const auto s = steps_.begin()->first;
    out.emplace_back(s, parts_of(s));
  }
  completed_through_ = std::max(completed_through_, step);
  return out;
}

void report_barrier::restart(const std::vector<int64_t>& live, int64_t first_step) {
  live_ = std::set<int64_t>(live.begin(), live.end());
  steps_.clear();
  completed_through_ = first_step - 1;
}

}  // namespace troupe
