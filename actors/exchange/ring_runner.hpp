// Runs a replica's socket ring (core/collective/socket_ring.hpp) on a thread of its own, one
// all-reduce at a time, so that the replica's actor stays free to answer while the sum is on
// the wire: the step watchdog's probe (how many chunks came), an exit. Each sum's end is
// reported through `done` (from the runner's thread): the round and "" or what went wrong.
//
// The runner of a host's leader in a hierarchical sum holds the host's segment too: each sum
// is then the host's (host_reduction::all_reduce, the leader in slot 0), the ring's among the
// leaders, and the broadcast of the total to the host's other ranks, all on this thread.
//
// Thread safety: start, busy, received and the destructor from the owning actor's thread.
#pragma once

#include "core/collective/host_reduction.hpp"
#include "core/collective/socket_ring.hpp"

#include <ATen/core/Tensor.h>

#include <atomic>
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
  ring_runner(std::unique_ptr<socket_ring> ring, double idle_timeout_s, done_function done,
              std::shared_ptr<host_reduction> host = nullptr);
  /// Aborts a sum under way (the host's too: its other ranks would wait for the total) and
  /// waits for the thread.
  ~ring_runner();
  ring_runner(const ring_runner&) = delete;
  ring_runner& operator=(const ring_runner&) = delete;

  /// Sums `buffer` in place as `round`; `done` follows. Throws std::logic_error while busy.
  void start(int64_t round, at::Tensor buffer);
  bool busy() const { return busy_.load(); }
  int64_t received() const { return ring_->received(); }

 private:
  void run();

  std::unique_ptr<socket_ring> ring_;
  std::shared_ptr<host_reduction> host_;
  double idle_timeout_s_;
  done_function done_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool has_work_ = false;
  bool stopping_ = false;
  int64_t round_ = 0;
  at::Tensor buffer_;
  std::atomic<bool> busy_{false};
  std::atomic<bool> abort_{false};
  std::thread thread_;
};

}  // namespace troupe
