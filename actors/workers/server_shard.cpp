#include "actors/workers/server_shard.hpp"

#include "actors/workers/held_weights.hpp"
#include "core/collective/compact_encoding.hpp"
#include "core/run/thread_team.hpp"
#include "core/train/shard_engine.hpp"
#include "messages/error_code.hpp"

#include <ATen/ATen.h>
#include <caf/all.hpp>

#include <map>
#include <memory>
#include <optional>

namespace troupe {

struct server_shard_state {
  context_ptr context;
  int64_t shard = 0;
  std::unique_ptr<shard_engine> engine;
  std::optional<held_weights> held;
  std::map<int64_t, at::Tensor> pushed;  ///< by rank: the slice the driver has yet to apply
  static inline const char* name = "server_shard";
};

namespace {

using self_pointer = server_shard_actor::stateful_pointer<server_shard_state>;

shard_engine& engine_of(server_shard_state& st) {
  // Built in a handler, so that its exceptions reach the exception handler.
  if (!st.engine) {
    const auto& plan = *st.context->plan;
    st.engine = std::make_unique<shard_engine>(
        plan.job.optimizer, plan.model.parameter_layout,
        server_shards_of(plan).at(static_cast<std::size_t>(st.shard)), st.context->initial_weights);
  }
  return *st.engine;
}

// A pushed slice, checked before it is kept: a wrong size would fail the apply much later.
caf::result<caf::ok_atom> take_push(self_pointer self, const async_push& p) {
  auto& st = self->state;
  const auto& plan = *st.context->plan;
  const auto rank = p.meta.worker;
  const auto size = engine_of(st).shard().size;
  at::Tensor slice;
  try {
    slice = p.gradient.defined() && is_packed(p.gradient) ? unpack(p.gradient) : p.gradient;
  } catch (const std::exception& e) {
    return caf::make_error(caf::sec::invalid_argument,
                           std::string("a bad packed slice: ") + e.what());
  }
  if (rank < 0 || rank >= plan.job.parallelism.replicas || !slice.defined() ||
      slice.numel() != size)
    return caf::make_error(caf::sec::invalid_argument,
                           "shard " + std::to_string(st.shard) + " takes slices of " +
                               std::to_string(size) + " values from ranks below " +
                               std::to_string(plan.job.parallelism.replicas));
  st.pushed[rank] = slice;
  return caf::ok_atom_v;
}

void apply(self_pointer self, double lr, int64_t rank) {
  auto& st = self->state;
  auto it = st.pushed.find(rank);
  if (it == st.pushed.end())
    return;  // pushed to the shard this one replaced
  auto gradient = std::move(it->second);
  st.pushed.erase(it);
  engine_of(st).apply(gradient, lr);
}

server_shard_actor::behavior_type shard_behavior(self_pointer self, context_ptr context,
                                                 int64_t shard) {
  use_plan_threads(*context->plan);  // as the workers': core/run/thread_team.hpp says why
  auto& st = self->state;
  st.context = std::move(context);
  st.shard = shard;
  st.held.emplace(st.context->plan->job.parallelism.compression);
  self->set_exception_handler(
      [](caf::scheduled_actor*, std::exception_ptr& ep) { return make_error_from_exception(ep); });
  return trusted_behavior<server_shard_actor::behavior_type>(
      self, st.context->trusted.get(),
      [self](push_atom, const async_push& p) { return take_push(self, p); },
      [self](apply_atom, double lr, int64_t rank, const at::Tensor&) { apply(self, lr, rank); },
      [self](hand_out_atom, const hand_out& h) {
        auto& st = self->state;
        self->send(caf::actor_cast<replica_worker_actor>(h.worker), params_atom_v,
                   server_weights{h.version, h.step, st.shard,
                                  st.held->hand_out(h.worker.address(), engine_of(st).weights())});
      },
      [self](weights_atom) -> caf::result<at::Tensor> {
        return engine_of(self->state).weights().clone();
      },
      [self](checkpoint_atom, int64_t step) -> caf::result<checkpoint_part> {
        auto& st = self->state;
        auto& engine = engine_of(st);
        return checkpoint_part{step, st.shard, engine.weights().clone(), engine.optimizer_state()};
      },
      [self](restore_atom, const restored_state& r) {
        engine_of(self->state).restore(r.weights, r.optimizer);
      });
}

}  // namespace

server_shard_actor spawn_server_shard(caf::actor_system& system, context_ptr context,
                                      int64_t shard) {
  return system.spawn<caf::detached>(shard_behavior, std::move(context), shard);
}

}  // namespace troupe
