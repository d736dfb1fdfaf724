#include "core/policy/async_strategy.hpp"

#include <algorithm>

namespace troupe {

async_strategy::async_strategy(int64_t ranks, std::optional<int64_t> max_staleness, bool lr_scaling,
                               const step_rules& rules, int64_t first_step)
    : ranks_(ranks),
      lr_scaling_(lr_scaling),
      rules_(rules),
      policy_(static_cast<std::size_t>(ranks), max_staleness),
      waiting_since_(static_cast<std::size_t>(ranks), 0.0),
      handed_out_(static_cast<std::size_t>(ranks), false),
      starved_(static_cast<std::size_t>(ranks), false),
      issued_(first_step * ranks) {
  policy_.resume_at(first_step * ranks);
}

step_actions async_strategy::start() {
  step_actions out;
  for (int64_t r = 0; r < ranks_; ++r)
    pull(r, 0.0, out);
  return out;
}

// Hands `rank` the current weights and the step to compute on them, unless every push the run
// needs is already owed, in which case the worker is done.
void async_strategy::hand_out(int64_t rank, step_actions& out) {
  if (issued_ >= total_pushes()) {
    starved_[static_cast<std::size_t>(rank)] = true;
    return;
  }
  starved_[static_cast<std::size_t>(rank)] = false;
  ++issued_;
  handed_out_[static_cast<std::size_t>(rank)] = true;
  out.push_back(
      act::hand_out{rank, policy_.version(), policy_.clock(static_cast<std::size_t>(rank))});
}

// Lets `rank` start its next step now, or records that the bound holds it back.
void async_strategy::pull(int64_t rank, double now_s, step_actions& out) {
  const auto d = policy_.on_pull(static_cast<std::size_t>(rank));
  if (d.what == async_decision::kind::rejected)
    out.push_back(act::violation{d.reason});
  else if (d.what == async_decision::kind::wait)
    waiting_since_[static_cast<std::size_t>(rank)] = now_s;
  else
    hand_out(rank, out);
}

void async_strategy::release(const std::vector<std::size_t>& ranks, double now_s,
                             step_actions& out) {
  for (auto r : ranks) {
    out.push_back(
        act::waited{static_cast<int64_t>(r), policy_.clock(r), now_s - waiting_since_[r]});
    hand_out(static_cast<int64_t>(r), out);
  }
}

step_actions async_strategy::on_push(const arrival& a, double now_s) {
  last_now_ = now_s;
  if (a.rank < 0 || a.rank >= ranks_)
    return {act::violation{"worker " + std::to_string(a.rank) + " is unknown"}};
  // The policy counts pulls, which outnumber the weights handed out once every push of the run
  // is owed: a push is only due from a worker that was given weights.
  if (!handed_out_[static_cast<std::size_t>(a.rank)])
    return {act::violation{"worker " + std::to_string(a.rank) + " pushed a gradient for step " +
                           std::to_string(a.step) + " without weights to compute it on"}};
  handed_out_[static_cast<std::size_t>(a.rank)] = false;
  const auto d = policy_.on_push(static_cast<std::size_t>(a.rank));
  if (d.what == async_decision::kind::rejected)
    return {act::violation{d.reason}};
  const double lr_scale = lr_scaling_ ? 1.0 / (1.0 + static_cast<double>(d.staleness)) : 1.0;
  step_actions out{
      act::apply_push{a.rank, lr_scale, a.step, d.version, d.staleness, (d.version - 1) / ranks_}};
  parts_.push_back({a.rank, a.loss, a.samples, 0.0, 0, a.step});
  if (d.version % ranks_ == 0) {
    const int64_t step = d.version / ranks_ - 1;
    std::stable_sort(parts_.begin(), parts_.end(),
                     [](const step_part& x, const step_part& y) { return x.worker < y.worker; });
    out.push_back(act::complete{step, std::move(parts_), std::nullopt});
    parts_.clear();
    if (rules_.evaluates_after(step))
      out.push_back(act::evaluate{step, {}});
  }
  release(d.released, now_s, out);
  if (d.version == total_pushes()) {
    out.push_back(act::training_done{});
    return out;
  }
  pull(a.rank, now_s, out);
  return out;
}

step_actions async_strategy::on_worker_left(int64_t rank) {
  const auto index = static_cast<std::size_t>(rank);
  if (rank < 0 || rank >= ranks_ || !policy_.is_live(index))
    return {};
  const auto d = policy_.on_worker_left(index);
  if (d.what == async_decision::kind::rejected)
    return {act::violation{d.reason}};
  bool any_live = false;
  for (int64_t r = 0; r < ranks_; ++r)
    any_live = any_live || policy_.is_live(static_cast<std::size_t>(r));
  if (!any_live)
    return {act::cannot_continue{rank}};
  step_actions out;
  starved_[index] = false;
  // Its in-flight gradient is never pushed: the push it owed goes to someone else.
  const bool owed = handed_out_[index];
  handed_out_[index] = false;
  if (owed)
    --issued_;
  release(d.released, last_now_, out);
  for (int64_t r = 0; owed && r < ranks_ && issued_ < total_pushes(); ++r)
    if (starved_[static_cast<std::size_t>(r)] && policy_.is_live(static_cast<std::size_t>(r)))
      hand_out(r, out);
  return out;
}

step_actions async_strategy::on_worker_joined(int64_t rank, double now_s) {
  const auto d = policy_.on_worker_joined(static_cast<std::size_t>(rank));
  if (d.what == async_decision::kind::rejected)
    return {act::violation{d.reason}};
  handed_out_[static_cast<std::size_t>(rank)] = false;
  step_actions out;
  pull(rank, now_s, out);
  return out;
}

}  // namespace troupe
