// When a run writes a checkpoint: after every `every_steps` steps, and at the first step at
// least `every_s` seconds after the last checkpoint (or the start), never after the last step
// (the run ends there and writes its final weights).
//
// Thread safety: none; owned by the run driver (or the ensemble loop).
#pragma once

#include "core/job/job_config.hpp"

#include <cstdint>

namespace troupe {

class checkpoint_schedule {
 public:
  /// `now_s`: the run's clock at its start.
  checkpoint_schedule(const checkpoint_config& config, int64_t total_steps, double now_s);

  /// Whether the state after `step` goes into a checkpoint, asked for each step in order at
  /// `now_s`; a yes restarts the time rule's clock.
  bool due(int64_t step, double now_s);

 private:
  checkpoint_config config_;
  int64_t total_steps_;
  double last_s_;
};

}  // namespace troupe
