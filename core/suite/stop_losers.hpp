// stop_losers: the median-stopping rule (as Ray Tune's MedianStoppingRule and Vizier use it) for
// a suite. A running job whose validation accuracy at its K-th evaluation is below the median of
// the K-th validation accuracies of the jobs that already finished and succeeded (in a suite of
// regression jobs: whose validation loss is above their median) cannot be expected to catch the
// leaders, and its threads are better spent on the queued jobs. The rule is pure; the suite
// runner feeds it what it reads from the jobs' metrics.jsonl as they grow.
#pragma once

#include "core/metrics/jsonl_lines.hpp"
#include "core/suite/judged_figure.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

/// The median (the mean of the middle two for an even count); nullopt for none.
std::optional<double> median(std::vector<double> xs);

/// Why the job should stop ("stopped by stop_losers after 3 evaluations: validation accuracy
/// 0.61 < median 0.74"), or nullopt to let it run: with no finished job to compare against, or
/// not worse than their median. `value` is the job's K-th validation figure, `finished` the K-th
/// ones of the finished and succeeded jobs (those with fewer than K evaluations left out).
std::optional<std::string> stop_loser_reason(int64_t after, double value,
                                             const std::vector<double>& finished,
                                             judged_figure figure = {});

/// The validation figures (accuracies, or losses) of one job's evaluations, in order, from its
/// metrics.jsonl read a piece at a time as it grows: a line is parsed only once its newline has
/// arrived (the writer may be half way through it), and lines that are no validation evaluation
/// are skipped.
class validation_history {
 public:
  explicit validation_history(judged_figure figure = {}) : figure_(figure) {}
  /// More of the metrics file; a `resumed` record drops the evaluations after its step (the
  /// resumed run makes them again).
  void feed(std::string_view text);
  const std::vector<double>& figures() const { return figures_; }
  /// The step after which each was evaluated (0-based), beside figures().
  const std::vector<int64_t>& steps() const { return steps_; }
  /// The K-th (1-based) figure, if there have been that many evaluations.
  std::optional<double> at(int64_t k) const;

 private:
  judged_figure figure_;
  jsonl_lines lines_;  ///< the records as they arrive
  std::vector<double> figures_;
  std::vector<int64_t> steps_;
};

}  // namespace troupe
