#include "actors/workers/ensemble_worker.hpp"

#include "core/ensemble/ensemble_engine.hpp"
#include "core/policy/step_pace.hpp"
#include "core/run/thread_team.hpp"
#include "gpu/worker_device.hpp"
#include "messages/error_code.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <memory>

namespace troupe {
namespace {

using clock_type = std::chrono::steady_clock;

struct ensemble_worker_state {
  context_ptr context;
  const run_plan* plan = nullptr;  ///< context->plan, for brevity
  run_driver_actor driver;
  std::unique_ptr<gpu::worker_device> device;  ///< its stream is current on the worker's thread
  std::unique_ptr<ensemble_engine> engine;     ///< built on the worker's thread, at first use
  step_pace pace;                              ///< which steps the driver released
  clock_type::time_point last_step_end;
  static inline const char* name = "ensemble_worker";
};

using self_pointer = ensemble_worker_actor::stateful_pointer<ensemble_worker_state>;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

ensemble_engine& engine_of(ensemble_worker_state& st) {
  if (!st.engine) {
    const auto device = st.plan->devices.workers.at(0);
    st.device = std::make_unique<gpu::worker_device>(device, "the ensemble's worker");
    st.engine = std::make_unique<ensemble_engine>(ensemble_plan_of(*st.plan), st.context->data,
                                                  device.is_cuda() ? st.device.get() : nullptr);
  }
  return *st.engine;
}

// The evaluation after `step`: the averaged prediction's sums stand for the run, each member's
// go with them; the stacked weights follow when early stopping may want them back.
void evaluate(self_pointer self, int64_t step) {
  auto& st = self->state;
  const auto start = clock_type::now();
  const auto r = engine_of(st).evaluate(evaluation_set(*st.context->data));
  eval_report report{0,
                     step,
                     r.ensemble_loss_sum,
                     static_cast<double>(r.ensemble_correct),
                     r.count,
                     seconds_since(start),
                     1,
                     r.loss_sum,
                     r.correct};
  report.confusion = r.confusion;
  self->send(st.driver, std::move(report));
  if (st.plan->snapshots())
    self->send(st.driver, snapshot_atom_v, evaluated_weights{step, 0, st.engine->weights()});
}

void run_step(self_pointer self, int64_t step) {
  auto& st = self->state;
  const auto start = clock_type::now();
  auto& engine = engine_of(st);
  const double loss = engine.step(step, st.plan->lr_at(step));
  const double data_wait_s = engine.take_data_wait_s();
  const double compute_s = std::max(0.0, seconds_since(start) - data_wait_s);
  const bool checkpoint = st.pace.finish(step);
  const double span_s = seconds_since(st.last_step_end);
  st.last_step_end = clock_type::now();
  self->send(st.driver, step_stats{0, step, loss, st.plan->job.training.batch_size, compute_s, 0.0,
                                   0.0, span_s, data_wait_s, 0.0, 0});
  const auto outcome = st.plan->rules.outcome_of(step);
  if (outcome.evaluate)
    evaluate(self, step);
  if (checkpoint)
    self->send(st.driver, checkpoint_atom_v,
               checkpoint_part{step, 0, st.engine->weights(), st.engine->optimizer_state()});
  if (outcome.last)
    self->send(st.driver, weights_atom_v, int64_t{0}, st.engine->weights());
  else
    self->send(self, advance_atom_v);  // through the mailbox: an exit request is seen between steps
}

void advance(self_pointer self) {
  auto& st = self->state;
  if (st.pace.may_start())
    run_step(self, st.pace.begin());
}

ensemble_worker_actor::behavior_type ensemble_worker(self_pointer self, context_ptr context,
                                                     run_driver_actor driver) {
  // On the worker's own (detached) thread: the team size set here is this worker's.
  use_plan_threads(*context->plan);
  auto& st = self->state;
  st.plan = context->plan.get();
  st.context = std::move(context);
  st.driver = std::move(driver);
  st.last_step_end = clock_type::now();
  self->set_exception_handler(
      [](caf::scheduled_actor*, std::exception_ptr& ep) { return make_error_from_exception(ep); });
  return {
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
      [self](restore_atom, const restored_state& r) {
        engine_of(self->state).restore(r.weights, r.optimizer);
        self->state.pace.start_at(r.step + 1);
      },
      [self](probe_atom) {
        const auto& st = self->state;
        self->send(st.driver, probe_atom_v,
                   worker_probe{0, 0, st.pace.next(), st.pace.busy(), false, 0});
      },
  };
}

}  // namespace

ensemble_worker_actor spawn_ensemble_worker(caf::actor_system& system, context_ptr context,
                                            run_driver_actor driver) {
  return system.spawn<caf::detached>(ensemble_worker, std::move(context), std::move(driver));
}

}  // namespace troupe
