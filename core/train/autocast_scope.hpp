// training.precision "bf16" (or "fp16" on a GPU) for the length of a forward: LibTorch's
// autocast on the calling thread, as Python's torch.autocast(device, dtype) does. Inside, matrix
// products and convolutions run in the lower precision on float32 weights (cast once per scope
// and cached); the backward follows the forward's types; weights, gradients and the optimizer
// stay float32. The loss is computed outside, on the logits widened to float32 (and, for fp16,
// scaled by core/train/loss_scaler before the backward).
//
// Thread safety: autocast's switch is per thread; make and drop the scope on one thread.
#pragma once

#include "core/job/job_config.hpp"

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>

namespace troupe {

class autocast_scope {
 public:
  /// Does nothing for fp32. `device`: where the model computes (CPU or CUDA).
  autocast_scope(precision_kind precision, c10::DeviceType device);
  ~autocast_scope();
  autocast_scope(const autocast_scope&) = delete;
  autocast_scope& operator=(const autocast_scope&) = delete;

 private:
  bool on_ = false;
  c10::DeviceType device_ = c10::DeviceType::CPU;
  bool was_enabled_ = false;
  c10::ScalarType was_dtype_ = c10::ScalarType::Float;
};

/// `forward()` under an autocast_scope, its output widened to float32 for the loss.
template <class Forward>
at::Tensor in_precision(precision_kind precision, c10::DeviceType device, Forward&& forward) {
  at::Tensor out;
  {
    const autocast_scope lower(precision, device);
    out = forward();
  }
  return out.scalar_type() == at::kFloat ? out : out.to(at::kFloat);
}

}  // namespace troupe
