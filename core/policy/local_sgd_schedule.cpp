#include "core/policy/local_sgd_schedule.hpp"

#include "core/train/run_tracker.hpp"

namespace troupe {

bool is_averaging_step(int64_t step, int64_t period, int64_t total_steps, int64_t steps_per_epoch,
                       int64_t eval_interval) {
  return (step + 1) % period == 0 ||
         should_evaluate(step, total_steps, steps_per_epoch, eval_interval);
}

int64_t next_averaging_step(int64_t step, int64_t period, int64_t total_steps,
                            int64_t steps_per_epoch, int64_t eval_interval) {
  while (step < total_steps - 1 &&
         !is_averaging_step(step, period, total_steps, steps_per_epoch, eval_interval))
    ++step;
  return step;
}

}  // namespace troupe
