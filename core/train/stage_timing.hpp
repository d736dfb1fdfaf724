// A pipeline stage's figures for one step, as the stage measured them. Clock readings are
// steady_clock nanoseconds, comparable only within one process: the tracker derives each
// pipeline's flush window from them (core/train/stage_windows).
#pragma once

#include <cstdint>

namespace troupe {

struct stage_timing {
  int64_t worker = 0;
  int64_t step = 0;
  /// Running forward and backward operations: on a GPU the device's time between each
  /// operation's first and last kernel on the stage's stream (CUDA events), on a CPU the host's.
  double busy_s = 0;
  int64_t first_op_ns = 0;  ///< when the step's work began (the compute message arrived)
  int64_t last_op_ns = 0;   ///< when its last operation ended
  int64_t peak_live = 0;    ///< most activations held at once
  double comm_s = 0;        ///< gradient sent -> combined gradient received
  double apply_s = 0;       ///< optimizer step
  double data_wait_s = 0;   ///< stage 0: waiting for the step's rows (not in busy_s)
};

}  // namespace troupe
