#include "core/policy/async_policy.hpp"

#include <algorithm>
#include <limits>

namespace troupe {
namespace {

async_decision rejected(std::string reason) {
  async_decision d;
  d.what = async_decision::kind::rejected;
  d.reason = std::move(reason);
  return d;
}

}  // namespace

async_policy::async_policy(std::size_t workers, std::optional<int64_t> max_staleness)
    : workers_(workers), max_staleness_(max_staleness) {}

int64_t async_policy::min_live_clock() const {
  int64_t min = std::numeric_limits<int64_t>::max();
  for (const auto& w : workers_)
    if (w.state != phase::gone)
      min = std::min(min, w.clock);
  return min == std::numeric_limits<int64_t>::max() ? 0 : min;
}

bool async_policy::may_start(const worker_slot& w) const {
  return !max_staleness_ || w.clock - min_live_clock() <= *max_staleness_;
}

std::vector<std::size_t> async_policy::release_waiters() {
  std::vector<std::size_t> released;
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    auto& w = workers_[i];
    if (w.state == phase::waiting && may_start(w)) {
      w.state = phase::computing;
      w.pulled_version = version_;
      released.push_back(i);
    }
  }
  return released;
}

async_decision async_policy::on_pull(std::size_t worker) {
  const auto who = "worker " + std::to_string(worker);
  if (worker >= workers_.size())
    return rejected(who + " is unknown");
  auto& w = workers_[worker];
  if (w.state == phase::gone)
    return rejected(who + " has left");
  if (w.state != phase::idle)
    return rejected(who + " pulled again before pushing its gradient");
  async_decision d;
  if (!may_start(w)) {
    w.state = phase::waiting;
    d.what = async_decision::kind::wait;
    d.reason = who + " is " + std::to_string(w.clock - min_live_clock()) +
               " steps ahead of the slowest live worker and the bound is " +
               std::to_string(*max_staleness_);
    return d;
  }
  w.state = phase::computing;
  w.pulled_version = version_;
  d.version = version_;
  return d;
}

async_decision async_policy::on_push(std::size_t worker) {
  const auto who = "worker " + std::to_string(worker);
  if (worker >= workers_.size())
    return rejected(who + " is unknown");
  auto& w = workers_[worker];
  if (w.state != phase::computing)
    return rejected(who + " pushed a gradient without a pull in progress");
  async_decision d;
  d.staleness = version_ - w.pulled_version;
  ++version_;
  ++w.clock;
  w.state = phase::idle;
  d.version = version_;
  d.released = release_waiters();
  return d;
}

async_decision async_policy::on_worker_left(std::size_t worker) {
  if (worker >= workers_.size())
    return rejected("worker " + std::to_string(worker) + " is unknown");
  auto& w = workers_[worker];
  if (w.state == phase::gone)
    return rejected("worker " + std::to_string(worker) + " has already left");
  // A gradient it was computing is never pushed, so nothing needs undoing.
  w.state = phase::gone;
  async_decision d;
  d.version = version_;
  d.released = release_waiters();
  return d;
}

async_decision async_policy::on_worker_joined(std::size_t worker) {
  if (worker >= workers_.size())
    return rejected("worker " + std::to_string(worker) + " is unknown");
  auto& w = workers_[worker];
  if (w.state != phase::gone)
    return rejected("worker " + std::to_string(worker) + " joined without having left");
  w.clock = min_live_clock();
  w.pulled_version = version_;
  w.state = phase::idle;
  async_decision d;
  d.version = version_;
  return d;
}

void async_policy::resume_at(int64_t version) {
  version_ = version;
  for (auto& w : workers_) {
    w.clock = version / static_cast<int64_t>(workers_.size());
    w.pulled_version = version;
  }
}

}  // namespace troupe
