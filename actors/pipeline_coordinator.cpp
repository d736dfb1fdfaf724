#include "actors/pipeline_coordinator.hpp"

#include "actors/run_ending.hpp"
#include "actors/stage_worker.hpp"
#include "core/collective/sum_in_order.hpp"
#include "core/policy/sync_policy.hpp"
#include "core/train/run_tracker.hpp"

#include <ATen/ATen.h>
#include <caf/all.hpp>

#include <algorithm>
#include <chrono>

namespace troupe {

struct pipeline_coordinator_state {
  coordinator_options options;
  int64_t stages = 1;
  int64_t pipelines = 1;
  std::vector<stage_worker_actor> workers;       ///< by worker id: pipeline * stages + stage
  std::vector<sync_policy> barriers;             ///< by stage: the pipelines' gradients of a step
  std::vector<std::vector<at::Tensor>> pending;  ///< by stage, by pipeline
  std::vector<step_part> losses;                 ///< by pipeline, from its last stage
  std::vector<stage_stats> stats;                ///< by worker, for the step in progress
  int64_t stats_received = 0;
  int64_t step = 0;  ///< the step in progress
  double reduce_s = 0;
  int64_t evals_pending = 0;
  bool last_step_done = false;
  std::vector<at::Tensor> final_weights;  ///< by worker
  int64_t weights_received = 0;
  std::optional<run_tracker> tracker;
  caf::typed_response_promise<run_report> promise;
  bool finished = false;
  static inline const char* name = "pipeline_coordinator";
};

namespace {

using self_pointer = pipeline_coordinator_actor::stateful_pointer<pipeline_coordinator_state>;

std::string describe_worker(const pipeline_coordinator_state& st, int64_t worker) {
  return "stage " + std::to_string(worker % st.stages) + " of replica " +
         std::to_string(worker / st.stages) + " (worker " + std::to_string(worker) + ")";
}

// Ends the run: answers the run request, tells every stage to exit, quits. Idempotent.
void finish(self_pointer self, const std::string& error, at::Tensor weights = {}) {
  auto& st = self->state;
  if (st.finished)
    return;
  st.finished = true;
  auto report = st.tracker->report(error, std::move(weights));
  report.replicas = st.pipelines;  // the tracker counts workers: replicas x stages
  deliver_and_quit(self, *st.tracker, error, std::move(report), st.promise, st.workers);
}

void fail_protocol(self_pointer self, const std::string& what) {
  finish(self, "protocol error: " + what);
}

bool valid_worker(const pipeline_coordinator_state& st, int64_t worker) {
  return worker >= 0 && worker < static_cast<int64_t>(st.workers.size());
}

void start_step(self_pointer self, int64_t step) {
  auto& st = self->state;
  st.step = step;
  st.stats_received = 0;
  st.reduce_s = 0;
  for (auto& w : st.workers)
    self->send(w, compute_atom_v, step);
}

// Every stage has handed in its weights and the last evaluation is in: check and assemble.
void maybe_succeed(self_pointer self) {
  auto& st = self->state;
  if (!st.last_step_done || st.evals_pending > 0 ||
      st.weights_received < static_cast<int64_t>(st.workers.size()))
    return;
  std::vector<at::Tensor> pipeline0;
  for (int64_t s = 0; s < st.stages; ++s) {
    const auto& first = st.final_weights[static_cast<std::size_t>(s)];
    for (int64_t r = 1; r < st.pipelines; ++r)
      if (!at::equal(st.final_weights[static_cast<std::size_t>(r * st.stages + s)], first))
        return finish(self, "stage " + std::to_string(s) + " of replica " + std::to_string(r) +
                                " ended with weights different from replica 0");
    pipeline0.push_back(first);
  }
  finish(self, "", at::cat(pipeline0));
}

// Step (c): everything about the step is in.
void complete_step(self_pointer self) {
  auto& st = self->state;
  const auto& setup = *st.options.setup;
  for (int64_t r = 0; r < st.pipelines; ++r) {
    // The pipeline's flush window: from its earliest start to its latest finish.
    int64_t begin = INT64_MAX, end = INT64_MIN;
    for (int64_t s = 0; s < st.stages; ++s) {
      const auto& x = st.stats[static_cast<std::size_t>(r * st.stages + s)];
      begin = std::min(begin, x.first_op_ns);
      end = std::max(end, x.last_op_ns);
    }
    const double window_s = static_cast<double>(end - begin) * 1e-9;
    for (int64_t s = 0; s < st.stages; ++s) {
      const auto& x = st.stats[static_cast<std::size_t>(r * st.stages + s)];
      st.tracker->on_worker_step(x.worker, x.step, x.busy_s, x.comm_s, x.apply_s);
      st.tracker->on_stage_step(x.worker, r, s, x.step, x.busy_s,
                                std::max(0.0, window_s - x.busy_s), x.peak_live);
    }
  }
  auto progress = st.tracker->on_step_complete(st.step, st.losses, st.reduce_s);
  if (st.options.on_progress)
    st.options.on_progress(progress);
  const bool last = st.step + 1 >= setup.total_steps;
  if (st.options.stop_requested != nullptr && st.options.stop_requested->load() && !last)
    return finish(self, "interrupted after step " + std::to_string(st.step));
  if (should_evaluate(st.step, setup.total_steps, setup.steps_per_epoch,
                      setup.job.training.eval_interval)) {
    st.evals_pending = st.pipelines;
    for (int64_t r = 0; r < st.pipelines; ++r)
      self->send(st.workers[static_cast<std::size_t>(r * st.stages)], evaluate_atom_v, st.step);
  }
  st.last_step_done = last;
  if (last)
    return maybe_succeed(self);
  if (st.evals_pending == 0)
    start_step(self, st.step + 1);
}

// Step (b): one stage's gradients from every pipeline are in.
void reduce_stage(self_pointer self, int64_t stage, const policy_decision& decision) {
  auto& st = self->state;
  const auto start = std::chrono::steady_clock::now();
  auto& pending = st.pending[static_cast<std::size_t>(stage)];
  std::vector<at::Tensor> parts;
  for (auto r : decision.contributors)
    parts.push_back(std::move(pending[r]));
  auto combined = sum_in_order(parts);
  parts.clear();
  st.reduce_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto& setup = *st.options.setup;
  update_meta meta;
  meta.step = st.step;
  meta.last = st.step + 1 >= setup.total_steps;
  for (int64_t r = 0; r < st.pipelines; ++r)
    self->send(st.workers[static_cast<std::size_t>(r * st.stages + stage)], update_atom_v, meta,
               combined);
}

pipeline_coordinator_actor::behavior_type pipeline_coordinator(self_pointer self,
                                                               coordinator_options options) {
  auto& st = self->state;
  st.options = std::move(options);
  const auto& setup = *st.options.setup;
  st.stages = setup.job.parallelism.stages;
  st.pipelines = setup.job.parallelism.replicas;
  const auto workers = static_cast<std::size_t>(st.stages * st.pipelines);
  for (int64_t s = 0; s < st.stages; ++s)
    st.barriers.emplace_back(static_cast<std::size_t>(st.pipelines));
  st.pending.assign(static_cast<std::size_t>(st.stages),
                    std::vector<at::Tensor>(static_cast<std::size_t>(st.pipelines)));
  st.losses.resize(static_cast<std::size_t>(st.pipelines));
  st.stats.resize(workers);
  st.final_weights.resize(workers);
  st.tracker.emplace(static_cast<int64_t>(workers), setup.total_steps, setup.steps_per_epoch,
                     st.options.metrics);
  st.tracker->set_predicted_bubble(
      predicted_bubble_fraction(st.stages, setup.job.parallelism.micro_batches));

  end_run_on_failures(
      self,
      [self](const caf::actor_addr& addr) {
        const auto& st = self->state;
        for (std::size_t i = 0; i < st.workers.size(); ++i)
          if (st.workers[i].address() == addr)
            return describe_worker(st, static_cast<int64_t>(i));
        return std::string("an actor");
      },
      [self](const std::string& error) { finish(self, error); });

  return {
      [self](run_atom) -> caf::result<run_report> {
        auto& st = self->state;
        st.promise = self->make_response_promise<run_report>();
        const pipeline_coordinator_actor me{self};
        for (int64_t r = 0; r < st.pipelines; ++r)
          for (int64_t s = 0; s < st.stages; ++s) {
            auto w = spawn_stage_worker(self->system(), st.options.setup,
                                        stage_position{s, st.stages, r, st.pipelines}, me);
            self->monitor(w);
            st.workers.push_back(w);
          }
        for (int64_t r = 0; r < st.pipelines; ++r)
          for (int64_t s = 0; s < st.stages; ++s) {
            const auto at = [&](int64_t stage) {
              return stage < 0 || stage >= st.stages
                         ? caf::actor()
                         : caf::actor_cast<caf::actor>(
                               st.workers[static_cast<std::size_t>(r * st.stages + stage)]);
            };
            self->send(st.workers[static_cast<std::size_t>(r * st.stages + s)], link_atom_v,
                       at(s - 1), at(s + 1));
          }
        st.tracker->start();
        start_step(self, 0);
        return st.promise;
      },
      [self](gradient_atom, const gradient_meta& meta, const at::Tensor& grad) {
        auto& st = self->state;
        if (!valid_worker(st, meta.worker) || meta.step != st.step)
          return fail_protocol(self, "worker " + std::to_string(meta.worker) +
                                         " sent a gradient for step " + std::to_string(meta.step) +
                                         ", expected step " + std::to_string(st.step));
        const auto stage = meta.worker % st.stages;
        const auto pipeline = static_cast<std::size_t>(meta.worker / st.stages);
        auto d = st.barriers[static_cast<std::size_t>(stage)].on_gradient(pipeline, meta.step);
        if (d.kind == verdict::rejected)
          return fail_protocol(self, describe_worker(st, meta.worker) + ": " + d.reason);
        st.pending[static_cast<std::size_t>(stage)][pipeline] = grad;
        if (stage + 1 == st.stages)
          st.losses[pipeline] = {meta.worker, meta.loss, meta.samples};
        if (d.kind == verdict::complete)
          reduce_stage(self, stage, d);
      },
      [self](const stage_stats& s) {
        auto& st = self->state;
        if (!valid_worker(st, s.worker) || s.step != st.step)
          return fail_protocol(self, "unexpected stage stats from worker " +
                                         std::to_string(s.worker) + " for step " +
                                         std::to_string(s.step));
        st.stats[static_cast<std::size_t>(s.worker)] = s;
        if (++st.stats_received == static_cast<int64_t>(st.workers.size()))
          complete_step(self);
      },
      [self](const eval_report& e) {
        auto& st = self->state;
        if (st.evals_pending <= 0 || e.step != st.step)
          return fail_protocol(self, "unexpected evaluation of step " + std::to_string(e.step));
        // The last stage of pipeline e.worker did the scoring.
        const auto worker = e.worker * st.stages + st.stages - 1;
        auto progress = st.tracker->on_eval_shard(worker, e.step, e.loss_sum, e.correct, e.count,
                                                  e.eval_s, st.pipelines);
        if (progress && st.options.on_progress)
          st.options.on_progress(*progress);
        if (--st.evals_pending > 0)
          return;
        if (st.last_step_done)
          maybe_succeed(self);
        else
          start_step(self, st.step + 1);
      },
      [self](weights_atom, int64_t worker, const at::Tensor& weights) {
        auto& st = self->state;
        if (!valid_worker(st, worker) ||
            st.final_weights[static_cast<std::size_t>(worker)].defined())
          return fail_protocol(self,
                               "unexpected final weights from worker " + std::to_string(worker));
        st.final_weights[static_cast<std::size_t>(worker)] = weights;
        ++st.weights_received;
        maybe_succeed(self);
      },
  };
}

}  // namespace

pipeline_coordinator_actor spawn_pipeline_coordinator(caf::actor_system& system,
                                                      coordinator_options options) {
  return system.spawn(pipeline_coordinator, std::move(options));
}

}  // namespace troupe
