// What the parameter server (whole or sharded: actors/workers/parameter_server, sharded_server)
// computes with: its engine, and its evaluation of the whole evaluation set on the master
// weights, reported to the driver (with keep_best or early stopping the evaluated weights go
// along).
#pragma once

#include "actors/workers/evaluation_report.hpp"
#include "actors/workers/worker_context.hpp"
#include "core/train/replica_engine.hpp"
#include "messages/interfaces.hpp"

#include <chrono>
#include <memory>

namespace troupe {

/// The server's engine: rank 0's model and optimizer over the run's first weights, without a
/// loader (a server computes no gradient: rows gathered ahead would be work thrown away).
inline std::unique_ptr<replica_engine> make_server_engine(const worker_context& context) {
  auto plan = replica_plan_of(*context.plan, 0);
  plan.settings.prefetch = 0;
  return std::make_unique<replica_engine>(plan, context.data, context.initial_weights);
}

template <class Self>
void evaluate_server(Self* self, replica_engine& engine, const worker_context& context,
                     const run_driver_actor& driver, int64_t step) {
  const auto start = std::chrono::steady_clock::now();
  const auto& set = evaluation_set(*context.data);
  auto r = engine.evaluate(set, {0, set.size()});
  const double eval_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  self->send(driver, evaluation_report(0, step, std::move(r), eval_s));
  if (context.plan->snapshots())
    self->send(driver, snapshot_atom_v, evaluated_weights{step, 0, engine.weights().clone()});
}

}  // namespace troupe
