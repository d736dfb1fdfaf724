// When local SGD replicas average their weights: a pure function of the step, so every worker
// and the coordinator agree without exchanging a message about it.
#pragma once

#include <cstdint>

namespace troupe {

/// True when replicas average after 0-based `step`: every `period` steps, at every evaluation
/// (so that an evaluation sees one model, not N drifting ones), and after the last step (so
/// the run ends with one set of weights).
bool is_averaging_step(int64_t step, int64_t period, int64_t total_steps, int64_t steps_per_epoch,
                       int64_t eval_interval);

/// The first averaging step at or after `step` (total_steps - 1 at the latest).
int64_t next_averaging_step(int64_t step, int64_t period, int64_t total_steps,
                            int64_t steps_per_epoch, int64_t eval_interval);

}  // namespace troupe
