// A replica worker's state and the functions its handlers share (replica_worker.cpp: the steps
// and the handlers; replica_membership.cpp: regroups, hand-overs and digests). Internal to the
// worker.
#pragma once

#include "actors/exchange/gradient_reducer.hpp"
#include "actors/exchange/ring_exchange.hpp"
#include "actors/exchange/ring_runner.hpp"
#include "actors/workers/replica_worker.hpp"
#include "core/checkpoint/state_transfer.hpp"
#include "core/collective/compact_encoding.hpp"
#include "core/policy/server_shards.hpp"
#include "core/policy/slice_gather.hpp"
#include "core/policy/step_pace.hpp"
#include "core/train/replica_engine.hpp"
#include "gpu/worker_device.hpp"

#include <ATen/core/Tensor.h>

#include <chrono>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace troupe {

using clock_type = std::chrono::steady_clock;

struct replica_worker_state {
  context_ptr context;
  const run_plan* plan = nullptr;  ///< context->plan, for brevity
  int64_t rank = 0;
  run_driver_actor driver;
  std::unique_ptr<gpu::worker_device> device;  ///< before engine: the engine uploads through it
  std::unique_ptr<replica_engine> engine;
  clock_type::time_point sent_at;  ///< when the last gradient (or weights) left
  double compute_s = 0;            ///< of the step in flight
  double data_wait_s = 0;          ///< of the step in flight: waiting for its rows
  double apply_s = 0;              ///< local_sgd: of the step in flight, before its average
  double comm_s = 0;               ///< async: waited for the weights of the step in flight
  int64_t version = 0;             ///< async: version of the weights in hand
  /// async with parallelism.compression: packs the pushed gradients, carrying each one's
  /// encoding error into the next.
  std::optional<error_feedback> push_encoder;
  /// local_sgd with parallelism.compression: the last averaged weights, as the driver holds
  /// them too. Weights are handed in as their difference from it, packed; undefined (hand them
  /// in whole) until the first average and after anything else set the weights.
  at::Tensor average_base;
  /// local_sgd with streaming fragments and parallelism.fragment_overlap: the fragment handed in
  /// after `step` and not merged yet (`average`: once it came), which must be merged before
  /// step `merge_before` computes; `held`: that step, when it came first and waits for it.
  struct fragment_on_its_way {
    int64_t step = 0;
    int64_t merge_before = 0;
    server_shard fragment;
    at::Tensor average;
    std::optional<int64_t> held;
    clock_type::time_point held_at;
  };
  std::optional<fragment_on_its_way> fragment_in_flight;
  double merge_wait_s = 0;  ///< waited for a fragment's average, reported with the next step
  /// async with a sharded server (replica_shards.cpp): the shards, each one's slice of the flat
  /// weights, which slices of the next weights are in, and the push in flight (its slices,
  /// packed where the run compresses, by shard; which shards acknowledged theirs).
  std::vector<caf::actor> shards;
  std::vector<server_shard> shard_slices;
  std::optional<slice_gather> gathering;
  std::vector<error_feedback> shard_encoders;
  std::optional<gradient_meta> pushing;
  std::vector<at::Tensor> push_slices;
  std::vector<bool> acked;
  int64_t push_count = 0;  ///< numbers the pushes, so an answer to an older one is known
  double loss = 0;         ///< of the step in flight
  int64_t samples = 0;     ///< of the step in flight
  /// The rows the sum it applied holds, read from the sum's rows slot where it is on the host
  /// (step_stats::sum_rows); 0 for a step with no sum among the workers.
  int64_t sum_rows = 0;
  /// Sync with a ring meeting: this replica's side of the ring all-reduce over actors...
  std::optional<ring_exchange<replica_worker_actor>> ring;
  /// ...or over the socket ring, on a thread of its own (worker_context::socket_rings).
  std::unique_ptr<ring_runner> socket;
  /// Where this epoch's sync gradients meet (replica_reducers), made at its first sync step.
  std::unique_ptr<gradient_reducer> reducer;
  /// A GPU worker whose sync gradients meet between processes (the ring, the host's shared
  /// memory: host memory all): its gradient's copy (with the rows slot) in pinned host memory,
  /// which the sum is
  /// taken over in place and apply brings back to the device (replica_worker.cpp).
  at::Tensor host_gradient;
  /// Which steps the driver released, which one runs, and which go into a checkpoint.
  step_pace pace;
  /// The membership this worker computes in (messages/membership.hpp): its epoch, and this
  /// replica's position among the live ones and how many there are (its share of each batch).
  int64_t epoch = 0;
  int64_t position = 0;
  int64_t live = 1;
  /// A state handed over to this worker, chunk by chunk (a replacement, or a survivor behind).
  std::optional<state_assembler> incoming;
  int64_t dropped = 0;                   ///< ring chunks of another epoch, dropped
  std::vector<step_stats> unsent;        ///< step reports held to go as a block, in step order
  clock_type::time_point last_step_end;  ///< when the last step ended (or the first began)
  static inline const char* name = "replica_worker";
};

namespace replica_internal {

using self_pointer = replica_worker_actor::stateful_pointer<replica_worker_state>;

double seconds_since(clock_type::time_point t);
/// Sends the step reports held back (report_step), in one message.
void send_unsent_reports(self_pointer self);
/// A step's report: held back while steps are short (sent a block at a time), sent at once
/// with everything before it when `now` or the block is full.
void report_step(self_pointer self, const step_stats& stats, bool now);

// Everything this worker tells the driver goes after the step reports it holds back, so that
// the driver sees its steps in the order they ran.
template <class... Ts>
void tell_driver(self_pointer self, Ts&&... xs) {
  send_unsent_reports(self);
  self->send(self->state.driver, std::forward<Ts>(xs)...);
}

/// The engine (and device), built on first use.
void ensure_engine(replica_worker_state& st);
/// The weights as they are now, on the host, owned by the message (the engine goes on).
at::Tensor cpu_copy(const replica_engine& engine);
/// This replica's side of the ring all-reduce over actors, made on first use.
ring_exchange<replica_worker_actor>& ring_of(replica_worker_state& st);
/// This rank's socket ring of the current membership epoch, if the node formed one (the first
/// sync step of the epoch takes it over); null: the ring runs over actors in this epoch.
ring_runner* socket_ring_of(self_pointer self);

// replica_shards.cpp: async with a sharded server
/// Pushes the step's gradient (clipped here: no shard sees all of it) to every shard; the push
/// goes to the driver once each shard has acknowledged its slice.
void push_to_shards(self_pointer self, const gradient_meta& meta);
/// A shard's slice of the next weights; the step starts when every shard's is in.
void on_shard_slice(self_pointer self, const server_weights& w);
/// The shards (at the start, and after one was replaced): unacknowledged slices go again.
void take_shards(self_pointer self, const std::vector<caf::actor>& shards);
/// After a slice gathering completed: the step on weights of `version`.
void compute_on(self_pointer self, int64_t version, int64_t step);

// replica_membership.cpp
void on_membership(self_pointer self, const membership_note& note, const caf::actor& successor);
void hand_over(self_pointer self, int64_t epoch);
void report_digest(self_pointer self, int64_t epoch);
void on_state_chunk(self_pointer self, const state_chunk& c);
void evaluate_again(self_pointer self, int64_t step);

}  // namespace replica_internal
}  // namespace troupe
