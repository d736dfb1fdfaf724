// What a replica worker's handlers share (replica_worker_state.hpp): its engine built on first
// use, its step reports held back and sent in blocks, its rings of the current epoch.
#include "actors/workers/replica_worker_state.hpp"

#include <ATen/ATen.h>
#include <caf/all.hpp>

#include <algorithm>

namespace troupe {
namespace replica_internal {

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

void send_unsent_reports(self_pointer self) {
  auto& st = self->state;
  if (st.unsent.empty())
    return;
  if (st.unsent.size() == 1)
    self->send(st.driver, st.unsent.front());
  else
    self->send(st.driver, st.unsent);
  if (st.context->reduction)  // in the driver's mailbox now: a failing replica may go on
    st.context->reduction->reported(st.rank, st.unsent.back().step);
  st.unsent.clear();
}

// A step's report. Short steps' reports go a block at a time (as the driver releases them:
// core/policy/step_release.hpp): each message wakes the driver's thread, which takes a core
// from the replicas (a step of the MLP on two cores lasts about a millisecond; one report a
// step cost 1 replica x 2 threads 2.6% and 2 x 1 1.8%, bench/sync_overhead), and one to a driver in
// another process also crosses both processes' multiplexers. A report that must arrive now
// (`now`: the driver waits for what follows it) goes at once, with the ones held before it; so
// do the held ones when the worker has no released step left to run (advance), and when the
// replicas' shared sum is aborted (exchange_sync).
void report_step(self_pointer self, const step_stats& stats, bool now) {
  auto& st = self->state;
  st.unsent.push_back(stats);
  const bool hold = !now && stats.span_s < short_step_s &&
                    static_cast<int64_t>(st.unsent.size()) < release_block_steps;
  if (!hold)
    send_unsent_reports(self);
}

// Built lazily, in a handler, so that its exceptions reach the exception handler, and on the
// worker's own thread, where the device's stream is made current.
void ensure_engine(replica_worker_state& st) {
  if (st.engine)
    return;
  const auto device = st.plan->devices.workers.at(static_cast<std::size_t>(st.rank));
  st.device = std::make_unique<gpu::worker_device>(device, "worker " + std::to_string(st.rank));
  // A CPU worker's batches are already where they are used: no transfer, no prefetch.
  st.engine = std::make_unique<replica_engine>(replica_plan_of(*st.plan, st.rank), st.context->data,
                                               st.context->initial_weights,
                                               device.is_cuda() ? st.device.get() : nullptr);
  if (st.context->reduction)
    st.context->reduction->attach(st.rank, st.engine->gradient_with_rows());
  // Backward writes where the other processes sum, on the CPU; a GPU's gradient is copied there.
  if (st.context->host && !device.is_cuda())
    st.engine->move_gradient_into(st.context->host->slot_tensor(host_slot(*st.context, st.rank)));
}

// The weights as they are now, on the host, owned by the message (the engine goes on).
at::Tensor cpu_copy(const replica_engine& engine) {
  return engine.weights().to(at::kCPU, /*non_blocking=*/false, /*copy=*/true);
}

ring_exchange<replica_worker_actor>& ring_of(replica_worker_state& st) {
  if (!st.ring)
    st.ring.emplace(st.position, st.live, st.plan->ring, st.epoch);
  return *st.ring;
}

// This rank's socket ring of the current membership epoch, if the node formed one (the first
// sync step of the epoch takes it over); null: the ring runs over actors in this epoch. Its sums
// end in a (ring_atom, epoch, round, error) message from the runner's thread.
ring_runner* socket_ring_of(self_pointer self) {
  auto& st = self->state;
  if (!st.socket && st.context->socket_rings) {
    auto ring = st.context->socket_rings->take(st.rank, st.epoch);
    if (!ring)
      return nullptr;
    const double idle_s = st.plan->job.cluster.sum_idle_timeout_s();
    caf::weak_actor_ptr weak = caf::actor_cast<caf::weak_actor_ptr>(self->ctrl());
    st.socket = std::make_unique<ring_runner>(
        std::move(ring), idle_s,
        [weak, epoch = st.epoch](int64_t round, const std::string& error) {
          if (auto strong = weak.lock()) {  // as itself: the handler takes no one else's
            const auto me = caf::actor_cast<caf::actor>(strong);
            caf::send_as(me, me, ring_atom_v, socket_sum_end{epoch, round, error});
          }
        },
        st.context->host);  // a host's leader in a hierarchical sum
  }
  return st.socket.get();
}

}  // namespace replica_internal

}  // namespace troupe
