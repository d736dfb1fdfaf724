// The run driver's checkpoints: which workers hold the state, when to ask them for it, when a
// checkpoint is complete enough to write, and how a resumed run hands the state back.
//
// Where the state is and how a consistent cut is taken:
//   - replica workers (sync, local_sgd, schedules) run only the steps the driver released; a
//     checkpoint after step s is announced before s is released, so each worker sends its state
//     when it finishes s. Under sync every replica holds the same state: rank 0's is enough;
//     otherwise each rank's optimizer (and, between averages, weights) are its own.
//   - pipeline stages and the parameter server are asked after the step completed: a stage is
//     then between two steps, and the server's mailbox holds the driver's applies in order.
#include "actors/driver/run_driver_state.hpp"
#include "core/checkpoint/run_checkpoint.hpp"
#include "core/config/parse_job.hpp"
#include "core/policy/step_pace.hpp"
#include "core/run/run_ending.hpp"

#include <caf/all.hpp>

#include <algorithm>

namespace troupe {
namespace {

// Replica workers and the ensemble's worker run only the steps the driver released.
bool paced(const run_plan& plan) {
  return plan.mode != run_mode::pipeline && !plan.parameter_server();
}

bool stop_requested(const run_driver_state& st) {
  const auto* flag = st.options.run.stop_requested;
  return flag != nullptr && flag->load();
}

// Asks for the state after `step` (a replica worker: when it finishes that step; a stage or
// the server: now).
void ask_for_checkpoint(driver_pointer self, int64_t step) {
  auto& st = self->state;
  st.pending_checkpoints.try_emplace(step);
  if (st.plan->parameter_server()) {
    self->send(st.server, checkpoint_atom_v, step);
    return;
  }
  if (st.members) {  // replicas: the first live one's state (sync), else every live one's
    for (auto r : live_ranks(st)) {
      tell(self, st.roster->at(r), checkpoint_atom_v, step);
      if (st.plan->checkpoint_parts() == 1)
        break;
    }
    return;
  }
  for (int64_t part = 0; part < st.plan->checkpoint_parts(); ++part)
    tell(self, st.roster->at(part), checkpoint_atom_v, step);
}

// Releases `steps` (in order) to every replica worker: a checkpoint due after one of them is
// announced first (after the last one: `checkpoint_last`), then one (compute, last step), which
// releases every step before it too (step_pace).
void release_block(driver_pointer self, const std::vector<int64_t>& steps, bool checkpoint_last) {
  if (steps.empty())
    return;
  auto& st = self->state;
  for (auto s : steps) {
    // A streaming fragment's average in flight after `s` is in no replica's state yet: a
    // checkpoint due there waits for the first step after which none is.
    const bool owed =
        (st.checkpoints && st.checkpoints->due(s, st.tracker->elapsed_s())) || st.checkpoint_owed;
    const bool in_flight = st.plan->schedule.fragment_in_flight(s);
    st.checkpoint_owed = owed && in_flight;
    // A checkpoint announced before a regroup is announced again: the workers forgot it then.
    if ((checkpoint_last && s == steps.back()) || st.pending_checkpoints.count(s) > 0 ||
        (owed && !in_flight))
      ask_for_checkpoint(self, s);
  }
  for (auto r : live_ranks(st))
    tell(self, st.roster->at(r), compute_atom_v, steps.back());
}

void record_written(driver_pointer self, const std::vector<checkpoint_written>& written) {
  for (const auto& w : written)
    self->state.tracker->record(records::checkpoint{w.step, w.bytes, w.seconds, w.error, 0});
}

// A stop request with checkpoints: stops at the first step whose checkpoint can still be taken.
void stop_with_checkpoint(driver_pointer self, int64_t completed) {
  auto& st = self->state;
  if (!st.release) {  // stages and the server: the state after `completed`, now
    st.stop_at = completed;
    if (st.pending_checkpoints.count(completed) == 0)
      ask_for_checkpoint(self, completed);
    return;
  }
  // Replica workers may already run the released steps: the first checkpoint already announced
  // ahead, else the next step, released now as the last one.
  auto ahead = st.pending_checkpoints.upper_bound(completed);
  if (ahead != st.pending_checkpoints.end()) {
    st.release->stop();
    st.stop_at = ahead->first;
    return;
  }
  // Not after a step with a streaming fragment's average in flight: no replica holds it yet.
  const auto steps = st.release->release_last(
      [&schedule = st.plan->schedule](int64_t s) { return !schedule.fragment_in_flight(s); });
  if (steps.empty() || st.plan->rules.is_last(steps.back())) {
    release_block(self, steps, false);
    return;  // every step runs: the run simply completes
  }
  st.stop_at = steps.back();
  release_block(self, steps, true);
}

// The parts a checkpoint waits for: with replicas, one per live replica where each keeps its own
// state (a lost one's never comes).
int64_t parts_expected(const run_driver_state& st) {
  if (st.members && st.plan->checkpoint_parts() > 1)
    return static_cast<int64_t>(live_ranks(st).size());
  return st.plan->checkpoint_parts();
}

// A lost replica's part is the first live one's: a run resumed from it starts every replica.
void fill_vacant_parts(const run_driver_state& st, std::vector<part_state>& parts) {
  if (!st.members || st.plan->checkpoint_parts() <= 1 ||
      static_cast<int64_t>(parts.size()) >= st.plan->checkpoint_parts())
    return;
  std::sort(parts.begin(), parts.end(),
            [](const part_state& a, const part_state& b) { return a.part < b.part; });
  const auto first = parts.front();
  for (int64_t r = 0; r < st.plan->checkpoint_parts(); ++r)
    if (std::none_of(parts.begin(), parts.end(), [r](const part_state& p) { return p.part == r; }))
      parts.push_back({r, first.weights, first.optimizer});
}

void write_if_complete(driver_pointer self, int64_t step) {
  auto& st = self->state;
  auto it = st.pending_checkpoints.find(step);
  if (it == st.pending_checkpoints.end())
    return;
  auto& p = it->second;
  const bool evaluated = !st.plan->rules.evaluates_after(step) || st.tracker->evaluated(step);
  if (static_cast<int64_t>(p.parts.size()) < parts_expected(st) || p.tracker.is_null() ||
      !evaluated || (st.keeper && !st.keeper->settled(step)))
    return;
  fill_vacant_parts(st, p.parts);
  run_checkpoint c;
  c.step = step;
  c.job = nlohmann::json(to_json(st.plan->job));
  c.progress = {{"tracker", std::move(p.tracker)},
                {"keeper", st.keeper ? st.keeper->save() : nlohmann::json()}};
  c.parts = std::move(p.parts);
  std::sort(c.parts.begin(), c.parts.end(),
            [](const part_state& a, const part_state& b) { return a.part < b.part; });
  if (st.keeper)
    c.best_weights = st.keeper->best_weights();
  c.outer_base = p.outer_base;
  c.outer_momentum = p.outer_momentum;
  c.average_base = p.average_base;
  st.pending_checkpoints.erase(it);
  st.writer->submit(std::move(c));
  if (st.stop_at != step)
    return;
  // The run stops here: it ends once the checkpoint is on disk (or could not be written).
  const auto written = st.writer->flush();
  record_written(self, written);
  auto reason =
      st.end_reason.empty() ? stop_reason(st.options.run, st.plan->rules, step) : st.end_reason;
  for (const auto& w : written)
    if (w.step == step && !w.error.empty())
      reason += "; its checkpoint could not be written: " + w.error;
  finish(self, reason);
}

// Once the step, or its evaluation, is recorded: the tracker's figures for the checkpoint (an
// evaluation adds its own to the step's counts).
void capture_figures(driver_pointer self, int64_t step, bool evaluation) {
  auto& st = self->state;
  if (st.finished)
    return;
  auto it = st.pending_checkpoints.find(step);
  if (it == st.pending_checkpoints.end())
    return;
  auto& figures = it->second.tracker;
  if (evaluation && figures.is_object())
    st.tracker->add_evaluation_to(figures);
  else
    figures = st.tracker->save();
  write_if_complete(self, step);
}

}  // namespace

void release_steps(driver_pointer self, const act::compute& a) {
  auto& st = self->state;
  if (st.stop_at && a.step > *st.stop_at)
    return;  // stopping: nothing past the checkpoint's step starts
  if (!st.release) {
    for (auto rank : a.ranks)
      tell(self, st.roster->at(rank), compute_atom_v, a.step);
    return;
  }
  release_block(self, st.release->start(a.step), false);
}

void after_step_complete(driver_pointer self, int64_t step) {
  auto& st = self->state;
  if (st.writer) {
    const auto written = st.writer->finished();
    record_written(self, written);
    if (const auto failure = write_failure(written); !failure.empty())
      return finish(self, failure);
  }
  if (st.release) {
    const auto pace = release_pace_for(st.tracker->last_step_s());
    st.release->set_pace(pace.window, pace.block);
    release_block(self, st.release->on_complete(step), false);
  }
  if (!st.release && st.checkpoints && !st.stop_at &&
      st.checkpoints->due(step, st.tracker->elapsed_s()))
    ask_for_checkpoint(self, step);
  if (stop_requested(st) && !st.stop_at && !st.plan->rules.is_last(step)) {
    if (!st.writer)
      return finish(self, stop_reason(st.options.run, st.plan->rules, step));
    stop_with_checkpoint(self, step);
  }
  if (auto it = st.pending_checkpoints.find(step); it != st.pending_checkpoints.end()) {
    const auto copy = [](const at::Tensor& t) { return t.defined() ? t.clone() : t; };
    if (st.outer) {
      it->second.outer_base = copy(st.outer->base());
      it->second.outer_momentum = copy(st.outer->momentum_buffer());
    }
    it->second.average_base = copy(st.average_base);
  }
  capture_figures(self, step, false);
}

void after_evaluation(driver_pointer self, int64_t step) {
  capture_figures(self, step, true);
}

void take_checkpoint_part(driver_pointer self, int64_t step, int64_t part, at::Tensor weights,
                          std::string optimizer) {
  auto& st = self->state;
  if (st.members && st.plan->checkpoint_parts() == 1)
    part = 0;  // sync replicas: the first live one stands for all (it sends its rank)
  auto it = st.pending_checkpoints.find(step);
  if (it == st.pending_checkpoints.end() || part < 0 || part >= st.plan->checkpoint_parts())
    return fail_protocol(self, "an unasked-for checkpoint part " + std::to_string(part) +
                                   " of step " + std::to_string(step));
  for (const auto& p : it->second.parts)
    if (p.part == part)
      return fail_protocol(self, "checkpoint part " + std::to_string(part) + " of step " +
                                     std::to_string(step) + " arrived twice");
  it->second.parts.push_back({part, std::move(weights), std::move(optimizer)});
  write_if_complete(self, step);
}

namespace {

// A resumed run: every worker (or the server) gets its part; the tracker and the keeper their
// figures.
void restore(driver_pointer self, const run_checkpoint* from) {
  auto& st = self->state;
  const auto& plan = *st.plan;
  const auto part_of = [&](int64_t worker) -> const part_state& {
    // Pipelines: every pipeline's stage s from stage s; replicas: their own, or rank 0's.
    const auto index = plan.mode == run_mode::pipeline ? worker % plan.job.parallelism.stages
                       : static_cast<int64_t>(from->parts.size()) > worker ? worker
                                                                           : 0;
    return from->parts.at(static_cast<std::size_t>(index));
  };
  if (plan.parameter_server()) {
    const auto& p = from->parts.at(0);
    self->send(st.server, restore_atom_v,
               restored_state{from->step, p.weights, p.optimizer, at::Tensor()});
  } else {
    for (int64_t w = 0; w < st.roster->size(); ++w) {
      const auto& p = part_of(w);
      tell(self, st.roster->at(w), restore_atom_v,
           restored_state{from->step, p.weights, p.optimizer, from->average_base});
    }
  }
  // Compressed averages go on against the base the run stood on (both sides hold it).
  st.average_base = from->average_base.defined() ? from->average_base.clone() : at::Tensor();
  st.tracker->restore(from->progress.at("tracker"));
  if (st.outer)  // a checkpoint of its first round holds no base: the initial weights then
    st.outer->restore(from->outer_base, from->outer_momentum);
  if (st.keeper)
    st.keeper->restore(from->progress.at("keeper"), from->best_weights);
}

}  // namespace

void begin_checkpoints(driver_pointer self) {
  auto& st = self->state;
  const auto& plan = *st.plan;
  if (paced(plan))
    st.release.emplace(plan.rules.total_steps(), release_window);
  if (st.options.run.resume_from)
    restore(self, st.options.run.resume_from.get());
  if (st.options.run.checkpoint_dir.empty())
    return;
  st.checkpoints.emplace(plan.job.checkpoint, plan.rules.total_steps(), st.tracker->elapsed_s());
  st.writer = std::make_unique<checkpoint_writer>(
      st.options.run.checkpoint_dir, plan.job.checkpoint.keep,
      plan.mode == run_mode::pipeline ? plan.job.parallelism.stages : 1,
      // An ensemble's part holds every member: no one model's names fit it (no weights.pt).
      plan.mode == run_mode::ensemble ? parameter_layout{} : plan.model.parameter_layout,
      plan.stage_parameters());
}

void close_checkpoints(driver_pointer self) {
  auto& st = self->state;
  if (st.writer)
    record_written(self, st.writer->flush());
}

}  // namespace troupe
