#include "actors/worker_context.hpp"

#include "core/train/replica_engine.hpp"

namespace troupe {

context_ptr make_worker_context(run_plan plan, dataset_ptr data,
                                std::shared_ptr<trusted_nodes> trusted) {
  auto context = std::make_shared<worker_context>();
  context->initial_weights = initial_weights(plan.job, plan.data.classes);
  context->plan = std::make_shared<const run_plan>(std::move(plan));
  context->data = std::move(data);
  context->trusted = std::move(trusted);
  return context;
}

}  // namespace troupe
