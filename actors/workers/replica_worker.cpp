#include "actors/workers/replica_worker.hpp"

#include "actors/workers/evaluation_report.hpp"
#include "actors/workers/replica_reducers.hpp"
#include "actors/workers/replica_worker_state.hpp"
#include "actors/workers/worker_faults.hpp"
#include "core/run/thread_team.hpp"
#include "messages/error_code.hpp"

#include <ATen/ATen.h>
#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

namespace troupe {

namespace {

using namespace replica_internal;

// After the step's exchange (if any): report, evaluate if asked, then go on or hand in weights.
void finish_step(self_pointer self, const step_outcome& outcome, double comm_s, double apply_s) {
  auto& st = self->state;
  const bool checkpoint = st.pace.finish(outcome.step);
  const auto now = clock_type::now();
  const double span_s = std::chrono::duration<double>(now - st.last_step_end).count();
  st.last_step_end = now;
  report_step(
      self,
      step_stats{st.rank, outcome.step, st.loss, st.samples, st.compute_s, comm_s, apply_s, span_s,
                 st.data_wait_s, st.engine->loss_scale(), st.engine->skipped_steps(), st.sum_rows},
      outcome.evaluate || checkpoint || outcome.last);
  if (outcome.evaluate) {
    // Evaluated before the time is read: the order of a call's arguments is the compiler's
    // (eval_s read about 2e-8 s, the clock read first).
    const auto eval_start = clock_type::now();
    auto figures = st.engine->evaluate();
    tell_driver(self, evaluation_report(st.rank, outcome.step, std::move(figures),
                                        seconds_since(eval_start), st.live));
    // Replicas hold the same weights at an evaluation: the first live one's stand for all.
    if (st.position == 0 && st.plan->snapshots())
      tell_driver(self, snapshot_atom_v, evaluated_weights{outcome.step, 0, cpu_copy(*st.engine)});
  }
  if (checkpoint)
    tell_driver(
        self, checkpoint_atom_v,
        checkpoint_part{outcome.step, st.rank, cpu_copy(*st.engine), st.engine->optimizer_state()});
  if (outcome.last)
    tell_driver(self, weights_atom_v, st.rank, cpu_copy(*st.engine));
  else
    // Through the mailbox rather than a direct call, so that an exit request (another worker
    // failed) or a checkpoint announcement is seen between two steps.
    self->send(self, advance_atom_v);
}

// The tensor a sync step's sum is taken over, in place: the gradient with its rows slot, or a GPU
// worker's copy of it on the host where its gradients meet between processes (state:
// host_gradient).
const at::Tensor& gradient_to_sum(replica_worker_state& st) {
  const auto& gradient = st.engine->gradient_with_rows();
  if (!gradient.is_cuda() || st.plan->gradients != gradient_meeting::ring)
    return gradient;
  if (!st.host_gradient.defined())
    st.host_gradient =
        at::empty(gradient.sizes(), gradient.options().device(at::kCPU).pinned_memory(true));
  st.host_gradient.copy_(gradient);  // waits for the worker's stream
  return st.host_gradient;
}

// The replica's gradient (or its host copy) now holds the sum over all replicas (or is its own,
// alone): apply it, as the driver's combined gradient would have been. `comm_s`: how long the
// sum took.
void apply_own_sum(self_pointer self, int64_t step, double comm_s) {
  auto& st = self->state;
  const auto apply_start = clock_type::now();
  const auto& summed =
      st.host_gradient.defined() ? st.host_gradient : st.engine->gradient_with_rows();
  // Read on the host only: a GPU's would make the host wait for the device every step.
  st.sum_rows = summed.is_cuda() ? 0 : rows_in(summed);
  st.engine->apply(st.host_gradient.defined()
                       ? st.host_gradient.narrow(0, 0, st.engine->gradient().numel())
                       : st.engine->gradient(),
                   st.plan->lr_at(step));
  finish_step(self, st.plan->rules.outcome_of(step), comm_s, seconds_since(apply_start));
}

// A sum of the socket ring of `epoch` ended. A broken ring is most often a lost node: the driver
// hears of that too and names it (or, in a run that carries on, regroups without it), so this
// worker waits a node timeout before it fails with its own account (round -1: that time is up).
// The end of a ring an earlier regroup dropped is ignored.
void on_socket_sum(self_pointer self, int64_t epoch, int64_t round, const std::string& error) {
  auto& st = self->state;
  if (epoch != st.epoch)
    return;
  if (round >= 0 && error.empty())
    return apply_own_sum(self, round, seconds_since(st.sent_at));
  if (round >= 0) {
    self->delayed_send(self,
                       std::chrono::duration_cast<caf::timespan>(
                           std::chrono::duration<double>(st.plan->job.cluster.node_timeout_s + 1)),
                       ring_atom_v, socket_sum_end{epoch, -1, error});
    return;
  }
  self->quit(caf::make_error(errc::internal, "replica " + std::to_string(st.rank) + ": " + error));
}

// A sync step: the gradient goes where the plan says gradients meet (the epoch's reducer).
void exchange_sync(self_pointer self, int64_t step) {
  auto& st = self->state;
  if (!st.reducer)
    st.reducer = make_reducer(self);
  if (st.reducer->start(step, gradient_to_sum(st)) == reduce_outcome::summed)
    apply_own_sum(self, step, seconds_since(st.sent_at));
}

// What a worker hands to the driver outside sync steps (local SGD's weights and momenta, async
// pushes): a GPU worker's on the host, where the driver averages and the parameter server
// steps, copied once the worker's stream has written them; a CPU worker's by handle, as is.
at::Tensor on_host(const at::Tensor& tensor) {
  return tensor.defined() ? tensor.to(at::kCPU) : tensor;
}

// A step with no exchange of its own (a local_sgd step between averages, or one whose fragment
// goes on its way while it goes on): no evaluation, not the last step (those average all).
void finish_local_step(self_pointer self, int64_t step, double apply_s) {
  step_outcome local;
  local.step = step;
  finish_step(self, local, std::exchange(self->state.merge_wait_s, 0.0), apply_s);
}

// A local_sgd step: step alone; hand the weights in at averaging steps.
void step_locally(self_pointer self, int64_t step, const gradient_meta& meta) {
  auto& st = self->state;
  const auto& schedule = st.plan->schedule;
  st.engine->apply(st.engine->gradient(), st.plan->lr_at(step));
  const double apply_s = seconds_since(st.sent_at);
  if (!schedule.averages_after(step))
    return finish_local_step(self, step, apply_s);
  st.sent_at = clock_type::now();
  // The steps before it reach the driver first: the run's count of rows trained into the
  // weights (local_sgd_strategy) knows at the average which this replica's weights hold.
  send_unsent_reports(self);
  at::Tensor momenta;
  if (schedule.averages_momenta_after(step))
    momenta = on_host(st.engine->momenta());
  auto weights = on_host(st.engine->weights());
  const auto fragment = fragment_after(*st.plan, step);  // streaming: this fragment's values only
  const bool overlap = fragment && schedule.fragment_overlap() > 0;
  if (fragment)
    weights = weights.narrow(0, fragment->begin, fragment->size);
  const auto compression = st.plan->job.parallelism.compression;
  if (compression == compression_kind::none || !st.average_base.defined()) {
    if (overlap)  // a copy: this replica's own values train on while the driver reads it
      weights = weights.clone();
    tell_driver(self, average_atom_v, weights_hand_in{meta, weights, momenta});
  } else {
    const auto base =
        fragment ? st.average_base.narrow(0, fragment->begin, fragment->size) : st.average_base;
    tell_driver(self, average_atom_v,
                weights_hand_in{meta, pack(weights - base, compression), momenta});
  }
  st.apply_s = apply_s;
  if (overlap) {
    auto& f = st.fragment_in_flight.emplace();
    f.step = step;
    f.merge_before = schedule.merge_before(step);
    f.fragment = *fragment;
    finish_local_step(self, step, apply_s);
  }
}

// The fragment's average that came in flight is merged: `mix` of the way from this replica's
// values (which trained on meanwhile) to it.
void merge_fragment(replica_worker_state& st) {
  const auto& f = *st.fragment_in_flight;
  st.engine->set_weights_part(f.average, f.fragment.begin,
                              st.plan->job.parallelism.fragment_mix.value_or(0.5));
  st.fragment_in_flight.reset();
}

// Whether `step` may compute now: a fragment's average due before it is merged first, or the
// step waits for it (merged and computed when it comes: on_averaged).
bool ready_to_compute(replica_worker_state& st, int64_t step) {
  auto& f = st.fragment_in_flight;
  if (!f || step < f->merge_before)
    return true;
  if (!f->average.defined()) {
    f->held = step;
    f->held_at = clock_type::now();
    return false;
  }
  merge_fragment(st);
  return true;
}

void compute_step(self_pointer self, int64_t step) {
  auto& st = self->state;
  const auto start = clock_type::now();
  ensure_engine(st);
  if (!ready_to_compute(st, step))
    return;
  apply_worker_faults(st.plan->job.faults, st.rank, step);
  const auto policy = st.plan->schedule.policy_at(step);
  const auto result = st.engine->compute_gradient(step, policy == policy_kind::sync);
  st.loss = result.loss;
  st.samples = result.samples;
  st.sum_rows = 0;
  st.data_wait_s = result.data_wait_s;
  st.compute_s = std::max(0.0, seconds_since(start) - result.data_wait_s);
  st.sent_at = clock_type::now();
  const gradient_meta meta{st.rank, step, result.loss, result.samples, st.epoch};
  if (policy == policy_kind::sync)
    return exchange_sync(self, step);
  if (policy == policy_kind::local_sgd)
    return step_locally(self, step, meta);
  // async: comm_s is how long this worker waited for the weights it just computed on.
  tell_driver(self, step_stats{st.rank, step, st.loss, st.samples, st.compute_s, st.comm_s, 0.0,
                               0.0, st.data_wait_s, 0.0, 0});
  if (st.plan->sharded_server())
    return push_to_shards(self, meta);
  const auto compression = st.plan->job.parallelism.compression;
  const auto gradient = on_host(st.engine->gradient());
  if (compression == compression_kind::none)
    return tell_driver(self, push_atom_v, async_push{meta, st.version, gradient});
  if (!st.push_encoder)
    st.push_encoder.emplace(compression);
  tell_driver(self, push_atom_v, async_push{meta, st.version, st.push_encoder->encode(gradient)});
}

// The messages that arrive with a result of someone else's: the combined gradient, the averaged
// weights, the server's weights.
void on_update(self_pointer self, const update_meta& meta, const at::Tensor& combined) {
  auto& st = self->state;
  const double comm_s = seconds_since(st.sent_at);
  const auto apply_start = clock_type::now();
  st.device->follow_shared_work(combined);  // the driver summed on the device
  st.engine->apply(combined, st.plan->lr_at(meta.step));
  finish_step(self, meta, comm_s, seconds_since(apply_start));
}

// With fragment_overlap: the average of the fragment handed in after `step` came. It is kept
// until the step it is merged before, or merged now when that step already waits for it.
void take_fragment_average(self_pointer self, int64_t step, const at::Tensor& average) {
  auto& st = self->state;
  auto& f = st.fragment_in_flight;
  if (!f || f->step != step || f->average.defined())
    throw std::logic_error("an average of the fragment handed in after step " +
                           std::to_string(step) + ", which this replica does not wait for");
  f->average = average;
  if (!f->held)
    return;
  const auto held = *f->held;
  st.merge_wait_s += seconds_since(f->held_at);
  compute_step(self, held);  // merges first
}

// A streaming fragment's average as the driver sent it: whole, or under compression its
// difference from the last average there, packed. Under compression the base takes it there
// (out of place: the base may be the tensor another replica in this process was sent).
at::Tensor fragment_average(replica_worker_state& st, const server_shard& fragment,
                            const at::Tensor& sent) {
  auto average = sent;
  if (is_packed(sent)) {
    if (!st.average_base.defined())
      throw std::logic_error("a packed fragment average before a whole average");
    const auto base = st.average_base.narrow(0, fragment.begin, fragment.size);
    average = base + unpack(sent).view_as(base);
  }
  if (average.numel() != fragment.size)
    throw std::logic_error("an average of " + std::to_string(average.numel()) +
                           " values for a fragment of " + std::to_string(fragment.size));
  if (st.average_base.defined() && st.plan->job.parallelism.compression != compression_kind::none) {
    auto next = st.average_base.clone();
    next.narrow(0, fragment.begin, fragment.size).copy_(average);
    st.average_base = std::move(next);
  }
  return average;
}

void on_averaged(self_pointer self, const update_meta& meta, const at::Tensor& weights,
                 const at::Tensor& momenta) {
  auto& st = self->state;
  const double comm_s = seconds_since(st.sent_at);
  const auto apply_start = clock_type::now();
  if (const auto fragment = fragment_after(*st.plan, meta.step)) {
    const auto average = fragment_average(st, *fragment, weights);
    if (st.plan->schedule.fragment_overlap() > 0)
      return take_fragment_average(self, meta.step, average);
    st.engine->set_weights_part(average, fragment->begin);
    return finish_step(self, meta, comm_s, st.apply_s + seconds_since(apply_start));
  }
  if (is_packed(weights)) {
    // The average's difference from the last one (actors/driver/driver_actions): every replica adds
    // the same to the same base, so they stay identical. Out of place: the base may be the
    // tensor another replica in this process was sent.
    if (!st.average_base.defined())
      throw std::logic_error("packed averaged weights before a whole average");
    st.average_base = st.average_base + unpack(weights).view_as(st.average_base);
  } else if (st.plan->job.parallelism.compression != compression_kind::none) {
    st.average_base = weights;
  }
  st.engine->set_weights(is_packed(weights) ? st.average_base : weights);
  if (momenta.defined())
    st.engine->set_momenta(momenta);
  finish_step(self, meta, comm_s, st.apply_s + seconds_since(apply_start));
}

void on_params(self_pointer self, int64_t version, int64_t step, const at::Tensor& weights) {
  auto& st = self->state;
  st.comm_s = step > 0 ? seconds_since(st.sent_at) : 0.0;
  ensure_engine(st);
  // Under parallelism.compression the server sends the first weights whole, then what changed
  // since the last, packed (actors/workers/parameter_server).
  if (is_packed(weights)) {
    const auto& current = st.engine->weights();
    st.engine->set_weights(current + unpack(weights).view_as(current).to(current.device()));
  } else
    st.engine->set_weights(weights);
  st.version = version;
  compute_step(self, step);
}

}  // namespace

void replica_internal::compute_on(self_pointer self, int64_t version, int64_t step) {
  self->state.version = version;
  compute_step(self, step);
}

namespace {

// Starts the next step when the driver has released it and none is running.
void advance(self_pointer self) {
  auto& st = self->state;
  if (st.pace.may_start())
    compute_step(self, st.pace.begin());
  else
    send_unsent_reports(self);  // the driver releases more once it knows where this one is
}

// A checkpoint's state for this rank: the run resumes after `step`.
void restore(self_pointer self, const restored_state& r) {
  auto& st = self->state;
  // The driver restores the same base: compressed changes go on against it.
  st.average_base = r.average_base.defined() ? r.average_base.clone() : at::Tensor();
  ensure_engine(st);
  st.engine->restore(r.weights, r.optimizer);
  st.pace.start_at(r.step + 1);
}

// What this worker is doing, for the driver's step watchdog.
worker_probe probe(const replica_worker_state& st) {
  worker_probe p{st.rank, st.epoch, st.pace.next(), st.pace.busy(), false, 0};
  if (const auto received = st.reducer ? st.reducer->received() : -1; received >= 0) {
    p.in_ring = true;
    p.received = received;
  }
  return p;
}

void join_nccl(replica_worker_state& st, const std::string& nccl_id) {
  ensure_engine(st);
  st.device->join_nccl(nccl_id, static_cast<int>(st.rank),
                       static_cast<int>(st.plan->job.parallelism.replicas));
}

// The worker failed (an exception): the other replicas would wait for its gradient for ever,
// so the reductions it takes part in are aborted first.
caf::error on_failure(self_pointer self, std::exception_ptr& ep) {
  auto error = make_error_from_exception(ep);
  const auto& st = self->state;
  const auto why = "replica " + std::to_string(st.rank) + " failed";
  // The steps this one completed count in the run's figures, whatever failed after them.
  send_unsent_reports(self);
  if (const auto& reduction = st.context->reduction) {
    // Every replica summed the last step this one completed. The abort releases the others,
    // which then send the reports they held (exchange_sync); they must reach the driver before
    // this failure does, so that the run counts that step.
    reduction->abort(why);
    if (const auto last = reduction->last_reported(st.rank);
        last >= 0 && st.plan->schedule.policy_at(last) == policy_kind::sync)
      reduction->await_reports(last, std::chrono::seconds(1));
  }
  if (const auto& host = st.context->host)
    host->abort(why);
  return error;
}

void init_worker(self_pointer self, context_ptr context, int64_t rank, run_driver_actor driver) {
  // This runs on the worker's own (detached) thread: the OpenMP team size set here bounds this
  // replica's intra-op threads only.
  use_plan_threads(*context->plan);
  auto& st = self->state;
  st.plan = context->plan.get();
  st.context = std::move(context);
  st.rank = rank;
  st.position = rank;
  st.live = st.plan->job.parallelism.replicas;
  st.driver = std::move(driver);
  st.last_step_end = clock_type::now();
  self->set_exception_handler(
      [self](caf::scheduled_actor*, std::exception_ptr& ep) { return on_failure(self, ep); });
}

replica_worker_actor::behavior_type replica_worker(self_pointer self, context_ptr context,
                                                   int64_t rank, run_driver_actor driver) {
  init_worker(self, std::move(context), rank, std::move(driver));
  // Messages from nodes that never joined are dropped before any handler (trusted_nodes.hpp).
  return trusted_behavior<replica_worker_actor::behavior_type>(
      self, self->state.context->trusted.get(),
      [self](compute_atom, int64_t step) {
        self->state.pace.release(step);
        advance(self);
      },
      [self](advance_atom) { advance(self); },
      [self](checkpoint_atom, int64_t step) {
        if (!self->state.pace.announce_checkpoint(step))
          self->quit(protocol_violation("a checkpoint announced after step " +
                                        std::to_string(step) + ", which this worker passed"));
      },
      [self](restore_atom, const restored_state& r) { restore(self, r); },
      [self](link_atom, const caf::actor& successor) {
        ring_of(self->state).link(caf::actor_cast<replica_worker_actor>(successor));
      },
      [self](ring_atom, const ring_meta& meta, const at::Tensor& chunk) {
        if (meta.epoch != self->state.epoch) {
          ++self->state.dropped;  // a ring of another membership: fenced off
          return;
        }
        if (ring_of(self->state).on_chunk(self, meta, chunk))
          apply_own_sum(self, meta.round, seconds_since(self->state.sent_at));
      },
      [self](ring_atom, const socket_sum_end& end) {
        if (self->current_sender() == self->ctrl())
          on_socket_sum(self, end.epoch, end.round, end.error);  // its own runner, or its note
      },
      [self](nccl_atom, const std::string& nccl_id) { join_nccl(self->state, nccl_id); },
      [self](update_atom, const update_meta& meta, const at::Tensor& combined) {
        on_update(self, meta, combined);
      },
      [self](averaged_atom, const averaged_weights& a) {
        on_averaged(self, a.outcome, a.weights, a.momenta);
      },
      [self](params_atom, const server_weights& w) {
        if (self->state.plan->sharded_server())
          on_shard_slice(self, w);
        else
          on_params(self, w.version, w.step, w.weights);
      },
      [self](link_atom, const std::vector<caf::actor>& shards) { take_shards(self, shards); },
      [self](membership_atom, const membership_note& note, const caf::actor& successor) {
        on_membership(self, note, successor);
      },
      [self](handover_atom, int64_t epoch) { hand_over(self, epoch); },
      [self](state_atom, const state_chunk& chunk) { on_state_chunk(self, chunk); },
      [self](evaluate_atom, int64_t step) { evaluate_again(self, step); },
      [self](digest_atom, int64_t epoch) { report_digest(self, epoch); },
      [self](probe_atom) { tell_driver(self, probe_atom_v, probe(self->state)); });
}

}  // namespace

replica_worker_actor spawn_replica_worker(caf::actor_system& system, context_ptr context,
                                          int64_t rank, run_driver_actor driver) {
  return system.spawn<caf::detached>(replica_worker, std::move(context), rank, std::move(driver));
}

}  // namespace troupe
