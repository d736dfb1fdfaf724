// The pieces of the terminal's progress line that need no terminal: a samples/s rate over the
// last second rather than one step's (a single step's swings tenfold with scheduling hiccups),
// and the line itself cut to the terminal's width (a line longer than the terminal wraps, and
// every update then starts a new line instead of rewriting the old one).
#pragma once

#include "core/train/progress.hpp"

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <utility>

namespace troupe {

/// Samples per second over a sliding window of progress updates.
class rate_window {
 public:
  explicit rate_window(double window_s = 1.0) : window_s_(window_s) {}
  /// Adds an update (`elapsed_s` since the run began, `samples` trained so far) and returns the
  /// rate from the newest point at least window_s older (else the oldest) to this one, or
  /// nullopt before two points span any time.
  std::optional<double> add(double elapsed_s, int64_t samples);

 private:
  double window_s_;
  std::deque<std::pair<double, int64_t>> points_;
};

/// The columns to fit: the terminal's (`ioctl_columns`, 0 when unknown), else $COLUMNS (`columns`,
/// may be null or not a number), else 80.
std::size_t choose_width(int ioctl_columns, const char* columns);

/// "epoch 1 step 40/936 loss 0.6123 41234 samples/s ETA 0:00:12 val acc 84.10%", with the
/// samples/s given. With `width` > 0 the line is at most width - 1 characters (the last column
/// is left free: writing it makes some terminals wrap): the least useful parts go first (epoch,
/// then ETA, then samples/s), then the rest is cut.
std::string progress_line(const progress_update& p, double samples_per_s, std::size_t width);

}  // namespace troupe
