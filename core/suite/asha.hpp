// ASHA, asynchronous successive halving (Li et al. 2020; Ray Tune's ASHAScheduler), for a suite:
// rungs at min_steps x reduction^k completed steps. When a job first evaluates at or past a rung
// (its validation accuracy there), it goes on only if that accuracy is not below the
// (1 - 1/reduction) quantile of the accuracies recorded at that rung by the jobs before it (the
// first job at a rung always goes on); either way its accuracy joins the rung's. So about one
// job in `reduction` gets past each rung, without waiting for a whole generation to finish, and
// the threads go to the queued jobs. In a suite of regression jobs the figure is the validation
// loss, and a job goes on only if it is not above the 1/reduction quantile of the losses there.
// The rule is pure; the suite runner feeds it each job's validation evaluations as it reads them
// from the job's metrics.jsonl.
//
// Thread safety: none; owned by the suite runner.
#pragma once

#include "core/suite/judged_figure.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct asha_config {
  int64_t min_steps = 0;  ///< the first rung
  int64_t reduction = 3;  ///< each rung keeps the top 1/reduction
};

/// The q-quantile (0..1) of `xs` with linear interpolation between order statistics (as
/// numpy.percentile's default); nullopt for none.
std::optional<double> quantile(std::vector<double> xs, double q);

class asha_rungs {
 public:
  /// Rungs min_steps x reduction^k below `max_steps` (the longest job's steps: no job is judged
  /// at its own end), comparing `figure`.
  asha_rungs(const asha_config& config, int64_t max_steps, judged_figure figure = {});

  const std::vector<int64_t>& milestones() const { return milestones_; }

  /// Job `job` evaluated after `steps` completed steps with validation figure `value`: why it
  /// stops ("stopped by asha at rung 300 steps: validation accuracy 0.61 < 0.74, the top 1/3
  /// of 5"), or nullopt to let it go on. Judged at the highest rung it has passed and not been
  /// judged at; an evaluation past no new rung changes nothing.
  std::optional<std::string> on_evaluation(std::size_t job, int64_t steps, double value);

 private:
  asha_config config_;
  judged_figure figure_;
  std::vector<int64_t> milestones_;
  /// By milestone: each judged job's figure there.
  std::map<int64_t, std::map<std::size_t, double>> recorded_;
};

}  // namespace troupe
