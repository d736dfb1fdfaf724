// A snapshot of a run's progress, handed to whoever displays it (the CLI's progress line).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace troupe {

struct progress_update {
  int64_t step = 0;  ///< completed steps
  int64_t total_steps = 0;
  int64_t epoch = 0;         ///< 0-based epoch of the last completed step
  double loss = 0;           ///< global batch loss of the last completed step
  double samples_per_s = 0;  ///< of the last completed step alone
  int64_t samples = 0;       ///< trained on so far in this process, for rates over a window
  double elapsed_s = 0;
  std::optional<double> accuracy;   ///< the metric of the latest evaluation, if any yet
  std::string metric = "accuracy";  ///< or "mse", "mae" (core/train/loss.hpp)
  bool validation = false;          ///< evaluations use the validation set (else the test set)
  bool evaluation = false;          ///< this update reports a just-finished evaluation
};

}  // namespace troupe
