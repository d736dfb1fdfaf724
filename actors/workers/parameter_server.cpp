#include "actors/workers/parameter_server.hpp"

#include "actors/workers/evaluation_report.hpp"
#include "core/collective/compact_encoding.hpp"
#include "core/train/replica_engine.hpp"
#include "messages/error_code.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <caf/all.hpp>

#include <chrono>
#include <map>

namespace troupe {

struct parameter_server_state {
  context_ptr context;
  run_driver_actor driver;
  std::unique_ptr<replica_engine> engine;  ///< the master weights and optimizer
  /// parallelism.compression: by worker, the weights it holds (what it was sent, as it decoded
  /// them). A worker not here is sent the weights whole; one here, master - held, packed, so
  /// what packing dropped goes out with the next hand-out.
  std::map<caf::actor_addr, at::Tensor> held;
  static inline const char* name = "parameter_server";
};

namespace {

using self_pointer = parameter_server_actor::stateful_pointer<parameter_server_state>;

replica_engine& engine_of(parameter_server_state& st) {
  // Built in a handler, so that its exceptions reach the exception handler.
  if (!st.engine)
    st.engine = std::make_unique<replica_engine>(replica_plan_of(*st.context->plan, 0),
                                                 st.context->data, st.context->initial_weights);
  return *st.engine;
}

// The whole evaluation set on the master weights; with keep_best or early stopping, the weights
// that were evaluated go to the driver too.
void evaluate(self_pointer self, int64_t step) {
  auto& st = self->state;
  auto& engine = engine_of(st);
  const auto start = std::chrono::steady_clock::now();
  const auto& set = evaluation_set(*st.context->data);
  auto r = engine.evaluate(set, {0, set.size()});
  const double eval_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  self->send(st.driver, evaluation_report(0, step, std::move(r), eval_s));
  if (st.context->plan->snapshots())
    self->send(st.driver, snapshot_atom_v, evaluated_weights{step, 0, engine.weights().clone()});
}

// What a worker is sent: the master weights, or under parallelism.compression the change from
// what it holds, packed.
at::Tensor snapshot_for(parameter_server_state& st, const caf::actor_addr& worker) {
  const auto& weights = engine_of(st).weights();
  const auto compression = st.context->plan->job.parallelism.compression;
  if (compression == compression_kind::none)
    return weights.clone();
  auto it = st.held.find(worker);
  if (it == st.held.end()) {
    st.held.emplace(worker, weights.clone());
    return weights.clone();
  }
  auto packed = pack(weights - it->second, compression);
  it->second += unpack(packed).view_as(it->second);
  return packed;
}

parameter_server_actor::behavior_type parameter_server(self_pointer self, context_ptr context,
                                                       run_driver_actor driver) {
  // One intra-op thread: the server's figures equal the one-thread replica's, run after run.
  at::set_num_threads(1);
  self->state.context = std::move(context);
  self->state.driver = std::move(driver);
  self->set_exception_handler(
      [](caf::scheduled_actor*, std::exception_ptr& ep) { return make_error_from_exception(ep); });
  return {
      [self](apply_atom, double lr, const at::Tensor& gradient) {
        auto& engine = engine_of(self->state);
        if (is_packed(gradient))
          engine.apply(unpack(gradient).view_as(engine.weights()), lr);
        else
          engine.apply(gradient, lr);
      },
      [self](hand_out_atom, const hand_out& h) {
        // A snapshot: the master weights change with the next push while the worker computes.
        self->send(
            caf::actor_cast<replica_worker_actor>(h.worker), params_atom_v,
            server_weights{h.version, h.step, snapshot_for(self->state, h.worker.address())});
      },
      [self](evaluate_atom, int64_t step) { evaluate(self, step); },
      [self](weights_atom) -> at::Tensor { return engine_of(self->state).weights().clone(); },
      [self](checkpoint_atom, int64_t step) {
        // Asked right after the push that completed `step` was applied (the driver's messages
        // arrive in order): the state is that step's.
        auto& engine = engine_of(self->state);
        self->send(self->state.driver, checkpoint_atom_v,
                   checkpoint_part{step, 0, engine.weights().clone(), engine.optimizer_state()});
      },
      [self](restore_atom, const restored_state& r) {
        engine_of(self->state).restore(r.weights, r.optimizer);
      },
  };
}

}  // namespace

parameter_server_actor spawn_parameter_server(caf::actor_system& system, context_ptr context,
                                              run_driver_actor driver) {
  return system.spawn<caf::detached>(parameter_server, std::move(context), std::move(driver));
}

}  // namespace troupe
