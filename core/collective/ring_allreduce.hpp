// One rank's side of a ring all-reduce (core/collective/ring_plan.hpp) over a flat float buffer,
// as a state machine with no transport: the caller sends what it returns to the rank's
// successor and feeds it what the predecessor sent. Actors (actors/ring_member) and tests drive
// it the same way.
//
// Large buffers are cut into buckets that reduce independently, each with its own ring: a rank
// adds bucket b's chunk while bucket b + 1's is still on the wire, so transfers and additions
// overlap instead of alternating. At most `window` buckets are in flight at once: that bounds
// the bytes queued for the network (a transport without flow control would buffer them all).
#pragma once

#include "core/collective/ring_options.hpp"
#include "core/collective/ring_plan.hpp"

#include <ATen/core/Tensor.h>

#include <functional>
#include <optional>
#include <vector>

namespace troupe {

/// A chunk for the successor: bucket, ring step, and the elements (a copy the caller owns: the
/// state machine keeps writing its buffer, and a transport may serialize the chunk later).
struct ring_message {
  int64_t bucket = 0;
  int64_t step = 0;
  at::Tensor chunk;
};

class ring_allreduce {
 public:
  /// Rank `rank` of `ranks`, its buckets and window as `options` says.
  ring_allreduce(int64_t rank, int64_t ranks, const ring_options& options);

  /// Starts summing `buffer` (a contiguous 1-d float tensor, the same numel on every rank) in
  /// place. Returns the first message of each bucket in the first window. Throws std::logic_error
  /// while a previous all-reduce is unfinished and std::invalid_argument for a bad buffer.
  std::vector<ring_message> start(at::Tensor buffer);

  /// Takes the predecessor's message; its chunk is reused (added to, sent on), so the caller
  /// must not share it. Returns the messages to send now: the bucket's next one, and the first
  /// of a bucket that starts because this one finished or the predecessor began it. Throws
  /// protocol_error (core/errors.hpp) when the message is not the one the plan expects next
  /// (bucket, step, element count or dtype): a peer that breaks the protocol must not corrupt the
  /// sum.
  std::vector<ring_message> on_receive(const ring_message& message);

  /// Where the chunk the predecessor sends next for `bucket` as ring step `step` may be read
  /// straight in: during the all-gather, the buffer's own chunk, which on_receive would only
  /// copy it into (and which is then sent on as it is). Undefined otherwise (a reduce step, or
  /// a bucket and step the plan does not expect next): read it elsewhere.
  at::Tensor landing_for(int64_t bucket, int64_t step) const;

  /// True when every bucket has finished: the buffer holds the sum over all ranks.
  bool done() const { return active_ && remaining_ == 0; }
  /// Where the copies of a bucket's first chunk go (1-d float tensors of the given numel); by
  /// default fresh ones. A transport that reuses storage (socket_ring) hands out its own.
  void set_chunk_source(std::function<at::Tensor(int64_t)> source) {
    chunk_source_ = std::move(source);
  }
  bool active() const { return active_; }
  int64_t ranks() const { return ranks_; }

 private:
  struct bucket {
    chunk_range range;                // in the whole buffer
    std::vector<chunk_range> chunks;  // of this bucket, relative to range.offset
    int64_t next_step = 0;            // the step whose message is expected next
  };
  at::Tensor chunk_of(const bucket& b, int64_t chunk) const;
  ring_message message_for(int64_t index, int64_t step) const;
  void start_up_to(int64_t last, std::vector<ring_message>& out);

  int64_t rank_;
  int64_t ranks_;
  int64_t bucket_elements_;
  int64_t window_;
  int64_t started_ = 0;  // buckets whose first chunk has left
  at::Tensor buffer_;
  std::vector<bucket> buckets_;
  int64_t remaining_ = 0;  // buckets not finished
  bool active_ = false;
  std::function<at::Tensor(int64_t)> chunk_source_;
};

}  // namespace troupe
