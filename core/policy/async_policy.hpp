// The asynchronous (parameter-server) update policy as a pure state machine, with stale-
// synchronous bounding. No threads, no actors, no tensors.
//
// Each worker loops: pull the weights (getting their version), compute a gradient, push it.
// The parameter server applies every pushed gradient at once and bumps the version; a gradient's
// staleness is how many versions were applied between its pull and its push.
//
// Bounded staleness (stale-synchronous parallel): a worker's clock is the number of gradients it
// has had applied. A worker may start (pull for) its next step only while its clock is at most
// `max_staleness` ahead of the slowest live worker's; otherwise it waits, and is released by the
// push (or departure) that lets the slowest catch up. max_staleness 0 keeps every worker on the
// same clock; no bound (nullopt) never makes anyone wait.
//
// Invariants the tests drive with random event orders: the bound is never exceeded by a worker
// that was allowed to pull; every pushed gradient is applied exactly once; while any worker is
// live, some live worker can make progress (no deadlock); a departed worker blocks no one.
//
// Thread safety: none; owned by async_strategy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct async_decision {
  enum class kind {
    proceed,   ///< pull: send the worker the current weights; push: gradient applied
    wait,      ///< pull refused for now: the worker is too far ahead (see `reason`)
    rejected,  ///< the event breaks the protocol (see `reason`); state unchanged
  };
  kind what = kind::proceed;
  int64_t version = 0;    ///< pull: version handed out; push: version after applying
  int64_t staleness = 0;  ///< push: versions applied between the pull and this push
  /// Waiting workers this event released: each must now be sent the current weights.
  std::vector<std::size_t> released;
  std::string reason;
};

class async_policy {
 public:
  async_policy(std::size_t workers, std::optional<int64_t> max_staleness);

  async_decision on_pull(std::size_t worker);
  async_decision on_push(std::size_t worker);
  async_decision on_worker_left(std::size_t worker);
  /// A replacement takes the place of departed `worker`: idle, at the clock of the slowest live
  /// worker (so it holds no one back), ready to pull.
  async_decision on_worker_joined(std::size_t worker);
  /// A resumed run: `version` gradients were applied before; every worker's clock is
  /// version / workers (the in-flight ones were lost with the run that stopped).
  void resume_at(int64_t version);

  int64_t version() const { return version_; }
  int64_t clock(std::size_t worker) const { return workers_.at(worker).clock; }
  /// The clock of the slowest live worker (0 when none is live).
  int64_t min_live_clock() const;
  bool is_waiting(std::size_t worker) const { return workers_.at(worker).state == phase::waiting; }
  bool is_live(std::size_t worker) const {
    return worker < workers_.size() && workers_[worker].state != phase::gone;
  }

 private:
  enum class phase { idle, computing, waiting, gone };
  struct worker_slot {
    phase state = phase::idle;
    int64_t clock = 0;
    int64_t pulled_version = 0;
  };

  bool may_start(const worker_slot& w) const;
  std::vector<std::size_t> release_waiters();

  std::vector<worker_slot> workers_;
  std::optional<int64_t> max_staleness_;
  int64_t version_ = 0;
};

}  // namespace troupe
