// How the run driver ends a run: success once everything is in, or a failure naming its cause.
#include "actors/driver/run_driver_state.hpp"
#include "core/errors.hpp"
#include "core/run/final_weights.hpp"
#include "core/run/run_ending.hpp"
#include "messages/error_code.hpp"

#include <fmt/format.h>
#include <caf/all.hpp>

#include <algorithm>

namespace troupe {

namespace {

// What keep_best and early stopping add to the report.
void add_kept(const run_driver_state& st, run_report& report) {
  if (!st.keeper)
    return;
  const auto& k = *st.keeper;
  if (k.best_step() && st.plan->job.training.keep_best) {
    report.best_step = k.best_step();
    report.best_metric = to_string(*st.plan->job.training.keep_best);
    report.best_value = k.best_value();
    report.best_weights = k.best_weights();
  }
  if (k.stopped_at() && !st.plan->rules.is_last(*k.stopped_at()))
    report.stopped_early_at = k.stopped_at();
}

// CUDA's out-of-memory error says what was asked for; a job under gpu_memory_mb ran out of its
// cap, not of the GPU, and is told so.
std::string cap_note(const run_plan& plan, const std::string& why) {
  if (!plan.job.gpu_memory_mb || why.find("out of memory") == std::string::npos)
    return "";
  return fmt::format(" (the job's gpu_memory_mb caps its process at {} MB on each GPU)",
                     *plan.job.gpu_memory_mb);
}

}  // namespace

void finish(driver_pointer self, const std::string& error, at::Tensor weights,
            run_status failed_as) {
  auto& st = self->state;
  if (st.finished)
    return;
  st.finished = true;
  auto why = error;
  try {
    close_checkpoints(self);
  } catch (const std::exception& e) {
    // A full disk, most often: a run that cannot record what it did ends with that.
    if (why.empty())
      why = e.what();
  }
  auto report = end_run(*st.tracker, *st.plan, why, std::move(weights),
                        error.empty() ? run_status::failed : failed_as);
  if (why.empty())
    add_kept(st, report);
  report.members = st.ensemble_members;
  st.promise.deliver(std::move(report));
  // A replica waiting for the others' gradients reads no messages: release it first.
  if (const auto& reduction = st.options.context->reduction)
    reduction->abort("the run ended");
  for (const auto& w : st.roster->all())
    if (w)
      self->send_exit(w, caf::exit_reason::user_shutdown);
  if (st.server)
    self->send_exit(st.server, caf::exit_reason::user_shutdown);
  self->quit();
}

void fail_protocol(driver_pointer self, const std::string& what) {
  finish(self, self->system().render(protocol_violation(what)));
}

void take_snapshot(driver_pointer self, int64_t step, int64_t part, const at::Tensor& weights) {
  auto& st = self->state;
  const auto parts = st.plan->mode == run_mode::pipeline ? st.plan->job.parallelism.stages : 1;
  if (!st.keeper || part < 0 || part >= parts || !st.plan->rules.evaluates_after(step))
    return fail_protocol(self, "unexpected weights of the evaluation after step " +
                                   std::to_string(step) + " (part " + std::to_string(part) + ")");
  st.keeper->on_snapshot(step, part, parts, weights);
  maybe_stop_early(self);
}

void maybe_stop_early(driver_pointer self) {
  auto& st = self->state;
  // After the last step's evaluation there is nothing left to stop: the run ends as usual.
  if (st.keeper && st.keeper->stopped_at() && !st.plan->rules.is_last(*st.keeper->stopped_at()))
    finish(self, "", st.keeper->stop_weights());
}

void take_final_weights(driver_pointer self, int64_t rank, const at::Tensor& weights) {
  auto& st = self->state;
  if (rank < 0 || rank >= static_cast<int64_t>(st.final_weights.size()) ||
      st.final_weights[static_cast<std::size_t>(rank)].defined())
    return fail_protocol(self, "unexpected final weights from worker " + std::to_string(rank));
  st.final_weights[static_cast<std::size_t>(rank)] = weights;
  ++st.weights_received;
  maybe_succeed(self);
}

void maybe_succeed(driver_pointer self) {
  auto& st = self->state;
  const auto last_step = st.plan->rules.total_steps() - 1;
  if (st.finished || !st.training_done || !st.tracker->evaluated(last_step))
    return;
  // keep_best's verdict on the last evaluation waits for its weights: a stage that evaluates
  // alone (one stage, micro-batches) hands in its final weights, then the figures, then the
  // evaluated weights. (A replica sends those before its final weights; where nodes may be lost
  // the replica that sent them may be gone, and the run must not wait for them.)
  if (st.keeper && !st.members && !st.keeper->settled(last_step))
    return;
  if (st.members && !st.plan->parameter_server()) {
    // Replicas: every live one's weights (a lost node's never come), which must agree.
    if (!may_release(st))
      return;  // a regroup first: a replacement or a survivor behind is not there yet
    std::vector<at::Tensor> live;
    for (auto r : live_ranks(st)) {
      const auto& w = st.final_weights[static_cast<std::size_t>(r)];
      if (!w.defined())
        return;
      live.push_back(w);
    }
    auto assembled = assemble_final_weights(live, static_cast<int64_t>(live.size()), 1);
    return finish(self, assembled.error, std::move(assembled.flat));
  }
  if (st.weights_received < static_cast<int64_t>(st.final_weights.size()))
    return;
  const auto stages = st.plan->parameter_server() ? 1 : st.plan->job.parallelism.stages;
  const auto pipelines = static_cast<int64_t>(st.final_weights.size()) / stages;
  auto assembled =
      assemble_final_weights(st.final_weights, pipelines, stages, st.plan->stage_parameters());
  finish(self, assembled.error, std::move(assembled.flat));
}

void end_run_on_failures(driver_pointer self) {
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    if (st.finished)
      return;
    if (st.members && st.members->departed.count(msg.source) > 0)
      return;  // given up on already
    const auto& agents = st.options.node_agents;
    const auto agent = std::find_if(agents.begin(), agents.end(),
                                    [&](const caf::actor& a) { return a.address() == msg.source; });
    if (agent != agents.end()) {
      // A node's agent, watched while its workers start: once they are there, their own
      // monitors say what its loss means (the roster may be incomplete again, a lost node's
      // ranks waiting for a replacement).
      if (st.begun)
        return;
      const auto rank = agent - agents.begin();
      return finish(self, "could not start worker " + std::to_string(rank) + " on " +
                              st.roster->place(rank) +
                              ": its node's connection was lost before the run began (the node "
                              "stopped, or its process or host went away)");
    }
    // CAF's words for a lost connection ("exit_reason(remote_link_unreachable)") said nothing a
    // user could act on.
    const auto why = !msg.reason ? std::string("exited early")
                     : msg.reason == caf::exit_reason::remote_link_unreachable
                         ? std::string(
                               "its node's connection was lost (the node stopped, or its "
                               "process or host went away)")
                         : self->system().render(msg.reason);
    const auto rank = st.roster->rank_of(msg.source);
    // Its node's connection went down (killed, unplugged, silent past node_timeout_s): under
    // cluster.on_node_loss "continue" the survivors carry on. A worker that failed on its own
    // (a LibTorch error, a diverged loss) would fail again on the survivors: that ends the run.
    if (rank >= 0 && carries_on(st) && msg.reason == caf::exit_reason::remote_link_unreachable)
      return lose_node(self, rank, "its node's connection was lost", false);
    if (rank < 0) {
      const bool server = st.server && msg.source == st.server.address();
      return finish(
          self, (server ? "the parameter server" : "an actor") + std::string(" failed: ") + why);
    }
    // A loss that is not a number: the job's settings, not the run, went wrong.
    finish(self, st.roster->describe(rank) + " failed: " + why + cap_note(*st.plan, why), {},
           is_error(msg.reason, errc::diverged) ? run_status::diverged : run_status::failed);
  });
  self->set_exception_handler([self](caf::scheduled_actor*, std::exception_ptr& ep) {
    auto err = make_error_from_exception(ep);
    std::string what = "coordinator failed: " + self->system().render(err);
    try {
      std::rethrow_exception(ep);
    } catch (const output_error& e) {
      what = e.what();  // "DIR/metrics.jsonl: cannot write: No space left on device"
    } catch (const std::exception& e) {
      what = "coordinator failed: " + message_of(e);
    } catch (...) {
    }
    finish(self, what);
    return err;
  });
}

}  // namespace troupe
