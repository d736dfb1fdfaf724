#include "actors/coordinator.hpp"

#include "core/collective/sum_in_order.hpp"
#include "core/policy/sync_policy.hpp"
#include "core/train/run_tracker.hpp"
#include "messages/error_code.hpp"

#include <ATen/ATen.h>
#include <caf/all.hpp>

#include <chrono>
#include <optional>

namespace troupe {

struct coordinator_state {
  coordinator_options options;
  std::vector<replica_worker_actor> workers;
  std::optional<sync_policy> policy;
  std::optional<run_tracker> tracker;
  std::vector<at::Tensor> pending_grads;    ///< by rank, for the step in progress
  std::vector<gradient_meta> pending_meta;  ///< by rank
  std::vector<at::Tensor> final_weights;    ///< by rank, after the last step
  int64_t weights_received = 0;
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
  if (!error.empty()) {
    try {
      st.tracker->record_event({{"event", "failure"}, {"error", error}});
    } catch (const std::exception&) {
      // The run is ending anyway; the caller still gets the error through the report.
    }
  }
  st.promise.deliver(st.tracker->report(error, weights));
  for (auto& w : st.workers)
    self->send_exit(w, caf::exit_reason::user_shutdown);
  self->quit();
}

void fail_protocol(self_pointer self, const std::string& what) {
  finish(self, "protocol error: " + what);
}

// Step (b)-(c) of the protocol: combine in rank order and release every worker.
void complete_step(self_pointer self, const policy_decision& decision) {
  auto& st = self->state;
  const auto start = std::chrono::steady_clock::now();
  std::vector<at::Tensor> parts;
  std::vector<step_part> shares;
  for (auto rank : decision.contributors) {
    parts.push_back(std::move(st.pending_grads[rank]));
    const auto& m = st.pending_meta[rank];
    shares.push_back({m.worker, m.loss, m.samples});
  }
  auto combined = sum_in_order(parts);
  parts.clear();
  const double reduce_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto& opts = st.options;
  update_meta meta;
  meta.step = decision.step;
  meta.last = decision.step + 1 >= opts.total_steps;
  meta.evaluate = should_evaluate(decision.step, opts.total_steps, opts.steps_per_epoch,
                                  opts.setup->job.training.eval_interval);
  for (auto& w : st.workers)
    self->send(w, update_atom_v, meta, combined);
  auto progress = st.tracker->on_step_complete(decision.step, shares, reduce_s);
  if (opts.on_progress)
    opts.on_progress(progress);
  if (opts.stop_requested != nullptr && opts.stop_requested->load() && !meta.last)
    finish(self, "interrupted after step " + std::to_string(decision.step));
}

coordinator_actor::behavior_type coordinator(self_pointer self, coordinator_options options) {
  auto& st = self->state;
  const auto replicas = options.setup->job.parallelism.replicas;
  st.options = std::move(options);
  st.pending_grads.resize(static_cast<std::size_t>(replicas));
  st.pending_meta.resize(static_cast<std::size_t>(replicas));
  st.final_weights.resize(static_cast<std::size_t>(replicas));
  st.policy.emplace(static_cast<std::size_t>(replicas));
  st.tracker.emplace(replicas, st.options.total_steps, st.options.steps_per_epoch,
                     st.options.metrics);

  // A worker that ends before the run finished has failed: say which one and why.
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    if (st.finished)
      return;
    const auto rank = rank_of(st, msg.source);
    const auto who = rank >= 0 ? "worker " + std::to_string(rank) : std::string("an actor");
    const auto why = msg.reason ? self->system().render(msg.reason) : "exited early";
    finish(self, who + " failed: " + why);
  });
  // A bug in the coordinator itself must still answer the run request instead of leaving the
  // caller waiting forever.
  self->set_exception_handler([self](caf::scheduled_actor*, std::exception_ptr& ep) {
    auto err = make_error_from_exception(ep);
    finish(self, "coordinator failed: " + self->system().render(err));
    return err;
  });

  return {
      [self](run_atom) -> caf::result<run_report> {
        auto& st = self->state;
        st.promise = self->make_response_promise<run_report>();
        const auto n = st.options.setup->job.parallelism.replicas;
        for (int64_t rank = 0; rank < n; ++rank) {
          auto w =
              spawn_replica_worker(self->system(), st.options.setup, rank, coordinator_actor{self});
          self->monitor(w);
          st.workers.push_back(w);
        }
        st.tracker->start();
        for (auto& w : st.workers)
          self->send(w, compute_atom_v, int64_t{0});
        return st.promise;
      },
      [self](gradient_atom, const gradient_meta& meta, const at::Tensor& grad) {
        auto& st = self->state;
        auto decision = st.policy->on_gradient(static_cast<std::size_t>(meta.worker), meta.step);
        switch (decision.kind) {
          case verdict::rejected:
            return fail_protocol(self, decision.reason);
          case verdict::wait:
            st.pending_grads[static_cast<std::size_t>(meta.worker)] = grad;
            st.pending_meta[static_cast<std::size_t>(meta.worker)] = meta;
            return;
          case verdict::complete:
            st.pending_grads[static_cast<std::size_t>(meta.worker)] = grad;
            st.pending_meta[static_cast<std::size_t>(meta.worker)] = meta;
            return complete_step(self, decision);
        }
      },
      [self](const step_stats& s) {
        self->state.tracker->on_worker_step(s.worker, s.step, s.compute_s, s.comm_s, s.apply_s);
      },
      [self](const eval_report& e) {
        auto& st = self->state;
        auto progress =
            st.tracker->on_eval_shard(e.worker, e.step, e.loss_sum, e.correct, e.count, e.eval_s,
                                      static_cast<int64_t>(st.policy->live_workers()));
        if (progress && st.options.on_progress)
          st.options.on_progress(*progress);
      },
      [self](weights_atom, int64_t rank, const at::Tensor& weights) {
        auto& st = self->state;
        if (rank < 0 || rank >= static_cast<int64_t>(st.final_weights.size()) ||
            st.final_weights[static_cast<std::size_t>(rank)].defined())
          return fail_protocol(self,
                               "unexpected final weights from worker " + std::to_string(rank));
        st.final_weights[static_cast<std::size_t>(rank)] = weights;
        if (++st.weights_received < static_cast<int64_t>(st.policy->live_workers()))
          return;
        // Synchronous replicas apply identical updates: their weights must agree bit for bit.
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
