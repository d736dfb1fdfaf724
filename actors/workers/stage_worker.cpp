#include "actors/workers/stage_worker.hpp"

#include "actors/workers/evaluation_report.hpp"
#include "actors/workers/worker_faults.hpp"
#include "core/errors.hpp"
#include "core/pipeline/pipeline_schedule.hpp"
#include "core/run/thread_team.hpp"
#include "core/train/confusion.hpp"
#include "gpu/worker_device.hpp"
#include "messages/error_code.hpp"

#include <ATen/ATen.h>
#include <caf/all.hpp>

#include <chrono>
#include <map>
#include <stdexcept>

namespace troupe {

using clock_type = std::chrono::steady_clock;

struct stage_worker_state {
  context_ptr context;
  stage_position where;
  int64_t worker = 0;
  run_driver_actor driver;
  caf::actor previous;                         ///< invalid on the first stage
  caf::actor next;                             ///< invalid on the last stage
  std::unique_ptr<gpu::worker_device> device;  ///< before engine: the engine uploads through it
  std::unique_ptr<stage_engine> engine;
  std::vector<pipeline_op> ops;  ///< this stage's operations in every step
  int64_t step = 0;              ///< the step running, or the next one to run
  bool running = false;          ///< (compute, step) arrived and operations remain
  std::size_t next_op = 0;
  std::map<int64_t, at::Tensor> activations;  ///< by micro-batch, arrived ahead of their op
  std::map<int64_t, at::Tensor> gradients;    ///< by micro-batch, arrived ahead of their op
  clock_type::time_point step_began;
  double busy_s = 0;
  int64_t peak_live = 0;
  clock_type::time_point sent_at;  ///< when the stage gradient left
  evaluation_result eval;          ///< last stage: the evaluation in progress
  int64_t eval_chunks_seen = 0;
  clock_type::time_point eval_began;
  static inline const char* name = "stage_worker";
};

namespace {

using self_pointer = stage_worker_actor::stateful_pointer<stage_worker_state>;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

int64_t nanoseconds(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Ends the stage with errc::protocol_error (the exception handler converts it).
[[noreturn]] void violated(const stage_worker_state& st, const std::string& what) {
  throw protocol_error("stage " + std::to_string(st.where.stage) + ": " + what);
}

// A tensor this stage computed, for the driver: on a GPU, the stage's stream must have written it
// before the driver's thread reads it.
at::Tensor finished(stage_worker_state& st, at::Tensor tensor) {
  st.device->finish_work();
  return tensor;
}

// The header of an activation or gradient this stage hands to the stage beside it: on a GPU it
// carries a mark of this stage's stream that the receiver's stream waits for, so that this
// stage's thread goes on queueing its next operation instead of waiting for its stream.
micro_meta handed_off(stage_worker_state& st, int64_t step, int64_t micro, bool eval) {
  return {step, micro, eval, st.device->mark_ready()};
}

// A tensor another actor computed, on this stage's device. One with a ready mark (from a stage)
// is waited for on the device; one without (from the driver, which sums on the device's default
// stream, or from a CPU worker) follows the default stream. On the same GPU it is read in place,
// its memory kept until this stage's stream is done with it; from another GPU it is copied over
// and the copy waited for, so that its sender may reuse the memory.
at::Tensor arrived(stage_worker_state& st, const at::Tensor& tensor,
                   const ready_mark* ready = nullptr) {
  if (!tensor.defined() || !tensor.is_cuda())
    return tensor;
  if (ready != nullptr)
    st.device->follow_mark(*ready, tensor);
  if (tensor.device() == st.device->device()) {
    if (ready == nullptr)
      st.device->follow_shared_work(tensor);
    return tensor;
  }
  // LibTorch orders a copy between GPUs after the destination's stream, which waits for the mark.
  auto here = tensor.to(st.device->device());
  st.device->finish_work();
  return here;
}

// The weights as they are now, on the host, owned by the message (the engine goes on).
at::Tensor host_weights(const stage_worker_state& st) {
  return st.engine->weights().to(at::kCPU, /*non_blocking=*/false, /*copy=*/true);
}

// The step's work is done: hand the accumulated stage gradient to the driver. The step's window
// ends once the device has finished it, not when its last kernels were queued.
void send_gradient(self_pointer self) {
  auto& st = self->state;
  st.running = false;
  const gradient_meta meta{st.worker, st.step, st.where.last() ? st.engine->step_loss() : 0.0,
                           st.engine->step_rows()};
  auto gradient = finished(st, st.engine->step_gradient());
  st.sent_at = clock_type::now();
  self->send(st.driver, gradient_atom_v, meta, std::move(gradient));
}

// One forward or backward operation, its time added to the step's busy time (on a GPU the
// device's time, which finish_step reads; the host's clock times the CPU's).
template <class Operation>
at::Tensor timed_op(stage_worker_state& st, Operation&& operation) {
  const auto start = clock_type::now();
  st.device->begin_op();
  auto out = operation();
  st.device->end_op();
  st.busy_s += seconds_since(start);
  return out;
}

// Runs operations in schedule order while their inputs are at hand.
void advance(self_pointer self) {
  auto& st = self->state;
  while (st.running && st.next_op < st.ops.size()) {
    const auto op = st.ops[st.next_op];
    if (op.what == pipeline_op::kind::forward) {
      at::Tensor input;
      if (!st.where.first()) {
        auto it = st.activations.find(op.micro);
        if (it == st.activations.end())
          return;
        input = std::move(it->second);
        st.activations.erase(it);
      }
      auto out = timed_op(st, [&] { return st.engine->forward(op.micro, input); });
      st.peak_live = std::max(st.peak_live, st.engine->live_activations());
      if (!st.where.last())
        self->send(caf::actor_cast<stage_worker_actor>(st.next), forward_atom_v,
                   handed_off(st, st.step, op.micro, false), std::move(out));
    } else {
      at::Tensor grad;
      if (!st.where.last()) {
        auto it = st.gradients.find(op.micro);
        if (it == st.gradients.end())
          return;
        grad = std::move(it->second);
        st.gradients.erase(it);
      }
      auto back = timed_op(st, [&] { return st.engine->backward(op.micro, grad); });
      if (!st.where.first())
        self->send(caf::actor_cast<stage_worker_actor>(st.previous), backward_atom_v,
                   handed_off(st, st.step, op.micro, false), std::move(back));
    }
    ++st.next_op;
  }
  if (st.running)
    send_gradient(self);
}

// Keeps an activation or gradient of the current step until its operation comes up.
void receive_input(self_pointer self, std::map<int64_t, at::Tensor>& inbox, const char* what,
                   const micro_meta& meta, at::Tensor tensor) {
  auto& st = self->state;
  if (meta.step != st.step)
    violated(st, std::string(what) + " of step " + std::to_string(meta.step) + " while at step " +
                     std::to_string(st.step));
  if (meta.micro < 0 || meta.micro >= st.context->plan->job.parallelism.micro_batches ||
      inbox.count(meta.micro) > 0)
    violated(st,
             std::string("unexpected ") + what + " of micro-batch " + std::to_string(meta.micro));
  inbox.emplace(meta.micro, arrived(st, tensor, meta.ready.get()));
  advance(self);
}

// Evaluation chunks pass through every stage; the last one scores them and reports.
void evaluate_chunk(self_pointer self, const micro_meta& meta, const at::Tensor& input) {
  auto& st = self->state;
  if (st.eval_chunks_seen == 0)
    st.eval_began = clock_type::now();
  const auto step = meta.step;
  auto out = st.engine->eval_forward(meta.micro, arrived(st, input, meta.ready.get()));
  if (!st.where.last()) {
    self->send(caf::actor_cast<stage_worker_actor>(st.next), forward_atom_v,
               handed_off(st, step, meta.micro, true), std::move(out));
    return;
  }
  const auto r = st.engine->eval_score(meta.micro, out);
  st.eval.loss_sum += r.loss_sum;
  st.eval.metric_sum += r.metric_sum;
  st.eval.count += r.count;
  add_counts(st.eval.confusion, r.confusion);
  if (++st.eval_chunks_seen < st.engine->eval_chunks())
    return;
  self->send(st.driver,
             evaluation_report(st.worker, step, std::move(st.eval), seconds_since(st.eval_began)));
  st.eval = {};
  st.eval_chunks_seen = 0;
}

// The update of the step in flight: applied, then the step's figures (and, after the last
// step, the weights) go to the driver.
void finish_step(self_pointer self, const update_meta& meta, const at::Tensor& combined) {
  auto& st = self->state;
  if (meta.step != st.step || st.running)
    violated(
        st, "update for step " + std::to_string(meta.step) + " at step " + std::to_string(st.step));
  const double comm_s = seconds_since(st.sent_at);
  const auto apply_start = clock_type::now();
  st.engine->apply(arrived(st, combined), st.context->plan->lr_at(meta.step));
  stage_stats stats;
  stats.worker = st.worker;
  stats.step = meta.step;
  stats.busy_s = st.device->take_op_seconds().value_or(st.busy_s);
  stats.first_op_ns = nanoseconds(st.step_began);
  stats.last_op_ns = nanoseconds(st.sent_at);
  stats.peak_live = st.peak_live;
  stats.comm_s = comm_s;
  stats.apply_s = seconds_since(apply_start);
  stats.data_wait_s = st.engine->take_data_wait_s();
  self->send(st.driver, stats);
  if (meta.last)
    self->send(st.driver, weights_atom_v, st.worker, host_weights(st));
  st.step = meta.step + 1;
}

// The stage's part of a checkpoint, asked between two steps (after `step`'s update, before the
// next compute).
void hand_in_state(self_pointer self, int64_t step) {
  auto& st = self->state;
  if (step + 1 != st.step || st.running)
    violated(st, "asked for the state after step " + std::to_string(step) + " at step " +
                     std::to_string(st.step));
  self->send(st.driver, checkpoint_atom_v,
             checkpoint_part{step, st.where.stage, host_weights(st), st.engine->optimizer_state()});
}

// A resumed run: before the first compute, after the link that built the engine.
void restore_state(self_pointer self, int64_t step, const at::Tensor& weights,
                   const std::string& optimizer) {
  auto& st = self->state;
  if (!st.engine || st.running || st.step != 0)
    violated(st, "asked to restore the state after step " + std::to_string(step) + " at step " +
                     std::to_string(st.step));
  st.engine->restore(weights, optimizer);
  st.step = step + 1;
}

stage_worker_actor::behavior_type stage_worker(self_pointer self, context_ptr context,
                                               stage_position where, run_driver_actor driver) {
  // On the stage's own (detached) thread: bounds this stage's intra-op threads only.
  const auto& par = context->plan->job.parallelism;
  use_plan_threads(*context->plan);
  auto& st = self->state;
  st.ops = make_pipeline_schedule(par.stages, par.micro_batches,
                                  par.schedule)[static_cast<std::size_t>(where.stage)];
  st.context = std::move(context);
  st.where = where;
  st.worker = where.pipeline * where.stages + where.stage;
  st.driver = std::move(driver);
  self->set_exception_handler(
      [](caf::scheduled_actor*, std::exception_ptr& ep) { return make_error_from_exception(ep); });
  return {
      [self](link_atom, caf::actor previous, caf::actor next) {
        auto& st = self->state;
        st.previous = std::move(previous);
        st.next = std::move(next);
        // Built here rather than at spawn, so that its exceptions reach the exception handler.
        // On this stage's own thread, where the device's stream is made current.
        const auto& context = *st.context;
        const auto device = context.plan->devices.workers.at(static_cast<std::size_t>(st.worker));
        st.device =
            std::make_unique<gpu::worker_device>(device, "worker " + std::to_string(st.worker));
        st.engine = std::make_unique<stage_engine>(
            stage_plan_of(*context.plan, st.where.pipeline, st.where.stage), context.data,
            context.initial_weights, device.is_cuda() ? st.device.get() : nullptr);
      },
      [self](compute_atom, int64_t step) {
        auto& st = self->state;
        if (step != st.step || st.running || !st.engine)
          violated(st, "asked to run step " + std::to_string(step) + " at step " +
                           std::to_string(st.step));
        st.step_began = clock_type::now();
        st.busy_s = 0;
        st.peak_live = 0;
        st.next_op = 0;
        st.running = true;
        apply_worker_faults(st.context->plan->job.faults, st.worker, st.step);
        st.engine->begin_step(step);
        advance(self);
      },
      [self](forward_atom, const micro_meta& meta, at::Tensor activation) {
        auto& st = self->state;
        if (meta.eval)
          return evaluate_chunk(self, meta, activation);
        receive_input(self, st.activations, "activation", meta, std::move(activation));
      },
      [self](backward_atom, const micro_meta& meta, at::Tensor gradient) {
        receive_input(self, self->state.gradients, "gradient", meta, std::move(gradient));
      },
      [self](update_atom, const update_meta& meta, const at::Tensor& combined) {
        finish_step(self, meta, combined);
      },
      [self](snapshot_atom, int64_t step) {
        // Asked while the stage waits for the evaluation after `step`: its weights are that
        // step's.
        auto& st = self->state;
        self->send(st.driver, snapshot_atom_v,
                   evaluated_weights{step, st.where.stage, host_weights(st)});
      },
      [self](checkpoint_atom, int64_t step) { hand_in_state(self, step); },
      [self](restore_atom, const restored_state& r) {
        restore_state(self, r.step, r.weights, r.optimizer);
      },
      [self](evaluate_atom, int64_t step) {
        auto& st = self->state;
        if (!st.where.first() || step + 1 != st.step)
          violated(st, "asked to evaluate after step " + std::to_string(step));
        const auto chunks = st.engine->eval_chunks();
        if (chunks == 0)  // an empty test shard: nothing flows, report at once
          self->send(st.driver, eval_report{st.worker, step, 0.0, 0, 0, 0.0});
        for (int64_t c = 0; c < chunks; ++c)
          evaluate_chunk(self, micro_meta{step, c, true, nullptr}, at::Tensor());
      },
  };
}

}  // namespace

stage_worker_actor spawn_stage_worker(caf::actor_system& system, context_ptr context,
                                      stage_position where, run_driver_actor driver) {
  return system.spawn<caf::detached>(stage_worker, std::move(context), where, std::move(driver));
}

}  // namespace troupe
