#include "core/checkpoint/checkpoint_schedule.hpp"

namespace troupe {

checkpoint_schedule::checkpoint_schedule(const checkpoint_config& config, int64_t total_steps,
                                         double now_s)
    : config_(config), total_steps_(total_steps), last_s_(now_s) {}

bool checkpoint_schedule::due(int64_t step, double now_s) {
  if (step + 1 >= total_steps_)
    return false;
  const bool by_count = config_.every_steps > 0 && (step + 1) % config_.every_steps == 0;
  const bool by_time = config_.every_s > 0 && now_s - last_s_ >= config_.every_s;
  if (!by_count && !by_time)
    return false;
  last_s_ = now_s;
  return true;
}

}  // namespace troupe
