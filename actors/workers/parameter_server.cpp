#include "actors/workers/parameter_server.hpp"

#include "actors/workers/held_weights.hpp"
#include "actors/workers/server_evaluation.hpp"
#include "actors/workers/sharded_server.hpp"
#include "core/collective/compact_encoding.hpp"
#include "core/run/thread_team.hpp"
#include "core/train/replica_engine.hpp"
#include "messages/error_code.hpp"

#include <ATen/ATen.h>
#include <caf/all.hpp>

#include <optional>

namespace troupe {

struct parameter_server_state {
  context_ptr context;
  run_driver_actor driver;
  std::unique_ptr<replica_engine> engine;  ///< the master weights and optimizer
  std::optional<held_weights> held;        ///< what each worker holds (parallelism.compression)
  static inline const char* name = "parameter_server";
};

namespace {

using self_pointer = parameter_server_actor::stateful_pointer<parameter_server_state>;

replica_engine& engine_of(parameter_server_state& st) {
  // Built in a handler, so that its exceptions reach the exception handler.
  if (!st.engine)
    st.engine = make_server_engine(*st.context);
  return *st.engine;
}

parameter_server_actor::behavior_type parameter_server(self_pointer self, context_ptr context,
                                                       run_driver_actor driver) {
  use_plan_threads(*context->plan);  // as the workers': core/run/thread_team.hpp says why
  self->state.context = std::move(context);
  self->state.driver = std::move(driver);
  self->state.held.emplace(self->state.context->plan->job.parallelism.compression);
  self->set_exception_handler(
      [](caf::scheduled_actor*, std::exception_ptr& ep) { return make_error_from_exception(ep); });
  return {
      [self](apply_atom, double lr, int64_t, const at::Tensor& gradient) {
        auto& engine = engine_of(self->state);
        if (is_packed(gradient))
          engine.apply(unpack(gradient).view_as(engine.weights()), lr);
        else
          engine.apply(gradient, lr);
      },
      [self](hand_out_atom, const hand_out& h) {
        // A snapshot: the master weights change with the next push while the worker computes.
        self->send(caf::actor_cast<replica_worker_actor>(h.worker), params_atom_v,
                   server_weights{h.version, h.step, 0,
                                  self->state.held->hand_out(h.worker.address(),
                                                             engine_of(self->state).weights())});
      },
      [self](evaluate_atom, int64_t step) {
        auto& st = self->state;
        evaluate_server(self, engine_of(st), *st.context, st.driver, step);
      },
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
                                              run_driver_actor driver,
                                              std::vector<caf::actor> shard_hosts,
                                              std::function<void(const std::string&)> log) {
  if (context->plan->sharded_server())
    return spawn_sharded_server(system, std::move(context), std::move(driver),
                                std::move(shard_hosts), std::move(log));
  return system.spawn<caf::detached>(parameter_server, std::move(context), std::move(driver));
}

}  // namespace troupe
