// Runs a replica's sum among processes (core/collective/cross_process_sum.hpp: the socket ring
// or gloo's mesh) on a thread of its own, one all-reduce at a time, so that the replica's actor
// stays free to answer while the sum is on the wire: the step watchdog's probe (how many chunks
// came), an exit. Each sum's end is
// reported through `done` (from the runner's thread): the round and "" or what went wrong.
//
// The runner of a host's leader in a hierarchical sum holds the host's segment too: each sum
// is then the host's (host_reduction::all_reduce, the leader in slot 0), the ring's among the
// leaders, and the broadcast of the total to the host's other ranks, all on this thread.
//
// Thread safety: start, busy, received and the destructor from the owning actor's thread.
#pragma once

#include "core/collective/cross_process_sum.hpp"
#include "core/collective/host_reduction.hpp"

#include <ATen/core/Tensor.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace troupe {

class ring_runner {
 public:
  using done_function = std::function<void(int64_t round, const std::string& error)>;

  /// `idle_timeout_s`: a sum that moves no byte this long fails (socket_ring::all_reduce).
  /// `host`: the leader's segment (slot 0), or null for a ring of every rank.
  ring_runner(std::unique_ptr<cross_process_sum> ring, double idle_timeout_s, done_function done,
              std::shared_ptr<host_reduction> host = nullptr);
  /// Aborts a sum under way (the host's too: its other ranks would wait for the total) and
  /// waits for the thread: the socket ring sees the abort within milliseconds. A sum that
  /// cannot be cut short (gloo's waits end only by their timeout) is left to end on its thread,
  /// which then reports nothing, after `abandon_after`.
  ~ring_runner();
  ring_runner(const ring_runner&) = delete;
  ring_runner& operator=(const ring_runner&) = delete;

  /// Sums `buffer` in place as `round`; `done` follows. Throws std::logic_error while busy.
  void start(int64_t round, at::Tensor buffer);
  bool busy() const;
  int64_t received() const;

  static constexpr std::chrono::seconds abandon_after{2};

 private:
  struct shared;  // what the thread uses: it may outlive the runner
  static void run(const std::shared_ptr<shared>& s);

  std::shared_ptr<shared> shared_;
  std::thread thread_;
};

}  // namespace troupe
