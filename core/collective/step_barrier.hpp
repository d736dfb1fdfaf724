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
// abort() releases every waiter, now and later, with barrier_aborted: a replica that failed
// must not leave the others waiting for ever.
//
// Thread safety: arrive_and_wait() from the `parties` threads, abort() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

namespace troupe {

/// Thrown to the threads waiting at (or arriving at) a barrier that was aborted.
class barrier_aborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class step_barrier {
 public:
  /// `spin`: how long a waiter spins before it sleeps (zero: sleep at once).
  step_barrier(int64_t parties, std::chrono::microseconds spin);

  /// Returns once all parties have arrived in this round. Throws barrier_aborted.
  void arrive_and_wait();

  /// Releases every waiter with barrier_aborted(why); later arrivals throw at once. Idempotent:
  /// the first reason stays.
  void abort(const std::string& why);

  int64_t parties() const { return parties_; }

 private:
  [[noreturn]] void throw_aborted();

  const int64_t parties_;
  const std::chrono::microseconds spin_;
  std::atomic<int64_t> arrived_{0};
  std::atomic<uint64_t> round_{0};
  std::atomic<bool> aborted_{false};
  std::mutex mutex_;  ///< guards why_ and the sleepers' wake-up
  std::condition_variable wake_;
  std::string why_;
};

}  // namespace troupe
