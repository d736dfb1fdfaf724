// When a run's loss has diverged, decided from the training loss of each completed step: a
// loss that is not a number ends the run at once (the workers throw diverged_error on their
// own), and so does a loss that stays above `factor` times the first step's for `window`
// consecutive steps: a rate too high for the model, which would otherwise burn the rest of its
// budget at a loss of 70 while a sweep's chart flattens every other curve. A trial that
// diverged ends with status diverged, not succeeded (core/metrics/records.hpp).
//
// Thread safety: none; owned by the run driver.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace troupe {

class divergence_watch {
 public:
  /// The rule's defaults: 10 times the first loss, 50 steps in a row.
  static constexpr double default_factor = 10;
  static constexpr int64_t default_window = 50;

  explicit divergence_watch(double factor = default_factor, int64_t window = default_window);

  /// Step `step` completed with mean training loss `loss`. Returns why the run diverged, once
  /// it has; nullopt while it has not.
  std::optional<std::string> on_step(int64_t step, double loss);

 private:
  double factor_;
  int64_t window_;
  std::optional<double> first_;  ///< the first loss this watch saw (a resumed run's first)
  int64_t above_ = 0;            ///< consecutive steps above factor x first
};

}  // namespace troupe
