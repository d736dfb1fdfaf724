#include "core/policy/sync_policy.hpp"

#include <algorithm>

namespace troupe {
namespace {

policy_decision reject(std::string reason) {
  policy_decision d;
  d.kind = verdict::rejected;
  d.reason = std::move(reason);
  return d;
}

}  // namespace

sync_policy::sync_policy(std::size_t workers, int64_t first_step)
    : slots_(workers, slot::waiting), step_(first_step) {}

std::size_t sync_policy::live_workers() const {
  return static_cast<std::size_t>(
      std::count_if(slots_.begin(), slots_.end(), [](slot s) { return s != slot::gone; }));
}

bool sync_policy::is_live(std::size_t worker) const {
  return worker < slots_.size() && slots_[worker] != slot::gone;
}

bool sync_policy::has_arrived(std::size_t worker) const {
  return worker < slots_.size() && slots_[worker] == slot::arrived;
}

policy_decision sync_policy::on_gradient(std::size_t worker, int64_t step) {
  const auto who = "worker " + std::to_string(worker);
  if (worker >= slots_.size())
    return reject(who + " is unknown (there are " + std::to_string(slots_.size()) + ")");
  if (slots_[worker] == slot::gone)
    return reject(who + " has left and cannot contribute");
  if (step != step_)
    return reject(who + " sent a gradient for step " + std::to_string(step) + " during step " +
                  std::to_string(step_));
  if (slots_[worker] == slot::arrived)
    return reject(who + " sent a second gradient for step " + std::to_string(step));
  slots_[worker] = slot::arrived;
  if (!all_live_arrived()) {
    policy_decision d;
    d.step = step_;
    return d;
  }
  return complete_step();
}

policy_decision sync_policy::on_worker_left(std::size_t worker) {
  if (worker >= slots_.size())
    return reject("worker " + std::to_string(worker) + " is unknown");
  if (slots_[worker] == slot::gone)
    return reject("worker " + std::to_string(worker) + " has already left");
  slots_[worker] = slot::gone;
  // The departed worker's gradient (if it had arrived) is dropped: it no longer counts, and
  // with no live workers left there is no step to complete.
  if (live_workers() == 0 || !all_live_arrived()) {
    policy_decision d;
    d.step = step_;
    return d;
  }
  return complete_step();
}

bool sync_policy::all_live_arrived() const {
  return std::none_of(slots_.begin(), slots_.end(), [](slot s) { return s == slot::waiting; });
}

policy_decision sync_policy::complete_step() {
  policy_decision d;
  d.kind = verdict::complete;
  d.step = step_;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i] == slot::arrived) {
      d.contributors.push_back(i);
      slots_[i] = slot::waiting;
    }
  }
  ++step_;
  return d;
}

}  // namespace troupe
