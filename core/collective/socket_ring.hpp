// A ring all-reduce (core/collective/ring_allreduce.hpp) over two plain TCP connections, one
// to the successor and one from the predecessor (core/collective/ring_sockets.hpp): the data
// plane between processes on different hosts that needs no actor system in between. Chunks go
// from the state machine's tensors straight to the socket and come off it straight into a
// tensor, one poll loop sending and receiving at once, so that no rank waits on a full socket
// while its successor waits on it.
//
// On the wire, per chunk: a 40-byte header (magic, round, bucket, ring step, element count, in
// the hosts' byte order: the ring's members run the same build) and the float32 elements. A
// header is checked before its elements are read: a wrong magic or round, or more elements
// than a bucket's chunk holds, ends the ring with protocol_error, as does a chunk the plan does not
// expect; nothing a peer sends can make this allocate more than a chunk at a time.
//
// Thread safety: one thread at a time; `abort` may be raised from any thread.
#pragma once

#include "core/collective/cross_process_sum.hpp"
#include "core/collective/ring_allreduce.hpp"
#include "core/collective/ring_sockets.hpp"
#include "core/collective/ring_tls.hpp"

#include <ATen/core/Tensor.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace troupe {

class socket_ring final : public cross_process_sum {
 public:
  /// `to_successor` and `from_predecessor` connected (ring_sockets.hpp); both may be empty
  /// when `ranks` is 1. Buckets and window as `options` says.
  socket_ring(socket_fd to_successor, socket_fd from_predecessor, int64_t rank, int64_t ranks,
              const ring_options& options);
  ~socket_ring();

  /// Encrypts both connections with TLS 1.3 under `context` (core/collective/ring_tls.hpp): this
  /// rank is the client towards its successor and the server towards its predecessor. The
  /// handshakes happen in the first all_reduce. Call before it.
  void secure(ssl_ctx_st* context);
  bool secured() const { return out_tls_ != nullptr; }

  /// Sums `buffer` (contiguous 1-d float32, the same numel on every rank) in place over the
  /// ring, as round `round` (every rank calls with the same rounds, in the same increasing
  /// order). Returns when this rank holds the sum and has sent everything its successor needs.
  /// Throws protocol_error for a frame the plan does not expect, ring_link_error when a
  /// connection closes, fails or carries nothing for `idle_timeout_s`, or on `*abort`. After a
  /// throw the ring is broken: make a new one.
  void all_reduce(int64_t round, at::Tensor buffer, double idle_timeout_s,
                  const std::atomic<bool>* abort = nullptr) override;

  int64_t rank() const override { return rank_; }
  int64_t ranks() const override { return ranks_; }
  /// Chunks received in the round under way or last finished (a watchdog's probe).
  int64_t received() const override { return received_.load(std::memory_order_relaxed); }

 private:
  struct outgoing {
    std::array<int64_t, 5> header{};
    at::Tensor chunk;
    std::size_t sent = 0;  // of header and elements together
  };
  void queue(ring_message m);  // for the successor, in the round under way
  bool send_some();            // false: the socket is full
  ssize_t send_parts(const iovec* parts, int count);
  ssize_t receive_into(void* into, std::size_t bytes);
  bool receive_some();  // false: nothing to read now
  void take_header();
  at::Tensor spare_chunk(int64_t elements);
  std::string peer(int64_t of) const;

  socket_fd out_;
  socket_fd in_;
  std::unique_ptr<ring_tls> out_tls_;  ///< null: plain TCP
  std::unique_ptr<ring_tls> in_tls_;
  int64_t rank_;
  int64_t ranks_;
  int64_t max_chunk_;  // elements: a bucket's largest chunk
  ring_allreduce ring_;
  int64_t round_ = -1;
  bool broken_ = false;
  std::deque<outgoing> sending_;
  std::array<int64_t, 5> header_{};  // being received
  std::size_t header_got_ = 0;
  at::Tensor chunk_;  // being received, once its header is in
  std::size_t chunk_got_ = 0;
  std::vector<at::Tensor> spares_;  // storage for incoming chunks, reused once free
  std::atomic<int64_t> received_{0};
};

}  // namespace troupe
