// A reusable barrier for the threads of one process that meet every training step (the sync
// replicas summing their gradients in shared memory: core/collective/replica_reduction.hpp).
//
// Why not a condition variable alone: on a virtual machine waking a sleeping thread costs tens
// to hundreds of microseconds (a futex wake, an inter-processor interrupt, the vCPU scheduled
// back), and two wake-ups per step were most of the 0.7 ms a two-replica MLP step lost to its
// exchange. When every waiting thread has a core of its own the barrier spins for a while first
// (the replicas arrive within microseconds of each other: they do the same work), then sleeps;
// with more threads than cores it sleeps at once, since spinning would take the core from the
// thread everyone waits for.
//
// The spin adapts per party (spin_budget): waits that end within the limit keep the party's
// budget at or near it, longer ones halve it. On a quiet machine every wait is short; on one
// where other processes take cores, a party that was descheduled keeps the others waiting far
// past any spin, and their budgets shrink instead of burning a core the late one needs.
//
// abort() releases every waiter, now and later, with barrier_aborted: a replica that failed
// must not leave the others waiting for ever.
//
// Thread safety: arrive_and_wait() from the `parties` threads, abort() from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace troupe {

/// Thrown to the threads waiting at (or arriving at) a barrier that was aborted.
class barrier_aborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// How long one party spins at its next wait, adapted to how long its recent waits took. Parties'
/// budgets sit side by side in one array: one cache line each, so that none false-shares.
class alignas(64) spin_budget {
 public:
  explicit spin_budget(std::chrono::microseconds limit = {}) : limit_(limit), now_(limit) {}
  std::chrono::microseconds now() const { return now_; }
  /// After a wait of `waited`: one that ended within the budget doubles it, one that ended
  /// soon after (within the limit) sets it to twice that wait, a longer one halves it. Never
  /// above the limit.
  void record(std::chrono::nanoseconds waited) {
    using std::chrono::microseconds;
    if (waited <= now_)
      now_ = std::min(limit_, now_ * 2 + microseconds{1});
    else if (waited <= limit_)
      now_ = std::min(limit_, std::chrono::duration_cast<microseconds>(waited) * 2);
    else
      now_ /= 2;
  }

 private:
  std::chrono::microseconds limit_;
  std::chrono::microseconds now_;
};

class step_barrier {
 public:
  /// `spin`: how long a waiter spins before it sleeps (zero: sleep at once).
  step_barrier(int64_t parties, std::chrono::microseconds spin);

  /// Returns once all parties have arrived in this round. `party` (0 <= party < parties) names
  /// the caller, whose spin budget adapts. Throws barrier_aborted.
  void arrive_and_wait(int64_t party);

  /// Releases every waiter with barrier_aborted(why); later arrivals throw at once. Idempotent:
  /// the first reason stays.
  void abort(const std::string& why);

  int64_t parties() const { return parties_; }

 private:
  [[noreturn]] void throw_aborted();

  const int64_t parties_;
  std::vector<spin_budget> budgets_;  ///< one per party, each touched by its party only
  std::atomic<int64_t> arrived_{0};
  std::atomic<uint64_t> round_{0};
  std::atomic<bool> aborted_{false};
  std::mutex mutex_;  ///< guards why_ and the sleepers' wake-up
  std::condition_variable wake_;
  std::string why_;
};

}  // namespace troupe
