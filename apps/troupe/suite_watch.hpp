// What the suite runner watches while its jobs run, beside their processes: for stop_losers or
// asha, the validation evaluations each job appends to its metrics.jsonl, read a piece at a
// time (only what was appended since the last look) and fed to the rule (core/suite/stop_losers:
// the median rule; core/suite/asha: successive halving's rungs).
#pragma once

#include "core/suite/asha.hpp"
#include "core/suite/stop_losers.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

class loser_watch {
 public:
  /// `after`: the suite's stop_losers.after; `asha` its asha, with rungs below `max_steps` (the
  /// longest job's); both nullopt: off, and nothing is read. `jobs`: the number of jobs, which
  /// are named by their index; `figure`: what the rules compare.
  loser_watch(std::optional<int64_t> after, std::optional<asha_config> asha, int64_t max_steps,
              std::size_t jobs, judged_figure figure);

  bool enabled() const { return after_.has_value() || rungs_.has_value(); }
  /// Reads what job `index` has appended to its metrics file since the last look (under asha,
  /// each new evaluation is judged at the rungs it passed).
  void read(std::size_t index, const std::string& metrics_path);
  /// Job `index` starts again from nothing (a retry without a checkpoint writes a new file).
  void restart(std::size_t index);
  /// A job ended: its last lines are read, and a job that succeeded with K evaluations joins the
  /// jobs whose K-th figures make the median.
  void finished(std::size_t index, const std::string& metrics_path, bool succeeded);
  /// For a running job: why it should stop, or nullopt to let it run (the rule is off; under
  /// stop_losers it has fewer than K evaluations, no job has finished with K, or it is at or
  /// above their median; under asha no rung it reached stopped it).
  std::optional<std::string> verdict(std::size_t index) const;

 private:
  std::optional<int64_t> after_;
  judged_figure figure_;
  std::optional<asha_rungs> rungs_;
  std::vector<validation_history> histories_;
  std::vector<std::uintmax_t> offsets_;  ///< bytes of each metrics file read so far
  std::vector<double> finished_;         ///< K-th figures of the finished, succeeded jobs
  std::vector<std::size_t> judged_;      ///< asha: evaluations of each job fed to the rungs
  std::vector<std::optional<std::string>> stopped_;  ///< asha: why each job stops
};

}  // namespace troupe
