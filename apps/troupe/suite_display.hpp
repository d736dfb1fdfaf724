// A suite's live view. On a terminal: the table of jobs (core/suite/live_table), redrawn in
// place twice a second, with the runner's events (started, succeeded, retrying ...) printed
// above it. Elsewhere (a log file, CI): the events, and a line for a running job whose step,
// loss or accuracy changed, at most every few seconds per job, so that a log stays readable.
#pragma once

#include "core/suite/live_table.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace troupe {

class suite_display {
 public:
  /// `rows`: one per job, named, with their planned step counts; `quiet`: events only.
  suite_display(std::vector<job_row> rows, std::FILE* out, bool quiet);

  /// A line about the suite ("started plain-0 on cpu ..."), shown above the table.
  void event(const std::string& text);
  void set_status(std::size_t job, const std::string& status);
  /// Reads what running jobs appended to their metrics (`metrics_path(job)`) and shows it,
  /// at the display's own cadence (calling it more often costs nothing).
  void poll(const std::function<std::string(std::size_t)>& metrics_path);
  /// Reads each job's last records and leaves the final table on screen.
  void close(const std::function<std::string(std::size_t)>& metrics_path);

 private:
  using clock = std::chrono::steady_clock;
  void read(std::size_t job, const std::string& path);
  void erase_table();
  void draw_table();

  std::vector<job_row> rows_;
  std::vector<std::uintmax_t> offsets_;  ///< bytes of each metrics file read so far
  std::vector<std::string> last_lines_;  ///< not a terminal: each job's last line printed
  std::vector<clock::time_point> last_printed_;
  std::FILE* out_;
  bool quiet_;
  bool terminal_;
  std::size_t drawn_ = 0;  ///< lines of the table now on the terminal
  clock::time_point last_poll_{};
};

}  // namespace troupe
