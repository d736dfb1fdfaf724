// A replica worker's side of the release window: the driver releases steps ahead of the last
// completed one (compute messages, at most release_window ahead, or block_release_window for
// short steps; a message releases every step up to the one it names), and the worker runs them
// one after the other, never a step that was not released. The window is what lets the driver name
// a future step every worker has yet to reach: the first step not yet released. A checkpoint
// announced for that step is therefore seen by every worker before it finishes the step.
//
// Thread safety: none; owned by one worker.
#pragma once

#include <cstdint>
#include <set>

namespace troupe {

/// How many steps past the last completed one the driver releases: enough that a worker does
/// not wait for its next release while the driver handles the step it just finished, few
/// enough that reports pile up by at most this many steps.
inline constexpr int64_t release_window = 4;
/// Steps shorter than this go a block of release_block_steps at a time: the driver releases
/// them so, and a worker in another process reports them so (step_release.hpp says why).
/// Longer steps go one by one: a stop request then waits for at most release_window of them.
inline constexpr double short_step_s = 0.005;
inline constexpr int64_t release_block_steps = 8;
/// The window while blocks go: one block running, the next on its way.
inline constexpr int64_t block_release_window = 2 * release_block_steps;

class step_pace {
 public:
  /// Step `step` may run (the driver's compute message).
  void release(int64_t step);
  /// The state after `step` goes into a checkpoint. False when the worker is already past it
  /// (a protocol violation: the driver announces only steps it has not released).
  bool announce_checkpoint(int64_t step);
  /// Whether the next step may start now: released and the worker not busy with another.
  bool may_start() const { return !busy_ && next_ < released_; }
  /// Marks the next step as running and returns it.
  int64_t begin();
  /// The running step finished; returns whether its state goes into a checkpoint.
  bool finish(int64_t step);
  /// Resuming: the first step to run is `step`.
  void start_at(int64_t step) { next_ = step; }
  int64_t next() const { return next_; }
  bool busy() const { return busy_; }
  /// A regroup (a node was lost): the step under way, if any, is dropped unfinished, and
  /// nothing is released any more until the driver releases again under the new membership;
  /// checkpoints announced are forgotten (the driver announces them again).
  void regroup() {
    busy_ = false;
    released_ = next_;
    checkpoints_.clear();
  }

 private:
  int64_t next_ = 0;      ///< the next step to run
  int64_t released_ = 0;  ///< steps below this one are released
  bool busy_ = false;
  std::set<int64_t> checkpoints_;
};

}  // namespace troupe
