// Dynamic loss scaling for training.precision "fp16", as PyTorch's torch.amp.GradScaler does
// it: the loss is multiplied by `scale()` before the backward, so that small gradients survive
// float16's narrow range; the gradient is divided by it again before anything reads it. A step
// whose gradient came out non-finite (an overflow) is skipped, not applied, and the scale
// halves; after `growth_interval` steps in a row without one it doubles. Scales are powers of
// two, so scaling and unscaling are exact in float32: where nothing overflows, the gradient is
// the one an unscaled backward gives.
//
// A pure state machine: the replica engine asks scale(), then reports each step's outcome.
// Replicas that apply one combined gradient (sync) make the same reports and keep the same
// scale. Thread safety: none (one engine's thread).
#pragma once

#include "core/job/job_config.hpp"

#include <cstdint>
#include <string>

namespace troupe {

class loss_scaler {
 public:
  /// Below this a scale no longer keeps anything from float16's underflow: a gradient that
  /// overflows even there is a diverged run. Above the largest float32 power of two the scaled
  /// loss itself would not be finite.
  static constexpr double smallest = 1.0 / (1 << 24);
  static constexpr double largest = 0x1p127;

  explicit loss_scaler(loss_scale_config settings = {});

  double scale() const { return scale_; }

  /// The step's gradient was finite (it is applied) or not (it is skipped). Returns whether it
  /// is applied.
  bool record(bool finite);

  int64_t skipped_steps() const { return skipped_; }

  /// The state a checkpoint keeps ("scale good_steps skipped"), and back; load throws
  /// std::invalid_argument on text save() did not write.
  std::string save() const;
  void load(const std::string& text);

 private:
  loss_scale_config settings_;
  double scale_;
  int64_t good_steps_ = 0;  ///< finite steps since the last change of scale
  int64_t skipped_ = 0;
};

}  // namespace troupe
