#include "core/run/make_strategy.hpp"

#include "core/policy/async_strategy.hpp"
#include "core/policy/local_sgd_strategy.hpp"
#include "core/policy/pipeline_strategy.hpp"
#include "core/policy/schedule_strategy.hpp"
#include "core/policy/sync_strategy.hpp"

namespace troupe {

std::unique_ptr<step_strategy> make_strategy(const run_plan& plan, int64_t first_step) {
  const auto& par = plan.job.parallelism;
  if (plan.mode == run_mode::pipeline)
    return std::make_unique<pipeline_strategy>(par.replicas, par.stages, plan.rules, first_step);
  const int64_t ranks = plan.workers;
  const bool driver_combines = plan.gradients == gradient_meeting::driver;
  switch (par.policy) {
    case policy_kind::sync:
      return std::make_unique<sync_strategy>(ranks, plan.schedule, plan.rules, driver_combines,
                                             first_step);
    case policy_kind::local_sgd:
      return std::make_unique<local_sgd_strategy>(ranks, plan.schedule, plan.rules, first_step);
    case policy_kind::schedule:
      return std::make_unique<schedule_strategy>(ranks, plan.schedule, plan.rules, driver_combines,
                                                 first_step);
    case policy_kind::async:
      return std::make_unique<async_strategy>(ranks, par.max_staleness, par.staleness_lr_scaling,
                                              plan.rules, first_step);
  }
  throw std::logic_error("make_strategy: unknown policy");
}

}  // namespace troupe
