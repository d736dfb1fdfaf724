// How long a run is and when it evaluates: pure functions of the step, computed once by the
// plan and read by every actor, so workers and the driver agree on "is this the last step" and
// "evaluate now" without a message about it.
//
// Thread safety: immutable after construction; shared read-only.
#pragma once

#include <cstdint>

namespace troupe {

/// What follows a step's update: an evaluation, and whether the run is over.
struct step_outcome {
  int64_t step = 0;       ///< the step this update completes
  bool evaluate = false;  ///< evaluate the test set after applying it
  bool last = false;      ///< no further step: hand in the final weights instead
};

/// One worker's share of a completed step.
struct step_part {
  int64_t worker = 0;
  double loss = 0;      ///< mean over the worker's rows
  int64_t samples = 0;  ///< the worker's rows in this step
  /// The worker's time from the end of its previous step to the end of this one (0: not
  /// measured); the step's duration where reports reach the driver in blocks.
  double span_s = 0;
  /// Sync among the workers: the rows the sum the worker applied held, every contributor's (a
  /// lost one's too, where its gradient was summed before it was lost); 0: not known, the
  /// step's rows are its parts' samples (a sum the driver made of exactly those parts).
  int64_t sum_rows = 0;
  /// Async: the step whose batch the rows came from (the pusher's own clock, which runs ahead
  /// of or behind the global step the push completes); -1: the completed step's own batch.
  int64_t batch = -1;
};

class step_rules {
 public:
  step_rules() = default;
  /// `eval_interval` 0 evaluates at the end of every epoch.
  step_rules(int64_t total_steps, int64_t steps_per_epoch, int64_t eval_interval);

  int64_t total_steps() const { return total_steps_; }
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  /// As the job gave it: 0 evaluates at the end of every epoch.
  int64_t eval_interval() const { return eval_interval_; }
  /// 0-based epoch of `step`.
  int64_t epoch_of(int64_t step) const;
  bool is_last(int64_t step) const { return step + 1 >= total_steps_; }
  /// Every `eval_interval` steps (0: at the end of every epoch) and always after the last step.
  /// `step` is 0-based; the evaluation follows that step's update.
  bool evaluates_after(int64_t step) const;
  step_outcome outcome_of(int64_t step) const;

 private:
  int64_t total_steps_ = 0;
  int64_t steps_per_epoch_ = 0;
  int64_t eval_interval_ = 0;
};

}  // namespace troupe
