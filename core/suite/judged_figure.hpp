// Which validation figure a suite's stopping rules (stop_losers, asha) compare jobs by: accuracy,
// where higher is better, or, in a suite of regression jobs (training.loss mse or l1, which have
// no accuracy), the validation loss, where lower is better. One type, so that the rules, the
// histories they read and their messages cannot disagree about the direction.
#pragma once

#include "core/job/job_config.hpp"

namespace troupe {

struct judged_figure {
  bool by_loss = false;

  /// As the stopping rules' messages name it.
  const char* name() const { return by_loss ? "validation loss" : "validation accuracy"; }
  /// Whether `a` is worse than `b`.
  bool worse(double a, double b) const { return by_loss ? a > b : a < b; }
  /// The comparison that made a job worse, for messages ("<" or ">").
  const char* worse_sign() const { return by_loss ? ">" : "<"; }
};

/// Whether a loss has no accuracy to report (its metric is mse or mae): a regression job.
inline bool is_regression(loss_kind loss) {
  return loss == loss_kind::mse || loss == loss_kind::l1;
}

}  // namespace troupe
