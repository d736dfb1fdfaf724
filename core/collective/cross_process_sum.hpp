// A sum of one flat float32 buffer among processes, in place, that a thread of its own runs one
// round at a time (actors/exchange/ring_runner): the socket ring (core/collective/socket_ring)
// or gloo's halving-doubling over a full mesh (core/collective/gloo_mesh), whichever the job's
// cluster.collective names. Both are formed by the coordinator in the same three steps (listen,
// connect, join: actors/exchange/socket_ring_places) and are broken for good by their first
// failure.
//
// Thread safety: all_reduce from one thread at a time; interrupt from any thread.
#pragma once

#include <ATen/core/Tensor.h>

#include <atomic>
#include <cstdint>

namespace troupe {

class cross_process_sum {
 public:
  virtual ~cross_process_sum() = default;

  /// Sums `buffer` (contiguous 1-d float32, the same numel on every rank) in place as round
  /// `round` (every rank calls with the same rounds in the same order). Throws ring_link_error
  /// when a peer's connection closes, fails or stays silent for `idle_timeout_s`, or once
  /// `*abort` is raised; protocol_error for bytes the protocol does not allow. After a throw the
  /// sum is broken: form a new one.
  virtual void all_reduce(int64_t round, at::Tensor buffer, double idle_timeout_s,
                          const std::atomic<bool>* abort = nullptr) = 0;

  virtual int64_t rank() const = 0;
  virtual int64_t ranks() const = 0;
  /// What a step watchdog can see move: the socket ring's chunks received in the round under
  /// way; gloo's rounds completed (it shows nothing within a round).
  virtual int64_t received() const = 0;
  /// From another thread, after `*abort` was raised: the socket ring polls its flag and throws
  /// within milliseconds; gloo's own waits end only by their timeout, but closing its
  /// connections here ends the peers' sums at once (they read the close).
  virtual void interrupt() {}
};

}  // namespace troupe
