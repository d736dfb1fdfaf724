// The driver's side of the release window (core/policy/step_pace.hpp has the worker's side):
// replica workers run a step only once the driver released it, and the driver keeps at most
// `window` steps released past the last completed one. The first step not yet released is one
// no worker has started, so a checkpoint announced for it reaches every worker in time.
//
// Thread safety: none; owned by the run driver.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace troupe {

class step_release {
 public:
  /// Steps 0 .. total_steps - 1 exist; `window` >= 1.
  step_release(int64_t total_steps, int64_t window);

  /// The run starts at `first`: the steps to release now, in order.
  std::vector<int64_t> start(int64_t first);
  /// `step` completed: the step to release now, if there is one and releasing goes on.
  std::optional<int64_t> on_complete(int64_t step);
  /// Releases one more step now, ahead of the window, and then no more (a stop request): the
  /// step, or nullopt when every step is released already.
  std::optional<int64_t> release_last();
  /// Releases no more steps (a stop request whose checkpoint step is released already).
  void stop() { stopped_ = true; }
  /// Releases no more steps until start() begins again (a regroup after a lost node: the
  /// survivors first agree where they are). The steps released so far stay released.
  void hold() { held_ = true; }
  bool held() const { return held_; }
  /// The first step not released yet (total_steps once all are).
  int64_t next() const { return next_; }
  bool stopped() const { return stopped_; }

 private:
  std::optional<int64_t> take();

  int64_t total_steps_;
  int64_t window_;
  int64_t next_ = 0;
  bool stopped_ = false;
  bool held_ = false;
};

}  // namespace troupe
