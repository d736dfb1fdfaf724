// The run driver's watchdog over progress: nothing may wait for ever. Heartbeats only say that a
// process lives; a link that passes them but never a gradient bucket (a path-MTU black hole), or
// a node that keeps its heartbeat thread but stalls its worker, would leave a run at one step
// for good. The watch notes every message from a worker and every completed step, and once no
// step has completed for the limit it says so, naming the workers furthest behind (the lowest
// step they last reported; all of them when they stand together, as behind a stalled ring): the
// driver ends the run there (as a lost node ends it).
//
// The limit: `cluster.step_timeout_s` when given; otherwise derived from the run itself:
// `startup_s` until the first step completes (start-up and first-step compilation), then 20 x
// the longest gap between two completed steps seen so far (evaluations included), at least
// `floor_s`.
//
// Thread safety: none; owned by the run driver. Times are seconds on any monotonic clock.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace troupe {

struct step_stall {
  double silent_s = 0;     ///< since the last completed step (or the start)
  double limit_s = 0;      ///< the limit it passed
  int64_t last_step = -1;  ///< the last completed step; -1: none since the start
  /// The workers whose last report is of the lowest step, ascending, and that step (-1: none
  /// reported anything).
  std::vector<int64_t> behind;
  int64_t behind_step = -1;
};

class step_watch {
 public:
  static constexpr double default_startup_s = 120;
  static constexpr double default_floor_s = 30;
  static constexpr double gap_factor = 20;

  /// `fixed_s` > 0: that limit throughout; 0: derived as above.
  step_watch(int64_t workers, double fixed_s, double startup_s = default_startup_s,
             double floor_s = default_floor_s);

  /// The first step is under way at `now`: the clock starts.
  void start(double now);
  /// Worker `worker` reported on its step `step`.
  void heard(int64_t worker, int64_t step);
  void completed(int64_t step, double now);
  /// `worker` left the run: it is nobody's to wait for any more.
  void forget(int64_t worker);
  /// A regroup brought `workers` to the state after `step` at `now`: the clock starts again,
  /// and they count as having reported that step (a replacement reported nothing yet).
  void regrouped(const std::vector<int64_t>& workers, int64_t step, double now);

  double limit_s() const;
  /// The stall, once no step completed for longer than the limit; nullopt before start().
  std::optional<step_stall> overdue(double now) const;

 private:
  double fixed_s_;
  double startup_s_;
  double floor_s_;
  std::optional<double> since_;  ///< the start, or the last completion
  double longest_gap_ = 0;
  bool any_completed_ = false;
  int64_t last_step_ = -1;
  std::vector<int64_t> last_reported_;  ///< by worker; -1: nothing yet
};

}  // namespace troupe
