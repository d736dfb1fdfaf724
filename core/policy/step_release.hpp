// The driver's side of the release window (core/policy/step_pace.hpp has the worker's side):
// replica workers run a step only once the driver released it, and the driver keeps at most
// `window` steps released past the last completed one. The first step not yet released is one
// no worker has started, so a checkpoint announced for it reaches every worker in time.
//
// Steps go out `block` at a time: once `block` more may be released, all of them are, and the
// driver sends each worker one release for the block (step_pace takes the highest step released
// as releasing every one before it). Between processes every release is a message through both
// multiplexers and a wake-up on cores that train; one per block instead of one per step is what
// keeps a run over node processes close to the same run in one process (bench/nodes_training).
//
// Thread safety: none; owned by the run driver.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace troupe {

class step_release {
 public:
  /// Steps 0 .. total_steps - 1 exist; 1 <= `block` <= `window`.
  step_release(int64_t total_steps, int64_t window, int64_t block = 1);

  /// From the next completion on: `block` steps at a time, at most `window` ahead (as the
  /// constructor's). A smaller window releases nothing until completions catch up with it.
  void set_pace(int64_t window, int64_t block);

  /// The run starts at `first`: the steps to release now, in order.
  std::vector<int64_t> start(int64_t first);
  /// `step` completed: the steps to release now, in order: none, or at least a block of them
  /// (fewer only at the run's end), never past the window.
  std::vector<int64_t> on_complete(int64_t step);
  /// A stop request: releases steps now, ahead of the window, up to the first that
  /// `may_stop_after` accepts (one, where it accepts every step; more where a streaming
  /// fragment's average in flight after a step leaves no state to stop with there), and then
  /// no more. The steps released, in order; none when every step is released already.
  std::vector<int64_t> release_last(const std::function<bool(int64_t)>& may_stop_after);
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

  static void check_pace(int64_t window, int64_t block);

  int64_t total_steps_;
  int64_t window_;
  int64_t block_;
  int64_t next_ = 0;
  bool stopped_ = false;
  bool held_ = false;
};

/// The pace for steps that take `step_s` seconds (0: not known yet): blocks of
/// release_block_steps in a window of block_release_window for steps under short_step_s
/// (core/policy/step_pace.hpp), else one at a time in a window of release_window.
struct release_pace {
  int64_t window = 0;
  int64_t block = 0;
};
release_pace release_pace_for(double step_s);

}  // namespace troupe
