// Shows a run's progress: on a terminal, one line rewritten in place (epoch, step, loss,
// samples/s over the last second, ETA), cut to the terminal's width; otherwise (a log file, CI) a
// plain line every few seconds and after every evaluation, so logs stay readable.
#pragma once

#include "core/train/progress.hpp"
#include "core/train/progress_line.hpp"

#include <chrono>
#include <cstdio>

namespace troupe {

/// The width to draw in on `out`: its terminal's columns, else $COLUMNS, else 80. Asked at every
/// redraw: the terminal may have been resized since the last.
std::size_t terminal_width(std::FILE* out);

class progress_printer {
 public:
  progress_printer(std::FILE* out, bool quiet);

  void update(const progress_update& p);
  /// Ends an in-place line so that what follows starts on a fresh one.
  void close();

 private:
  std::FILE* out_;
  bool quiet_;
  bool terminal_;
  bool line_open_ = false;
  std::size_t shown_ = 0;  ///< length of the line on the terminal now
  rate_window rate_;
  std::chrono::steady_clock::time_point last_print_{};
};

}  // namespace troupe
