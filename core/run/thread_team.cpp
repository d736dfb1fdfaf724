#include "core/run/thread_team.hpp"

#include "core/run/run_plan.hpp"

#include <ATen/Parallel.h>

namespace troupe {

void use_plan_threads(const run_plan& plan) {
  at::set_num_threads(static_cast<int>(plan.job.parallelism.threads_per_replica));
}

}  // namespace troupe
