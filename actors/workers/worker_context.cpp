#include "actors/workers/worker_context.hpp"

#include "core/train/replica_engine.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace troupe {

std::chrono::microseconds barrier_spin(int64_t threads, unsigned hardware_threads) {
  // Replicas doing the same work arrive within tens of microseconds of each other, and a sleep
  // costs a wake-up that takes about as long on a virtual machine; past 200 us something else
  // (another process, an evaluation) holds the others up, and the core is better given away.
  // Spinning at all only while every replica's threads have a core of their own.
  const bool cores_to_spare =
      hardware_threads > 0 && threads <= static_cast<int64_t>(hardware_threads);
  return cores_to_spare ? std::chrono::microseconds{200} : std::chrono::microseconds{0};
}

std::chrono::microseconds barrier_spin(const run_plan& p) {
  return barrier_spin(p.threads_total, p.hardware_threads);
}

int64_t host_slot(const worker_context& c, int64_t rank) {
  const auto& ranks = c.host_ranks;
  const auto it = std::lower_bound(ranks.begin(), ranks.end(), rank);
  if (it == ranks.end() || *it != rank)
    throw std::logic_error("rank " + std::to_string(rank) + " has no slot in this host's segment");
  return it - ranks.begin();
}

bool host_is_partial(const worker_context& c) {
  return c.host && static_cast<int64_t>(c.host_ranks.size()) < c.plan->job.parallelism.replicas;
}

context_ptr make_worker_context(run_plan plan, dataset_ptr data,
                                std::shared_ptr<trusted_nodes> trusted) {
  auto context = std::make_shared<worker_context>();
  context->initial_weights = initial_weights(settings_of(plan.job), plan.data.classes);
  context->plan = std::make_shared<const run_plan>(std::move(plan));
  context->data = std::move(data);
  context->trusted = std::move(trusted);
  const auto& p = *context->plan;
  if (p.gradients == gradient_meeting::shared)
    context->reduction = std::make_shared<replica_reduction>(
        p.job.parallelism.replicas, p.model.summed_size(), barrier_spin(p));
  return context;
}

}  // namespace troupe
