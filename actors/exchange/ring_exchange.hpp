// The actor side of one rank's ring all-reduce: the state machine of
// core/collective/ring_allreduce.hpp plus what a transport needs, namely the successor's
// handle, the step (round) being reduced, and chunks that arrive for a later round while this
// rank is still computing it. Replica workers use it for sync steps across processes; the
// all-reduce benchmark uses it alone.
#pragma once

#include "core/collective/ring_allreduce.hpp"
#include "core/errors.hpp"
#include "messages/type_ids.hpp"

#include <ATen/core/Tensor.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace troupe {

template <class Handle>
class ring_exchange {
 public:
  /// `rank`: the position in the ring (among the live replicas), `epoch`: the membership it
  /// belongs to, stamped on every chunk it sends (a chunk of another epoch is the caller's to
  /// drop).
  ring_exchange(int64_t rank, int64_t ranks, const ring_options& options, int64_t epoch = 0)
      : ring_(rank, ranks, options), rank_(rank), epoch_(epoch) {}

  void link(Handle successor) { successor_ = std::move(successor); }

  /// Starts summing `buffer` in place for `round`; then takes any chunks that came early.
  /// Returns true when the sum is already complete (one rank, or every chunk was early).
  template <class Self>
  bool start(Self* self, int64_t round, at::Tensor buffer) {
    round_ = round;
    received_ = 0;
    for (auto& m : ring_.start(std::move(buffer)))
      send(self, std::move(m));
    auto early = std::move(early_);
    early_.clear();
    for (auto& [meta, chunk] : early)
      on_chunk(self, meta, chunk);
    return ring_.done();
  }

  /// One chunk from the predecessor. Returns true when it completed the round's sum. Throws
  /// protocol_error for a chunk of a round that is over or a chunk the plan does not expect.
  template <class Self>
  bool on_chunk(Self* self, const ring_meta& meta, const at::Tensor& chunk) {
    if (meta.round > round_) {  // the predecessor is a round ahead of this rank
      early_.emplace_back(meta, chunk);
      return false;
    }
    if (meta.round != round_ || !ring_.active() || ring_.done())
      throw protocol_error("ring all-reduce: a chunk of round " + std::to_string(meta.round) +
                           " arrived at rank " + std::to_string(rank_) +
                           ", which is reducing round " + std::to_string(round_));
    ++received_;
    for (auto& next : ring_.on_receive({meta.bucket, meta.step, chunk}))
      send(self, std::move(next));
    return ring_.done();
  }

  int64_t epoch() const { return epoch_; }
  /// Whether a sum is under way and waits for chunks (the watchdog's probe).
  bool waiting() const { return ring_.active() && !ring_.done(); }
  /// The round under way (-1: none yet) and the chunks of it received so far.
  int64_t round() const { return round_; }
  int64_t received() const { return received_; }

 private:
  template <class Self>
  void send(Self* self, ring_message m) {
    self->send(successor_, ring_atom_v, ring_meta{round_, m.bucket, m.step, epoch_},
               std::move(m.chunk));
  }

  ring_allreduce ring_;
  int64_t rank_;
  int64_t epoch_;
  Handle successor_;
  int64_t round_ = -1;
  int64_t received_ = 0;
  std::vector<std::pair<ring_meta, at::Tensor>> early_;
};

}  // namespace troupe
