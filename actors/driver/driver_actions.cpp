// The run driver carrying out a strategy's actions (core/policy/step_strategy.hpp), one small
// function per kind of action.
#include "actors/driver/run_driver_state.hpp"
#include "core/collective/compact_encoding.hpp"
#include "core/collective/sum_in_order.hpp"
#include "core/run/run_ending.hpp"

#include <ATen/ATen.h>
#include <caf/all.hpp>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <utility>

namespace troupe {
namespace {

void run(driver_pointer self, const act::compute& a) {
  release_steps(self, a);
}

// Takes the held tensors of `from`, in that order (the order fixes the float sums).
std::vector<at::Tensor> take_held(run_driver_state& st, const std::vector<int64_t>& from,
                                  bool momenta) {
  std::vector<at::Tensor> parts;
  for (auto rank : from) {
    auto& h = st.held[static_cast<std::size_t>(rank)];
    parts.push_back(std::exchange(momenta ? h.momenta : h.tensor, at::Tensor()));
  }
  return parts;
}

// DiLoCo's outer step (parallelism.outer_optimizer) from the replicas' `average`, which
// becomes the next round's base; without one, the average itself. `fragment`: the average is
// of that streaming fragment alone, and so is the step.
at::Tensor outer_weights(run_driver_state& st, at::Tensor average,
                         const std::optional<server_shard>& fragment) {
  if (!st.outer)
    return average;
  if (!st.outer->base().defined())  // the run's first round started from the initial weights
    st.outer->set_base(st.options.context->initial_weights.to(at::kCPU).reshape({-1}));
  if (fragment)
    return st.outer->step_part(average, fragment->begin);
  auto next = st.outer->step(average);
  st.outer->set_base(next);
  return next;
}

// The last average's values where `fragment` lies (all of them without one); undefined before
// the first whole average.
at::Tensor base_of(const run_driver_state& st, const std::optional<server_shard>& fragment) {
  if (!st.average_base.defined() || !fragment)
    return st.average_base;
  return st.average_base.narrow(0, fragment->begin, fragment->size);
}

// The replicas hold `values` where `fragment` lies (everywhere without one) as their last
// average. Out of place: the base may be a tensor the replicas of this process were sent.
void settle_base(run_driver_state& st, const at::Tensor& values,
                 const std::optional<server_shard>& fragment) {
  if (!fragment) {
    st.average_base = values;
  } else if (st.average_base.defined()) {  // a fragment before the first whole average: none yet
    auto next = st.average_base.clone();
    next.narrow(0, fragment->begin, fragment->size).copy_(values);
    st.average_base = std::move(next);
  }
}

// local_sgd: the weighted average of the replicas' weights (or of one streaming fragment's),
// as it goes to them. Under parallelism.compression weights handed in packed are the difference
// from the last average (average_base, there), and so is the average sent back, unless a
// replica handed in whole (it lost the base, or there is none yet: fragments go whole until
// the first whole average): then the average goes whole and becomes the base there. With an
// outer optimizer, what goes back is its step from the average (outer_weights).
at::Tensor average_weights(run_driver_state& st, std::vector<at::Tensor> parts,
                           const std::vector<double>& weights,
                           const std::optional<server_shard>& fragment) {
  const auto compression = st.plan->job.parallelism.compression;
  const auto base = base_of(st, fragment);
  bool whole = !base.defined();
  for (auto& part : parts) {
    if (!is_packed(part)) {
      whole = true;
    } else if (!base.defined()) {
      throw std::runtime_error("a replica handed in packed weights before the first average");
    } else {
      part = base + unpack(part).view_as(base);
    }
  }
  auto averaged = outer_weights(st, weighted_sum_in_order(parts, weights), fragment);
  if (compression == compression_kind::none)
    return averaged;
  if (whole) {
    settle_base(st, averaged, fragment);
    return averaged;
  }
  auto packed = pack(averaged - base, compression);
  const auto held = base + unpack(packed).view_as(base);
  settle_base(st, held, fragment);
  if (st.outer && fragment)  // the next round starts from what the replicas will hold
    st.outer->set_base_part(held, fragment->begin);
  else if (st.outer)
    st.outer->set_base(st.average_base);
  return packed;
}

void run(driver_pointer self, const act::combine& a) {
  auto& st = self->state;
  const auto start = std::chrono::steady_clock::now();
  if (a.kind == act::combine::what::gradients) {
    auto combined = sum_in_order(take_held(st, a.from, false));
    st.reduce_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (auto rank : a.to)
      tell(self, st.roster->at(rank), update_atom_v, a.outcome, combined);
    return;
  }
  auto averaged = average_weights(st, take_held(st, a.from, false), a.weights,
                                  fragment_after(*st.plan, a.outcome.step));
  auto momenta = take_held(st, a.from, true);
  at::Tensor averaged_momenta;
  if (momenta.front().defined())
    averaged_momenta = weighted_sum_in_order(momenta, a.weights);
  for (auto rank : a.to)
    tell(self, st.roster->at(rank), averaged_atom_v,
         averaged_weights{a.outcome, averaged, averaged_momenta});
}

// Records the step, then (in this order, as metrics.jsonl shows it) the policy that follows it,
// the progress, and what follows a step: releases, checkpoints, a stop request taking effect.
void run(driver_pointer self, const act::complete& a) {
  auto& st = self->state;
  auto progress = st.tracker->on_step_complete(a.step, a.parts, st.reduce_s);
  st.reduce_s = 0;
  if (const auto why = st.divergence.on_step(a.step, progress.loss))
    return finish(self, "diverged: " + *why, {}, run_status::diverged);
  if (a.switches_to)
    st.tracker->record(records::phase{a.step + 1, to_string(*a.switches_to), 0});
  if (st.options.run.on_progress)
    st.options.run.on_progress(progress);
  watch_completed(self, a.step);
  after_step_complete(self, a.step);
  membership_step_complete(self, a.step);
}

void run(driver_pointer self, const act::evaluate& a) {
  auto& st = self->state;
  if (a.ranks.empty()) {
    self->send(st.server, evaluate_atom_v, a.step);
    return;
  }
  for (auto rank : a.ranks)
    tell(self, st.roster->at(rank), evaluate_atom_v, a.step);
  // A pipeline's stages wait for the evaluation: pipeline 0's hold the weights it evaluates.
  if (st.keeper)
    for (int64_t stage = 0; stage < st.plan->job.parallelism.stages; ++stage)
      tell(self, st.roster->at(stage), snapshot_atom_v, a.step);
}

void run(driver_pointer self, const act::apply_push& a) {
  auto& st = self->state;
  auto& held = st.held[static_cast<std::size_t>(a.rank)];
  self->send(st.server, apply_atom_v, st.plan->lr_at(a.global_step) * a.lr_scale, a.rank,
             std::exchange(held.tensor, at::Tensor()));
  st.tracker->on_applied(a.rank, a.step, a.version, a.staleness);
}

void run(driver_pointer self, const act::hand_out& a) {
  auto& st = self->state;
  if (st.stop_at)
    return;  // stopping: the checkpoint's state is taken, no worker starts another step
  if (st.members && st.members->machine.waiting()) {
    st.members->deferred_hand_outs.push_back(a);  // too few nodes: nobody starts a step
    return;
  }
  self->send(
      st.server, hand_out_atom_v,
      hand_out{caf::actor_cast<caf::actor>(st.roster->at(a.rank)), a.rank, a.version, a.step});
}

void run(driver_pointer self, const act::waited& a) {
  self->state.tracker->on_waited(a.rank, a.clock, a.wait_s);
}

void run(driver_pointer self, const act::recount& a) {
  auto& st = self->state;
  for (const auto& [step, rows] : a.rows)
    st.tracker->recount(step, rows);
  log_line(st, st.roster->describe(a.rank) + ": the steps it trained after step " +
                   std::to_string(a.averaged_through) +
                   " (its last average) are lost with it; rows_per_epoch leaves them out");
}

void run(driver_pointer self, const act::training_done&) {
  auto& st = self->state;
  st.training_done = true;
  if (st.plan->parameter_server())
    self->request(st.server, caf::infinite, weights_atom_v)
        .then([self](const at::Tensor& weights) { take_final_weights(self, 0, weights); },
              [self](caf::error& e) {
                finish(self, "parameter server failed: " + self->system().render(e));
              });
  maybe_succeed(self);
}

void run(driver_pointer self, const act::violation& a) {
  fail_protocol(self, a.reason);
}

void run(driver_pointer self, const act::regroup& a) {
  want_regroup(self, a);
}

void run(driver_pointer self, const act::cannot_continue& a) {
  finish(self, self->state.roster->describe(a.rank) + " left and the " +
                   self->state.strategy->name() + " policy cannot go on without it");
}

}  // namespace

void execute(driver_pointer self, step_actions actions) {
  for (const auto& action : actions) {
    if (self->state.finished)
      return;
    std::visit([self](const auto& a) { run(self, a); }, action);
  }
}

}  // namespace troupe
