#include "core/policy/contribution_round.hpp"

namespace troupe {

contribution_round::contribution_round(int64_t ranks)
    : barrier_(static_cast<std::size_t>(ranks)), parts_(static_cast<std::size_t>(ranks)) {}

contribution_round::result contribution_round::add(const arrival& a) {
  result r;
  if (a.rank < 0) {
    r.violation = "worker " + std::to_string(a.rank) + " is unknown";
    return r;
  }
  const auto rank = static_cast<std::size_t>(a.rank);
  // Rounds are counted by the barrier itself; the caller validated which step this is.
  const auto d = barrier_.on_gradient(rank, barrier_.step());
  if (d.kind == verdict::rejected) {
    r.violation = d.reason;
    return r;
  }
  parts_[rank] = {a.rank, a.loss, a.samples};
  if (d.kind != verdict::complete)
    return r;
  std::vector<step_part> parts;
  for (auto c : d.contributors)
    parts.push_back(parts_[c]);
  r.complete = std::move(parts);
  return r;
}

}  // namespace troupe
