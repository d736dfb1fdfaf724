// What a suite shows while its jobs run: a row per job (status, step, loss, accuracy) kept up to
// date from the records each job appends to its metrics.jsonl. Pure text in, text out: the suite
// runner (apps/troupe/suite_display) decides when to read and where to draw.
#pragma once

#include "core/metrics/jsonl_lines.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

struct job_row {
  std::string name;
  std::string status = "queued";  ///< queued, running, then the run status it ended with
  int64_t total_steps = 0;        ///< from the job's plan (0: unknown)
  int64_t steps = 0;              ///< completed steps (metrics.jsonl's index + 1)
  std::optional<double> loss;     ///< of the last completed step
  std::optional<double> accuracy;
  std::string accuracy_split;  ///< "val" or "test"

  /// Reads metrics.jsonl text as it arrives; a line cut in two is kept until its end comes.
  void feed(std::string_view text);

 private:
  jsonl_lines lines_;  ///< the records as they arrive
};

/// The table: a header and a row per job, columns aligned, each line at most `width` - 1
/// characters (0: no limit).
std::vector<std::string> render_table(const std::vector<job_row>& rows, std::size_t width);

/// One row as a log line, for output that is not a terminal: "  plain-0: running step 40/60
/// loss 0.4123 test acc 85.10%".
std::string row_line(const job_row& row);

}  // namespace troupe
