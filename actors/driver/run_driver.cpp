#include "actors/driver/run_driver.hpp"

#include "actors/driver/run_driver_state.hpp"
#include "actors/workers/ensemble_worker.hpp"
#include "actors/workers/parameter_server.hpp"
#include "actors/workers/replica_worker.hpp"
#include "actors/workers/stage_worker.hpp"
#include "core/checkpoint/run_checkpoint.hpp"
#include "core/ensemble/member_figures.hpp"
#include "core/policy/step_pace.hpp"
#include "core/run/make_strategy.hpp"
#include "core/run/run_ending.hpp"
#include "core/train/confusion.hpp"
#include "gpu/worker_device.hpp"
#include "messages/error_code.hpp"

#include <caf/all.hpp>

namespace troupe {
namespace {

using namespace std::chrono_literals;

// A worker of the plan's kind, here, on a thread of its own.
caf::actor spawn_here(driver_pointer self, int64_t rank) {
  auto& st = self->state;
  const run_driver_actor me{self};
  if (st.options.spawn_local)
    return st.options.spawn_local(self->system(), rank, me);
  if (st.plan->mode == run_mode::pipeline) {
    const auto& par = st.plan->job.parallelism;
    const stage_position where{rank % par.stages, par.stages, rank / par.stages, par.replicas};
    return caf::actor_cast<caf::actor>(
        spawn_stage_worker(self->system(), st.options.context, where, me));
  }
  if (st.plan->mode == run_mode::ensemble)
    return caf::actor_cast<caf::actor>(
        spawn_ensemble_worker(self->system(), st.options.context, me));
  return caf::actor_cast<caf::actor>(
      spawn_replica_worker(self->system(), st.options.context, rank, me));
}

// Links the workers as the plan says: pipeline neighbours, ring successors, one NCCL group.
void connect_workers(driver_pointer self) {
  auto& st = self->state;
  const auto& roster = *st.roster;
  const auto n = roster.size();
  if (st.plan->mode == run_mode::pipeline) {
    const auto stages = st.plan->job.parallelism.stages;
    for (int64_t w = 0; w < n; ++w) {
      const auto s = w % stages;
      tell(self, roster.at(w), link_atom_v, s > 0 ? roster.at(w - 1) : caf::actor(),
           s + 1 < stages ? roster.at(w + 1) : caf::actor());
    }
  }
  if (st.plan->gradients == gradient_meeting::ring)
    for (int64_t r = 0; r < n; ++r)
      tell(self, roster.at(r), link_atom_v, roster.at((r + 1) % n));
  if (st.plan->gradients == gradient_meeting::nccl) {
    // One id for the group; NCCL's set-up blocks each worker until all have it.
    const auto id = gpu::new_nccl_id();
    for (int64_t r = 0; r < n; ++r)
      tell(self, roster.at(r), nccl_atom_v, id);
  }
}

// Every worker is there: connect them, start the server, and let the strategy begin.
void begin(driver_pointer self) {
  auto& st = self->state;
  st.begun = true;
  connect_workers(self);
  if (st.plan->parameter_server()) {
    st.server = spawn_parameter_server(
        self->system(), st.options.context, run_driver_actor{self}, st.options.shard_hosts,
        st.options.run.cluster ? st.options.run.cluster->log : nullptr);
    self->monitor(st.server);
  }
  st.tracker->start();
  if (st.options.gatekeeper && carries_on(st))
    tell(self, st.options.gatekeeper, replace_atom_v, caf::actor_cast<caf::actor>(self));
  begin_checkpoints(self);
  begin_watch(self);
  execute(self, st.strategy->start());
}

void add_worker(driver_pointer self, int64_t rank, caf::actor worker) {
  auto& st = self->state;
  self->monitor(worker);
  st.roster->set(rank, std::move(worker));
  if (st.roster->complete())
    begin(self);
}

// Across processes: the node answers with the worker's handle; nothing waits for it. Its agent
// is watched until then: a node lost before its worker is there ends the run at once
// (end_run_on_failures), instead of when the request times out.
void start_remote(driver_pointer self, int64_t rank) {
  auto& st = self->state;
  const auto& agent = st.options.node_agents.at(static_cast<std::size_t>(rank));
  self->monitor(agent);
  self->request(agent, 60s, caf::spawn_atom_v, rank, caf::actor_cast<caf::actor>(self))
      .then([self, rank](caf::actor& worker) { add_worker(self, rank, std::move(worker)); },
            [self, rank](caf::error& e) {
              finish(self, "could not start worker " + std::to_string(rank) + " on " +
                               self->state.roster->place(rank) + ": " + self->system().render(e));
            });
}

void start_workers(driver_pointer self) {
  auto& st = self->state;
  for (int64_t rank = 0; rank < st.roster->size() && !st.finished; ++rank) {
    if (st.options.node_agents.empty())
      add_worker(self, rank, spawn_here(self, rank));
    else
      start_remote(self, rank);
  }
}

// Every message a worker sends names its rank, which must be a real one (the sender's node was
// checked before any handler: driver_behavior).
bool accept(driver_pointer self, int64_t rank, const char* what) {
  auto& st = self->state;
  if (!st.roster->contains(rank)) {
    fail_protocol(self, std::string(what) + " from worker " + std::to_string(rank) +
                            ", there are " + std::to_string(st.roster->size()));
    return false;
  }
  // A worker given up on (its node was lost, or fenced after a stop) may still send what it had
  // under way: dropped, it cannot touch a sum.
  return from_current_worker(self, rank);
}

// The membership epoch workers were last told; a gradient or weights of another was computed
// for a step that was abandoned (its worker has not seen the regroup yet): dropped.
bool current_epoch(driver_pointer self, const gradient_meta& meta) {
  auto& st = self->state;
  const auto epoch = st.members ? st.members->machine.announced_epoch() : 0;
  if (meta.epoch == epoch)
    return true;
  if (st.members)
    ++st.members->dropped;
  return false;
}

// Also checks the step: a report of a step outside the run breaks the protocol.
bool accept(driver_pointer self, int64_t rank, int64_t step, const char* what) {
  if (!accept(self, rank, what))
    return false;
  const auto steps = self->state.plan->worker_steps();
  if (step >= 0 && step < steps) {
    watch_heard(self, rank, step);
    return true;
  }
  fail_protocol(self, std::string(what) + " of step " + std::to_string(step) + " from worker " +
                          std::to_string(rank) + ", a worker runs at most " +
                          std::to_string(steps) + " steps");
  return false;
}

arrival arrival_of(const gradient_meta& m) {
  return {m.worker, m.step, m.loss, m.samples};
}

void hold(driver_pointer self, int64_t rank, at::Tensor tensor, at::Tensor momenta = {}) {
  self->state.held[static_cast<std::size_t>(rank)] = {std::move(tensor), std::move(momenta)};
}

void on_step_stats(driver_pointer self, const step_stats& s) {
  if (!accept(self, s.worker, s.step, "step stats"))
    return;
  self->state.tracker->on_worker_step(s.worker, s.step, s.compute_s, s.comm_s, s.apply_s,
                                      s.data_wait_s);
  if (s.loss_scale > 0)
    self->state.tracker->on_loss_scale(s.worker, s.step, s.loss_scale, s.skipped_steps);
  execute(self, self->state.strategy->on_report(
                    {s.worker, s.step, s.loss, s.samples, s.span_s, s.sum_rows}));
}

// A stacked ensemble's evaluation: each member's figures, for the report and the metrics.
// False (the run ended) for figures of other than the ensemble's members.
bool record_member_figures(driver_pointer self, const eval_report& e) {
  auto& st = self->state;
  const auto split = st.plan->data.validation_rows > 0 ? "validation" : "test";
  try {
    for (const auto& r : take_member_figures(st.ensemble_members, e.step, split, e.member_loss_sums,
                                             e.member_correct, e.count))
      st.tracker->record(r);
    return true;
  } catch (const std::invalid_argument& wrong) {
    fail_protocol(self, wrong.what());
    return false;
  }
}

void on_eval_report(driver_pointer self, const eval_report& e) {
  auto& st = self->state;
  if (!st.plan->rules.evaluates_after(e.step))
    return fail_protocol(self, "an evaluation after step " + std::to_string(e.step) +
                                   ", which the plan does not evaluate after");
  const bool members = !e.member_loss_sums.empty() || !e.member_correct.empty();
  if (members && !record_member_figures(self, e))
    return;
  // Counts of the data's classes, or none (a worker in another process may send anything).
  const auto classes = st.plan->data.classes;
  if (!e.confusion.empty() && (classes > max_confusion_classes ||
                               e.confusion.size() != static_cast<std::size_t>(classes * classes)))
    return fail_protocol(self, "an evaluation with " + std::to_string(e.confusion.size()) +
                                   " confusion counts for " + std::to_string(classes) + " classes");
  // A replica says how many shards its evaluation set was cut into (the live replicas then).
  const auto shards = e.of > 0 ? e.of : st.plan->eval_shards();
  auto progress = st.tracker->on_eval_shard(e.worker, e.step, e.loss_sum, e.metric_sum, e.count,
                                            e.eval_s, shards, e.confusion);
  if (!progress)
    return;
  if (st.options.run.on_progress)
    st.options.run.on_progress(*progress);
  if (st.keeper) {
    const auto [loss, accuracy] = *st.tracker->latest_evaluation();
    st.keeper->on_evaluation(e.step, loss, accuracy);
    maybe_stop_early(self);
  }
  after_evaluation(self, e.step);
  execute(self, st.strategy->on_evaluated(e.step));
  maybe_succeed(self);
}

// A worker in another process reports short steps in blocks of at most release_block_steps
// (actors/workers/replica_worker.cpp).
void on_step_block(driver_pointer self, const std::vector<step_stats>& block) {
  if (block.empty() || static_cast<int64_t>(block.size()) > release_block_steps)
    return fail_protocol(self, "a block of " + std::to_string(block.size()) +
                                   " step reports; a worker sends 1 to " +
                                   std::to_string(release_block_steps));
  for (const auto& s : block)
    on_step_stats(self, s);
}

void on_stage_stats(driver_pointer self, const stage_stats& s) {
  if (!accept(self, s.worker, s.step, "stage stats"))
    return;
  if (self->state.plan->mode != run_mode::pipeline)
    return fail_protocol(self, "stage stats from worker " + std::to_string(s.worker) +
                                   " in a run without pipelines");
  self->state.tracker->on_stage_timing(s);
  execute(self, self->state.strategy->on_report({s.worker, s.step, 0.0, 0}));
}

// A worker's contribution to a step: a sync gradient, local SGD's weights, an async push.
void on_gradient(driver_pointer self, const gradient_meta& meta, const at::Tensor& grad) {
  if (!accept(self, meta.worker, meta.step, "a gradient") || !current_epoch(self, meta))
    return;
  hold(self, meta.worker, grad);
  execute(self, self->state.strategy->on_gradient(arrival_of(meta)));
}

void on_weights(driver_pointer self, const gradient_meta& meta, const at::Tensor& weights,
                const at::Tensor& momenta) {
  if (!accept(self, meta.worker, meta.step, "weights") || !current_epoch(self, meta))
    return;
  hold(self, meta.worker, weights, momenta);
  execute(self, self->state.strategy->on_weights(arrival_of(meta)));
}

void on_push(driver_pointer self, const gradient_meta& meta, const at::Tensor& grad) {
  if (!accept(self, meta.worker, meta.step, "a gradient"))
    return;
  // A sharded server's shards hold the pushed slices already (actors/workers/server_shard).
  if (self->state.plan->sharded_server() == grad.defined())
    return fail_protocol(self, "a push from worker " + std::to_string(meta.worker) +
                                   (grad.defined() ? " with a gradient, which goes to the shards"
                                                   : " without a gradient"));
  hold(self, meta.worker, grad);
  execute(self, self->state.strategy->on_push(arrival_of(meta), self->state.tracker->elapsed_s()));
}

// Messages from nodes that never joined are dropped before any handler (trusted_nodes.hpp).
run_driver_actor::behavior_type driver_behavior(driver_pointer self) {
  return trusted_behavior<run_driver_actor::behavior_type>(
      self, self->state.options.context->trusted.get(),
      [self](run_atom) -> caf::result<run_report> {
        self->state.promise = self->make_response_promise<run_report>();
        start_workers(self);
        return self->state.promise;
      },
      [self](gradient_atom, const gradient_meta& meta, const at::Tensor& grad) {
        on_gradient(self, meta, grad);
      },
      [self](average_atom, const weights_hand_in& w) {
        on_weights(self, w.meta, w.weights, w.momenta);
      },
      [self](push_atom, const async_push& p) { on_push(self, p.meta, p.gradient); },
      [self](const step_stats& s) { on_step_stats(self, s); },
      [self](const std::vector<step_stats>& block) { on_step_block(self, block); },
      [self](const stage_stats& s) { on_stage_stats(self, s); },
      [self](const eval_report& e) {
        // The parameter server's report names worker 0, which every run has.
        if (accept(self, e.worker, e.step, "an evaluation"))
          on_eval_report(self, e);
      },
      [self](weights_atom, int64_t rank, const at::Tensor& weights) {
        if (!accept(self, rank, "final weights"))
          return;
        if (self->state.plan->parameter_server())
          return fail_protocol(self, "final weights from worker " + std::to_string(rank) +
                                         ", the parameter server holds them");
        take_final_weights(self, rank, weights);
      },
      [self](snapshot_atom, const evaluated_weights& w) {
        take_snapshot(self, w.step, w.part, w.weights);
        after_evaluation(self, w.step);
        maybe_succeed(self);
      },
      [self](checkpoint_atom, const checkpoint_part& c) {
        take_checkpoint_part(self, c.step, c.part, c.weights, c.optimizer);
      },
      [self](watch_atom) {
        if (self->current_sender() == self->ctrl())
          check_progress(self);
      },
      [self](membership_atom, const regroup_answer& a) {
        if (self->state.members && accept(self, a.rank, "a regroup answer"))
          on_regroup_answer(self, a.epoch, a.rank, a.applied, a.has_state);
      },
      [self](handover_atom, const handed_state& h) {
        if (self->state.members && accept(self, h.rank, "a state"))
          on_handover(self, h.epoch, h.rank, h.step, h.weights, h.optimizer);
      },
      [self](taken_atom, const state_taken& t) {
        if (self->state.members && accept(self, t.rank, "a state taken"))
          on_state_taken(self, t.epoch, t.rank, t.step);
      },
      [self](digest_atom, const digest_report& d) {
        if (self->state.members && accept(self, d.rank, "a digest of weights"))
          on_weights_digest(self, d.epoch, d.rank, d.step, d.sha256);
      },
      [self](probe_atom, const worker_probe& p) {
        if (accept(self, p.worker, "a probe's answer"))
          self->state.probes[p.worker] = p;
      },
      [self](replace_atom, const replacement_node& node) {
        // Only the gatekeeper of this process hands over replacements.
        const auto& sender = self->current_sender();
        if (self->state.members && sender && sender->node() == self->node())
          on_replacement(self, node);
      },
      [self](deadline_atom, int64_t id) {
        if (self->state.members && self->current_sender() == self->ctrl())
          on_wait_deadline(self, id);
      });
}

run_driver_actor::behavior_type run_driver(driver_pointer self, driver_options options) {
  auto& st = self->state;
  st.options = std::move(options);
  st.plan = st.options.context->plan.get();
  const auto& plan = *st.plan;
  const auto& resume = st.options.run.resume_from;
  st.strategy = make_strategy(plan, resume ? resume->step + 1 : 0);
  st.roster.emplace(plan.workers, plan.job.parallelism.stages, st.options.worker_places);
  st.tracker.emplace(plan.workers, plan.rules, st.options.run.metrics, tracking_of(plan));
  if (plan.mode == run_mode::pipeline)
    st.tracker->set_pipelines(plan.job.parallelism.replicas, plan.job.parallelism.stages,
                              plan.predicted_bubble);
  st.held.resize(static_cast<std::size_t>(plan.workers));
  if (const auto& o = plan.job.parallelism.outer_optimizer;
      o.enabled && plan.job.parallelism.policy == policy_kind::local_sgd)
    st.outer.emplace(o);
  if (plan.mode == run_mode::ensemble)
    st.ensemble_members = member_reports(plan.job);
  st.final_weights.resize(plan.parameter_server() ? 1 : static_cast<std::size_t>(plan.workers));
  if (plan.snapshots())
    st.keeper.emplace(plan.job.training.keep_best, plan.job.training.early_stopping,
                      plan.stage_parameters());
  begin_membership(self);
  end_run_on_failures(self);
  // Whatever else arrives (an error a worker answered a probe with, bytes a stranger sent) is
  // dropped without an answer: answering an error with an error could ping-pong for ever.
  self->set_default_handler(caf::drop);
  return driver_behavior(self);
}

}  // namespace

run_driver_actor spawn_run_driver(caf::actor_system& system, driver_options options) {
  return system.spawn(run_driver, std::move(options));
}

run_report await_report(caf::actor_system& system, const run_driver_actor& driver) {
  run_report report;
  caf::scoped_actor self{system};
  self->monitor(driver);
  self->send(driver, run_atom_v);
  bool done = false;
  while (!done) {
    // The driver always answers; the down_msg covers it dying without an answer.
    self->receive(
        [&](run_report& r) {
          report = std::move(r);
          done = true;
        },
        [&](caf::down_msg& msg) {
          report.status = run_status::failed;
          report.error = "coordinator stopped: " + system.render(msg.reason);
          done = true;
        },
        [&](caf::error& err) {
          report.status = run_status::failed;
          report.error = "coordinator: " + system.render(err);
          done = true;
        });
  }
  return report;
}

}  // namespace troupe
