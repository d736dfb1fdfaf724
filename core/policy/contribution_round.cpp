#include "core/policy/contribution_round.hpp"

namespace troupe {

contribution_round::contribution_round(int64_t slots, std::string what)
    : barrier_(static_cast<std::size_t>(slots)),
      what_(std::move(what)),
      parts_(static_cast<std::size_t>(slots)) {}

contribution_round::result contribution_round::add(int64_t slot, const arrival& a) {
  result r;
  const auto who = "worker " + std::to_string(a.rank);
  const auto index = static_cast<std::size_t>(slot);
  if (slot < 0 || index >= parts_.size())
    r.violation = who + " is unknown";
  else if (!barrier_.is_live(index))
    r.violation = who + " has left and cannot contribute";
  else if (barrier_.has_arrived(index))
    r.violation = who + " sent its " + what_ + " for step " + std::to_string(a.step) + " twice";
  if (!r.violation.empty())
    return r;
  // Rounds are counted by the barrier itself; the caller validated which step this is.
  const auto d = barrier_.on_gradient(index, barrier_.step());
  parts_[index] = {a.rank, a.loss, a.samples};
  return complete_with(d);
}

contribution_round::result contribution_round::complete_with(const policy_decision& d) {
  result r;
  if (d.kind != verdict::complete)
    return r;
  std::vector<step_part> parts;
  for (auto c : d.contributors)
    parts.push_back(parts_[c]);
  r.complete = std::move(parts);
  return r;
}

contribution_round::result contribution_round::remove(int64_t slot) {
  const auto index = static_cast<std::size_t>(slot);
  if (slot < 0 || index >= parts_.size() || !barrier_.is_live(index))
    return {};
  return complete_with(barrier_.on_worker_left(index));
}

void contribution_round::restart(const std::vector<int64_t>& live) {
  barrier_ = sync_policy(parts_.size(), barrier_.step());
  std::vector<bool> keep(parts_.size(), false);
  for (auto s : live)
    keep.at(static_cast<std::size_t>(s)) = true;
  for (std::size_t i = 0; i < keep.size(); ++i)
    if (!keep[i])
      barrier_.on_worker_left(i);
}

}  // namespace troupe
