#include "actors/replica_worker.hpp"

#include "actors/ring_exchange.hpp"

#include "core/data/batch_plan.hpp"
#include "core/train/replica_engine.hpp"
#include "core/train/run_tracker.hpp"
#include "core/train/stage_engine.hpp"
#include "gpu/worker_device.hpp"
#include "messages/error_code.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <caf/all.hpp>

#include <chrono>
#include <thread>

namespace troupe {

using clock_type = std::chrono::steady_clock;

struct replica_worker_state {
  std::shared_ptr<const replica_setup> setup;
  int64_t rank = 0;
  coordinator_actor coordinator;
  std::unique_ptr<gpu::worker_device> device;  ///< before engine: the engine uploads through it
  std::unique_ptr<replica_engine> engine;
  clock_type::time_point sent_at;  ///< when the last gradient left
  double compute_s = 0;            ///< of the step in flight
  double apply_s = 0;              ///< of the step in flight, before its exchange
  double comm_s = 0;               ///< async: waited for the weights of the step in flight
  int64_t version = 0;             ///< async: version of the weights in hand
  double loss = 0;                 ///< of the step in flight
  int64_t samples = 0;             ///< of the step in flight
  /// Sync across processes: this replica's side of the ring all-reduce.
  std::optional<ring_exchange<replica_worker_actor>> ring;
  static inline const char* name = "replica_worker";
};

namespace {

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

// The test hook of `faults.throw_worker`: a real LibTorch error (a shape mismatch), so that
// the failure travels the same path as any exception inside LibTorch.
void maybe_inject_fault(const faults_config& faults, int64_t rank, int64_t step) {
  if (faults.throw_worker && *faults.throw_worker == rank && faults.throw_step == step)
    at::mm(at::ones({2, 3}), at::ones({4, 5}));
}

// Built lazily, in a handler, so that its exceptions reach the exception handler, and on the
// worker's own thread, where the device's stream is made current.
void ensure_engine(replica_worker_state& st) {
  if (st.engine)
    return;
  const auto device = st.setup->devices.workers.at(static_cast<std::size_t>(st.rank));
  st.device = std::make_unique<gpu::worker_device>(device, "worker " + std::to_string(st.rank));
  // A CPU worker's batches are already where they are used: no transfer, no prefetch.
  st.engine =
      std::make_unique<replica_engine>(st.setup->job, st.setup->data, st.setup->initial_weights,
                                       st.rank, device.is_cuda() ? st.device.get() : nullptr);
}

// Sleeps for `faults.slow_ms` on the slowed worker: a straggler for demos and tests.
void maybe_slow_down(const faults_config& faults, int64_t rank) {
  if (faults.slow_worker && *faults.slow_worker == rank && faults.slow_ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(faults.slow_ms));
}

// After the step's exchange (if any): report, evaluate if asked, then go on or hand in weights.
void finish_step(replica_worker_actor::stateful_pointer<replica_worker_state> self,
                 const update_meta& meta, double comm_s, double apply_s) {
  auto& st = self->state;
  self->send(st.coordinator,
             step_stats{st.rank, meta.step, st.loss, st.samples, st.compute_s, comm_s, apply_s});
  if (meta.evaluate) {
    const auto eval_start = clock_type::now();
    const auto r = st.engine->evaluate();
    self->send(st.coordinator, eval_report{st.rank, meta.step, r.loss_sum, r.correct, r.count,
                                           seconds_since(eval_start)});
  }
  if (meta.last)
    self->send(st.coordinator, weights_atom_v, st.rank,
               st.engine->weights().to(at::kCPU, /*non_blocking=*/false, /*copy=*/true));
  else
    // Through the mailbox rather than a direct call, so that an exit request (another worker
    // failed) is seen between two steps.
    self->send(self, compute_atom_v, meta.step + 1);
}

using self_pointer = replica_worker_actor::stateful_pointer<replica_worker_state>;

// ring: the replica's gradient now holds the sum over all replicas; apply it, as the
// coordinator's update would have.
void finish_ring_step(self_pointer self, int64_t step) {
  auto& st = self->state;
  const double comm_s = seconds_since(st.sent_at);
  const auto apply_start = clock_type::now();
  st.engine->apply(st.engine->gradient());
  finish_step(self, update_after(*st.setup, step), comm_s, seconds_since(apply_start));
}

ring_exchange<replica_worker_actor>& ring_of(replica_worker_state& st) {
  if (!st.ring)
    st.ring.emplace(st.rank, st.setup->job.parallelism.replicas, st.setup->ring_bucket_elements);
  return *st.ring;
}

void compute_step(self_pointer self, int64_t step) {
  auto& st = self->state;
  const auto& setup = *st.setup;
  const auto start = clock_type::now();
  ensure_engine(st);
  maybe_inject_fault(setup.job.faults, st.rank, step);
  maybe_slow_down(setup.job.faults, st.rank);
  const auto policy = setup.schedule->policy_at(step);
  const auto result = st.engine->compute_gradient(step, policy == policy_kind::sync);
  st.loss = result.loss;
  st.samples = result.samples;
  st.compute_s = seconds_since(start);
  st.sent_at = clock_type::now();
  const gradient_meta meta{st.rank, step, result.loss, result.samples};
  if (policy == policy_kind::sync && setup.job.parallelism.replicas == 1) {
    // Nothing to combine: apply at once instead of a round trip through the coordinator, which
    // completes the step from the worker's report (see solo_sync in coordinator.cpp).
    const auto apply_start = clock_type::now();
    st.engine->apply(st.engine->gradient());
    finish_step(self, update_after(setup, step), 0.0, seconds_since(apply_start));
    return;
  }
  if (policy == policy_kind::sync && setup.devices.gradients == gradient_path::nccl) {
    // A GPU each: the replicas sum among themselves on their streams, as a ring would.
    st.device->all_reduce_sum(st.engine->gradient());
    finish_ring_step(self, step);
    return;
  }
  if (policy == policy_kind::sync && setup.ring) {
    if (ring_of(st).start(self, step, st.engine->gradient()))
      finish_ring_step(self, step);
    return;
  }
  if (policy == policy_kind::sync) {
    // The coordinator reads the gradient on another thread: it must be complete when it leaves.
    st.device->finish_work();
    self->send(st.coordinator, gradient_atom_v, meta, st.engine->gradient());
    return;
  }
  if (policy == policy_kind::async) {
    // comm_s: how long this worker waited for the weights it just computed on.
    self->send(st.coordinator,
               step_stats{st.rank, step, st.loss, st.samples, st.compute_s, st.comm_s, 0.0});
    self->send(st.coordinator, push_atom_v, meta, st.version, st.engine->gradient());
    return;
  }
  // local_sgd: step alone; exchange weights only at averaging steps.
  st.engine->apply(st.engine->gradient());
  const double apply_s = seconds_since(st.sent_at);
  if (setup.schedule->averages_after(step)) {
    st.sent_at = clock_type::now();
    at::Tensor momenta;
    if (setup.schedule->averages_momenta_after(step))
      momenta = st.engine->momenta();
    self->send(st.coordinator, average_atom_v, meta, st.engine->weights(), momenta);
    st.apply_s = apply_s;
    return;
  }
  update_meta local;  // no exchange, no evaluation, not the last step: those average
  local.step = step;
  finish_step(self, local, 0.0, apply_s);
}

replica_worker_actor::behavior_type replica_worker(
    replica_worker_actor::stateful_pointer<replica_worker_state> self,
    std::shared_ptr<const replica_setup> setup, int64_t rank, coordinator_actor coordinator) {
  // This runs on the worker's own (detached) thread: the OpenMP team size set here bounds this
  // replica's intra-op threads only.
  at::set_num_threads(static_cast<int>(setup->job.parallelism.threads_per_replica));
  self->state.setup = std::move(setup);
  self->state.rank = rank;
  self->state.coordinator = std::move(coordinator);
  self->set_exception_handler(
      [](caf::scheduled_actor*, std::exception_ptr& ep) { return make_error_from_exception(ep); });
  auto* trusted = self->state.setup->trusted.get();
  return {
      [self, trusted](compute_atom, int64_t step) {
        if (sender_trusted(self, trusted))
          compute_step(self, step);
      },
      [self, trusted](link_atom, const caf::actor& successor) {
        if (sender_trusted(self, trusted))
          ring_of(self->state).link(caf::actor_cast<replica_worker_actor>(successor));
      },
      [self, trusted](ring_atom, const ring_meta& meta, const at::Tensor& chunk) {
        if (sender_trusted(self, trusted) && ring_of(self->state).on_chunk(self, meta, chunk))
          finish_ring_step(self, meta.round);
      },
      [self, trusted](nccl_atom, const std::string& nccl_id) {
        if (!sender_trusted(self, trusted))
          return;
        auto& st = self->state;
        ensure_engine(st);
        st.device->join_nccl(nccl_id, static_cast<int>(st.rank),
                             static_cast<int>(st.setup->job.parallelism.replicas));
      },
      [self, trusted](update_atom, const update_meta& meta, const at::Tensor& combined) {
        if (!sender_trusted(self, trusted))
          return;
        auto& st = self->state;
        const double comm_s = seconds_since(st.sent_at);
        const auto apply_start = clock_type::now();
        st.device->follow_shared_work(combined);  // the coordinator summed on the device
        st.engine->apply(combined);
        finish_step(self, meta, comm_s, seconds_since(apply_start));
      },
      [self, trusted](params_atom, int64_t version, int64_t step, const at::Tensor& weights) {
        if (!sender_trusted(self, trusted))
          return;
        auto& st = self->state;
        st.comm_s = step > 0 ? seconds_since(st.sent_at) : 0.0;
        ensure_engine(st);
        st.engine->set_weights(weights);
        st.version = version;
        compute_step(self, step);
      },
      [self, trusted](averaged_atom, const update_meta& meta, const at::Tensor& weights,
                      const at::Tensor& momenta) {
        if (!sender_trusted(self, trusted))
          return;
        auto& st = self->state;
        const double comm_s = seconds_since(st.sent_at);
        const auto apply_start = clock_type::now();
        st.engine->set_weights(weights);
        if (momenta.defined())
          st.engine->set_momenta(momenta);
        finish_step(self, meta, comm_s, st.apply_s + seconds_since(apply_start));
      },
  };
}

}  // namespace

update_meta update_after(const replica_setup& setup, int64_t step) {
  update_meta meta;
  meta.step = step;
  meta.last = step + 1 >= setup.total_steps;
  meta.evaluate = should_evaluate(step, setup.total_steps, setup.steps_per_epoch,
                                  setup.job.training.eval_interval);
  return meta;
}

std::shared_ptr<replica_setup> make_replica_setup(const job_config& job, dataset_ptr data) {
  auto setup = std::make_shared<replica_setup>();
  setup->job = job;
  setup->initial_weights = initial_weights(job, data->classes);
  setup->data = std::move(data);
  const batch_plan plan(setup->data->train.size(), job.training.batch_size, job.seed);
  setup->steps_per_epoch = plan.steps_per_epoch();
  setup->total_steps =
      job.training.steps > 0 ? job.training.steps : job.training.epochs * plan.steps_per_epoch();
  setup->schedule.emplace(job, setup->total_steps, setup->steps_per_epoch);
  if (job.parallelism.pipelined())
    setup->stage_slices = stage_slices(job, setup->data->classes);
  setup->ring = job.cluster.enabled() && job.parallelism.replicas > 1;
  setup->devices = make_device_plan(job, local_inventory());
  setup->ring_bucket_elements =
      std::max<int64_t>(1, static_cast<int64_t>(job.cluster.bucket_mb * (1 << 20) / 4));
  return setup;
}

replica_worker_actor spawn_replica_worker(caf::actor_system& system,
                                          std::shared_ptr<const replica_setup> setup, int64_t rank,
                                          coordinator_actor coordinator) {
  return system.spawn<caf::detached>(replica_worker, std::move(setup), rank,
                                     std::move(coordinator));
}

}  // namespace troupe
