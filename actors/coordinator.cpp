#include "actors/coordinator.hpp"

#include "actors/run_ending.hpp"
#include "core/collective/sum_in_order.hpp"
#include "core/policy/async_policy.hpp"
#include "core/policy/sync_policy.hpp"
#include "core/train/replica_engine.hpp"
#include "core/train/run_tracker.hpp"
#include "gpu/worker_device.hpp"

#include <ATen/ATen.h>
#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

namespace troupe {

struct coordinator_state {
  coordinator_options options;
  std::vector<replica_worker_actor> workers;
  /// The barrier of every round: each sync step, or each local_sgd averaging.
  std::optional<sync_policy> policy;
  std::optional<run_tracker> tracker;
  /// By rank, for the round in progress: gradients (sync) or weights (local_sgd averaging).
  std::vector<at::Tensor> pending;
  std::vector<at::Tensor> pending_momenta;  ///< by rank (local_sgd with average_momenta)
  std::vector<gradient_meta> pending_meta;  ///< by rank
  int64_t next_average_step = 0;            ///< local_sgd: the step the next round follows
  int64_t next_sync_step = 0;               ///< sync: the step whose gradients come next
  /// local_sgd: each step's reports by worker, until every live worker's is in.
  std::map<int64_t, std::vector<step_part>> step_reports;
  std::vector<at::Tensor> final_weights;  ///< by rank, after the last step
  int64_t weights_received = 0;
  std::optional<async_policy> async;       ///< async: when a worker may go on
  std::unique_ptr<replica_engine> server;  ///< async: the master weights and optimizer
  std::vector<std::chrono::steady_clock::time_point> waiting_since;  ///< async: by rank
  std::vector<step_part> async_parts;  ///< async: pushes since the last completed global step
  int64_t issued = 0;  ///< async: weights handed out, each owed one push (replicas x steps)
  caf::typed_response_promise<run_report> promise;
  bool finished = false;
  static inline const char* name = "coordinator";
};

namespace {

using self_pointer = coordinator_actor::stateful_pointer<coordinator_state>;

int64_t rank_of(const coordinator_state& st, const caf::actor_addr& addr) {
  for (std::size_t i = 0; i < st.workers.size(); ++i)
    if (st.workers[i].address() == addr)
      return static_cast<int64_t>(i);
  return -1;
}

// Ends the run: answers the run request, tells every worker to exit, quits. Idempotent.
void finish(self_pointer self, const std::string& error) {
  auto& st = self->state;
  if (st.finished)
    return;
  st.finished = true;
  at::Tensor weights;
  if (error.empty() && !st.final_weights.empty())
    weights = st.final_weights.front();
  deliver_and_quit(self, *st.tracker, error, st.tracker->report(error, weights), st.promise,
                   st.workers);
}

void fail_protocol(self_pointer self, const std::string& what) {
  finish(self, "protocol error: " + what);
}

// Reports a completed step and honors a stop request.
void step_completed(self_pointer self, int64_t step, const std::vector<step_part>& parts,
                    double reduce_s) {
  auto& st = self->state;
  auto progress = st.tracker->on_step_complete(step, parts, reduce_s);
  const auto& schedule = *st.options.setup->schedule;
  if (schedule.switches_after(step))
    st.tracker->record_event({{"event", "phase"},
                              {"step", step + 1},
                              {"policy", to_string(schedule.policy_at(step + 1))}});
  if (st.options.on_progress)
    st.options.on_progress(progress);
  if (st.options.stop_requested != nullptr && st.options.stop_requested->load() &&
      step + 1 < st.options.setup->total_steps)
    finish(self, "interrupted after step " + std::to_string(step));
}

// A sync step the workers combine themselves (a single replica has nothing to combine; a ring
// or NCCL sums among the replicas): each applies its gradient and the step completes from their
// reports, as under local_sgd.
bool workers_reduce(const coordinator_state& st, int64_t step) {
  const auto& setup = *st.options.setup;
  return (setup.job.parallelism.replicas == 1 || setup.ring ||
          setup.devices.gradients == gradient_path::nccl) &&
         setup.schedule->policy_at(step) == policy_kind::sync;
}

// Reports name their worker; one from another process must name a real one.
bool known_worker(self_pointer self, int64_t rank, const char* what) {
  const auto n = self->state.options.setup->job.parallelism.replicas;
  if (rank >= 0 && rank < n)
    return true;
  fail_protocol(self, std::string(what) + " from worker " + std::to_string(rank) + ", there are " +
                          std::to_string(n));
  return false;
}

std::string worker_name(const coordinator_state& st, int64_t rank) {
  auto name = "worker " + std::to_string(rank);
  const auto& places = st.options.worker_places;
  if (rank >= 0 && rank < static_cast<int64_t>(places.size()))
    name += " (" + places[static_cast<std::size_t>(rank)] + ")";
  return name;
}

// Reports arrive in any order; steps are recorded in worker order.
std::vector<step_part> by_worker(std::vector<step_part> parts) {
  std::sort(parts.begin(), parts.end(),
            [](const step_part& a, const step_part& b) { return a.worker < b.worker; });
  return parts;
}

// Takes the pending tensors of a completed round, in rank order, with each one's share.
std::vector<step_part> take_round(coordinator_state& st, const policy_decision& decision,
                                  std::vector<at::Tensor>& parts,
                                  std::vector<at::Tensor>& momenta) {
  std::vector<step_part> shares;
  for (auto rank : decision.contributors) {
    parts.push_back(std::move(st.pending[rank]));
    momenta.push_back(std::move(st.pending_momenta[rank]));
    const auto& m = st.pending_meta[rank];
    shares.push_back({m.worker, m.loss, m.samples});
  }
  return shares;
}

// sync, steps (b)-(c): combine the gradients in rank order and release every worker.
void complete_sync_step(self_pointer self, const policy_decision& decision, int64_t step) {
  auto& st = self->state;
  const auto start = std::chrono::steady_clock::now();
  std::vector<at::Tensor> parts, unused;
  const auto shares = take_round(st, decision, parts, unused);
  auto combined = sum_in_order(parts);
  parts.clear();
  const double reduce_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto meta = update_after(*st.options.setup, step);
  for (auto& w : st.workers)
    self->send(w, update_atom_v, meta, combined);
  st.next_sync_step = st.options.setup->schedule->next_step_under(policy_kind::sync, step + 1);
  step_completed(self, step, shares, reduce_s);
}

// local_sgd: average the weights (and momenta) by each replica's share of the batch.
void complete_averaging(self_pointer self, const policy_decision& decision, int64_t step) {
  auto& st = self->state;
  std::vector<at::Tensor> parts, momenta;
  const auto shares = take_round(st, decision, parts, momenta);
  int64_t total = 0;
  for (const auto& s : shares)
    total += s.samples;
  std::vector<double> weights;
  for (const auto& s : shares)
    weights.push_back(static_cast<double>(s.samples) / static_cast<double>(total));
  auto averaged = weighted_sum_in_order(parts, weights);
  at::Tensor averaged_momenta;
  if (momenta.front().defined())
    averaged_momenta = weighted_sum_in_order(momenta, weights);
  parts.clear();
  const auto& setup = *st.options.setup;
  st.next_average_step = setup.schedule->next_averaging_step(step + 1);
  const auto meta = update_after(*st.options.setup, step);
  for (auto& w : st.workers)
    self->send(w, averaged_atom_v, meta, averaged, averaged_momenta);
}

// async: a run is replicas x steps pushes, from whichever workers are quickest (fast workers
// contribute more: that is the point of not waiting for stragglers).
int64_t total_pushes(const coordinator_state& st) {
  return st.options.setup->total_steps * static_cast<int64_t>(st.workers.size());
}

// async: hands `rank` the current weights and the step to compute on them, unless every push
// the run needs is already owed, in which case the worker is done.
void send_params(self_pointer self, std::size_t rank) {
  auto& st = self->state;
  if (st.issued >= total_pushes(st))
    return;
  ++st.issued;
  // A snapshot: the master weights change with the next push while the worker computes.
  self->send(st.workers[rank], params_atom_v, st.async->version(), st.async->clock(rank),
             st.server->weights().clone());
}

// async: lets `rank` start its next step now, or records that the bound holds it back.
void async_pull(self_pointer self, std::size_t rank) {
  auto& st = self->state;
  const auto d = st.async->on_pull(rank);
  if (d.what == async_decision::kind::rejected)
    return fail_protocol(self, d.reason);
  if (d.what == async_decision::kind::wait)
    st.waiting_since[rank] = std::chrono::steady_clock::now();
  else
    send_params(self, rank);
}

// async: the server evaluates the master weights on the whole test set.
void async_evaluate(self_pointer self, int64_t step) {
  auto& st = self->state;
  const auto start = std::chrono::steady_clock::now();
  const auto r = st.server->evaluate({0, st.options.setup->data->test.size()});
  const double eval_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto progress = st.tracker->on_eval_shard(0, step, r.loss_sum, r.correct, r.count, eval_s, 1);
  if (progress && st.options.on_progress)
    st.options.on_progress(*progress);
}

// async, on each push: apply it at once; every `replicas` pushes make one global step (the
// same samples as a sync step); release workers the push let through; move the pusher on.
void async_push(self_pointer self, const gradient_meta& meta, const at::Tensor& grad) {
  auto& st = self->state;
  const auto& setup = *st.options.setup;
  const auto rank = static_cast<std::size_t>(meta.worker);
  const auto d = st.async->on_push(rank);
  if (d.what == async_decision::kind::rejected)
    return fail_protocol(self, d.reason);
  const double lr_scale = setup.job.parallelism.staleness_lr_scaling
                              ? 1.0 / (1.0 + static_cast<double>(d.staleness))
                              : 1.0;
  st.server->apply(grad, lr_scale);
  st.tracker->on_applied(meta.worker, meta.step, d.version, d.staleness);
  st.async_parts.push_back({meta.worker, meta.loss, meta.samples});
  const auto replicas = static_cast<int64_t>(st.workers.size());
  if (d.version % replicas == 0) {
    const int64_t step = d.version / replicas - 1;
    auto parts = by_worker(std::move(st.async_parts));
    st.async_parts.clear();
    step_completed(self, step, parts, 0.0);
    if (st.finished)
      return;
    if (should_evaluate(step, setup.total_steps, setup.steps_per_epoch,
                        setup.job.training.eval_interval))
      async_evaluate(self, step);
  }
  const auto now = std::chrono::steady_clock::now();
  for (auto r : d.released) {
    st.tracker->on_waited(static_cast<int64_t>(r), st.async->clock(r),
                          std::chrono::duration<double>(now - st.waiting_since[r]).count());
    send_params(self, r);
  }
  if (d.version == total_pushes(st)) {
    st.final_weights[0] = st.server->weights().clone();
    return finish(self, "");
  }
  async_pull(self, rank);
}

// Keeps a worker's contribution to the round in progress, then acts on the policy's verdict.
template <class Complete>
void contribute(self_pointer self, const gradient_meta& meta, at::Tensor tensor, at::Tensor momenta,
                Complete complete) {
  auto& st = self->state;
  auto decision = st.policy->on_gradient(static_cast<std::size_t>(meta.worker), st.policy->step());
  if (decision.kind == verdict::rejected)
    return fail_protocol(self, decision.reason);
  const auto rank = static_cast<std::size_t>(meta.worker);
  st.pending[rank] = std::move(tensor);
  st.pending_momenta[rank] = std::move(momenta);
  st.pending_meta[rank] = meta;
  if (decision.kind == verdict::complete)
    complete(decision);
}

coordinator_actor::behavior_type coordinator(self_pointer self, coordinator_options options) {
  auto& st = self->state;
  const auto replicas = options.setup->job.parallelism.replicas;
  st.options = std::move(options);
  const auto& setup = *st.options.setup;
  st.pending.resize(static_cast<std::size_t>(replicas));
  st.pending_momenta.resize(static_cast<std::size_t>(replicas));
  st.pending_meta.resize(static_cast<std::size_t>(replicas));
  st.final_weights.resize(static_cast<std::size_t>(replicas));
  st.policy.emplace(static_cast<std::size_t>(replicas));
  st.next_average_step = setup.schedule->next_averaging_step(0);
  st.next_sync_step = setup.schedule->next_step_under(policy_kind::sync, 0);
  st.tracker.emplace(replicas, setup.total_steps, setup.steps_per_epoch, st.options.metrics);
  if (setup.job.parallelism.policy == policy_kind::async) {
    st.async.emplace(static_cast<std::size_t>(replicas), setup.job.parallelism.max_staleness);
    st.waiting_since.resize(static_cast<std::size_t>(replicas));
  }

  end_run_on_failures(
      self,
      [self](const caf::actor_addr& addr) {
        const auto rank = rank_of(self->state, addr);
        return rank >= 0 ? worker_name(self->state, rank) : std::string("an actor");
      },
      [self](const std::string& error) { finish(self, error); });

  return {
      [self](run_atom) -> caf::result<run_report> {
        auto& st = self->state;
        st.promise = self->make_response_promise<run_report>();
        const auto n = st.options.setup->job.parallelism.replicas;
        for (int64_t rank = 0; rank < n; ++rank) {
          auto w = st.options.spawn_worker ? st.options.spawn_worker(rank, coordinator_actor{self})
                                           : spawn_replica_worker(self->system(), st.options.setup,
                                                                  rank, coordinator_actor{self});
          self->monitor(w);
          st.workers.push_back(w);
        }
        if (st.options.setup->devices.gradients == gradient_path::nccl) {
          // One id for the group; NCCL's set-up blocks each worker until all have it.
          const auto id = gpu::new_nccl_id();
          for (auto& w : st.workers)
            self->send(w, nccl_atom_v, id);
        }
        if (st.options.setup->ring)
          for (std::size_t rank = 0; rank < st.workers.size(); ++rank)
            self->send(st.workers[rank], link_atom_v,
                       caf::actor_cast<caf::actor>(st.workers[(rank + 1) % st.workers.size()]));
        if (st.async) {
          const auto& setup = *st.options.setup;
          st.server =
              std::make_unique<replica_engine>(setup.job, setup.data, setup.initial_weights, 0);
        }
        st.tracker->start();
        for (std::size_t rank = 0; rank < st.workers.size(); ++rank) {
          if (st.async)
            async_pull(self, rank);
          else
            self->send(st.workers[rank], compute_atom_v, int64_t{0});
        }
        return st.promise;
      },
      [self](gradient_atom, const gradient_meta& meta, const at::Tensor& grad) {
        auto& st = self->state;
        if (!sender_trusted(self, st.options.setup->trusted.get()) ||
            !known_worker(self, meta.worker, "a gradient"))
          return;
        if (meta.step != st.next_sync_step)
          return fail_protocol(self, "worker " + std::to_string(meta.worker) +
                                         " sent a gradient for step " + std::to_string(meta.step) +
                                         ", expected step " + std::to_string(st.next_sync_step));
        const auto step = meta.step;
        contribute(self, meta, grad, at::Tensor(),
                   [self, step](const policy_decision& d) { complete_sync_step(self, d, step); });
      },
      [self](average_atom, const gradient_meta& meta, const at::Tensor& weights,
             const at::Tensor& momenta) {
        auto& st = self->state;
        if (!sender_trusted(self, st.options.setup->trusted.get()) ||
            !known_worker(self, meta.worker, "weights"))
          return;
        if (meta.step != st.next_average_step)
          return fail_protocol(self, "worker " + std::to_string(meta.worker) +
                                         " sent weights to average after step " +
                                         std::to_string(meta.step) + ", expected after step " +
                                         std::to_string(st.next_average_step));
        const auto step = meta.step;
        contribute(self, meta, weights, momenta,
                   [self, step](const policy_decision& d) { complete_averaging(self, d, step); });
      },
      [self](push_atom, const gradient_meta& meta, int64_t, const at::Tensor& grad) {
        if (sender_trusted(self, self->state.options.setup->trusted.get()) &&
            known_worker(self, meta.worker, "a gradient"))
          async_push(self, meta, grad);
      },
      [self](const step_stats& s) {
        auto& st = self->state;
        if (!sender_trusted(self, st.options.setup->trusted.get()))
          return;
        if (!known_worker(self, s.worker, "step stats"))
          return;
        st.tracker->on_worker_step(s.worker, s.step, s.compute_s, s.comm_s, s.apply_s);
        if (st.options.setup->schedule->policy_at(s.step) != policy_kind::local_sgd &&
            !workers_reduce(st, s.step))
          return;  // sync and async steps complete where their gradients are applied
        auto& reports = st.step_reports[s.step];
        reports.push_back({s.worker, s.loss, s.samples});
        if (reports.size() < st.policy->live_workers())
          return;
        auto parts = by_worker(std::move(reports));
        st.step_reports.erase(s.step);
        step_completed(self, s.step, parts, 0.0);
      },
      [self](const eval_report& e) {
        auto& st = self->state;
        if (!sender_trusted(self, st.options.setup->trusted.get()) ||
            !known_worker(self, e.worker, "an evaluation"))
          return;
        auto progress =
            st.tracker->on_eval_shard(e.worker, e.step, e.loss_sum, e.correct, e.count, e.eval_s,
                                      static_cast<int64_t>(st.policy->live_workers()));
        if (progress && st.options.on_progress)
          st.options.on_progress(*progress);
      },
      [self](weights_atom, int64_t rank, const at::Tensor& weights) {
        auto& st = self->state;
        if (!sender_trusted(self, st.options.setup->trusted.get()))
          return;
        if (rank < 0 || rank >= static_cast<int64_t>(st.final_weights.size()) ||
            st.final_weights[static_cast<std::size_t>(rank)].defined())
          return fail_protocol(self,
                               "unexpected final weights from worker " + std::to_string(rank));
        st.final_weights[static_cast<std::size_t>(rank)] = weights;
        if (++st.weights_received < static_cast<int64_t>(st.policy->live_workers()))
          return;
        // Sync replicas apply identical updates, and local_sgd ends on an average: the
        // replicas' weights must agree bit for bit.
        for (std::size_t r = 1; r < st.final_weights.size(); ++r)
          if (!at::equal(st.final_weights[r], st.final_weights[0]))
            return finish(self, "replica " + std::to_string(r) +
                                    " ended with weights different from replica 0");
        finish(self, "");
      },
  };
}

}  // namespace

coordinator_actor spawn_coordinator(caf::actor_system& system, coordinator_options options) {
  return system.spawn(coordinator, std::move(options));
}

}  // namespace troupe
