#include "actors/workers/replica_reducers.hpp"

#include "core/collective/replica_reduction.hpp"
#include "core/collective/step_barrier.hpp"

#include <stdexcept>

namespace troupe::replica_internal {
namespace {

class local_reducer final : public gradient_reducer {
 public:
  reduce_outcome start(int64_t, const at::Tensor&) override { return reduce_outcome::summed; }
};

// On the replicas' GPUs, on their streams (NCCL).
class nccl_reducer final : public gradient_reducer {
 public:
  explicit nccl_reducer(gpu::worker_device& device) : device_(device) {}
  reduce_outcome start(int64_t, const at::Tensor& gradient) override {
    device_.all_reduce_sum(gradient);
    return reduce_outcome::summed;
  }

 private:
  gpu::worker_device& device_;
};

// The replicas of this process, each summing a slice in shared memory (replica_reduction).
class shared_reducer final : public gradient_reducer {
 public:
  explicit shared_reducer(self_pointer self) : self_(self) {}
  reduce_outcome start(int64_t, const at::Tensor&) override {
    try {
      self_->state.context->reduction->all_reduce(self_->state.rank);
    } catch (const barrier_aborted&) {
      // Another replica failed or the run ended: the driver names the cause and stops this
      // one; dying here too could reach it first and hide that cause. The steps this one
      // completed go to the driver first: a failing replica waits for them (on_failure).
      send_unsent_reports(self_);
      return reduce_outcome::aborted;
    }
    return reduce_outcome::summed;
  }

 private:
  self_pointer self_;
};

// The nodes of one host, through the host's shared memory (host_reduction). `hierarchical`: the
// segment holds this host's ranks only and this one is not their leader: after the host's sum
// it waits for the total the leader brings back from the other hosts (broadcast).
class host_reducer final : public gradient_reducer {
 public:
  host_reducer(self_pointer self, bool hierarchical) : self_(self), hierarchical_(hierarchical) {}
  reduce_outcome start(int64_t, const at::Tensor& gradient) override {
    const auto& context = *self_->state.context;
    const auto slot = host_slot(context, self_->state.rank);
    try {
      context.host->all_reduce(slot, gradient);
      if (hierarchical_)
        context.host->broadcast(slot, gradient, 0);
    } catch (const barrier_aborted&) {
      return reduce_outcome::aborted;  // the coordinator or the node agent ends this worker
    }
    return reduce_outcome::summed;
  }

 private:
  self_pointer self_;
  bool hierarchical_;
};

// The socket ring between processes, on the runner's thread; its end is a message (ring_atom,
// epoch, round, error) the worker handles (on_socket_sum). Host memory only: nothing is queued
// on a device.
class socket_reducer final : public gradient_reducer {
 public:
  explicit socket_reducer(ring_runner& runner) : runner_(runner) {}
  reduce_outcome start(int64_t step, const at::Tensor& gradient) override {
    runner_.start(step, gradient);
    return reduce_outcome::pending;
  }
  int64_t received() const override { return runner_.busy() ? runner_.received() : -1; }

 private:
  ring_runner& runner_;
};

// The ring all-reduce over actor messages: chunks arrive at the worker's handler, which feeds
// them to the same ring_exchange and applies the sum when it completes.
class actor_ring_reducer final : public gradient_reducer {
 public:
  explicit actor_ring_reducer(self_pointer self) : self_(self) {}
  reduce_outcome start(int64_t step, const at::Tensor& gradient) override {
    return ring_of(self_->state).start(self_, step, gradient) ? reduce_outcome::summed
                                                              : reduce_outcome::pending;
  }
  int64_t received() const override {
    const auto& ring = self_->state.ring;
    return ring && ring->waiting() ? ring->received() : -1;
  }

 private:
  self_pointer self_;
};

// The run driver sums every replica's gradient in rank order and sends the sum back (update).
// The gradient goes without its rows slot: the driver knows whose gradients it summed.
class driver_reducer final : public gradient_reducer {
 public:
  explicit driver_reducer(self_pointer self) : self_(self) {}
  reduce_outcome start(int64_t step, const at::Tensor&) override {
    auto& st = self_->state;
    const auto& gradient = st.engine->gradient();
    // The driver reads the gradient on another thread: it must be complete when it leaves.
    st.device->finish_work();
    tell_driver(self_, gradient_atom_v, gradient_meta{st.rank, step, st.loss, st.samples, st.epoch},
                gradient);
    return reduce_outcome::pending;
  }

 private:
  self_pointer self_;
};

}  // namespace

std::unique_ptr<gradient_reducer> make_reducer(self_pointer self) {
  auto& st = self->state;
  switch (st.plan->gradients) {
    case gradient_meeting::local:
      return std::make_unique<local_reducer>();
    case gradient_meeting::nccl:
      return std::make_unique<nccl_reducer>(*st.device);
    case gradient_meeting::shared:
      return std::make_unique<shared_reducer>(self);
    case gradient_meeting::driver:
      return std::make_unique<driver_reducer>(self);
    case gradient_meeting::ring: {
      const auto& context = *st.context;
      // Every node on this host, or this host's part of a hierarchical sum but not its leader
      // (whose runner sums the host's part, the hosts', and broadcasts: socket_ring_of).
      if (context.host && (!host_is_partial(context) || host_slot(context, st.rank) != 0))
        return std::make_unique<host_reducer>(self, host_is_partial(context));
      if (auto* socket = socket_ring_of(self))
        return std::make_unique<socket_reducer>(*socket);
      if (context.host)  // the coordinator forms the leaders' ring before any replica starts
        throw std::logic_error("a host's leader without its socket ring");
      return std::make_unique<actor_ring_reducer>(self);
    }
  }
  throw std::logic_error("make_reducer: a gradient meeting without a reducer");
}

}  // namespace troupe::replica_internal
