// DiLoCo's outer optimizer for local SGD: at each averaging step the replicas' average is not
// taken as the new weights; the change it makes, the pseudo-gradient (the weights every replica
// started the round from, minus their average), is stepped by SGD with (Nesterov) momentum, as
// torch.optim.SGD does: buf = momentum * buf + g (buf = g the first time), then g + momentum *
// buf with Nesterov (buf without), weights -= lr * that. lr 1 and momentum 0 is plain
// averaging, bit for bit (base - (base - average) is not the average's bits in general: the
// driver skips the step then).
//
// Thread safety: none; owned by the run driver.
#pragma once

#include "core/job/job_config.hpp"

#include <ATen/core/Tensor.h>

namespace troupe {

class outer_optimizer {
 public:
  explicit outer_optimizer(outer_optimizer_config config) : config_(config) {}

  /// The weights every replica starts the next round from (the run's initial weights, then
  /// what each step returned, as the replicas hold it).
  void set_base(at::Tensor base) {
    base_ = std::move(base);
    owns_base_ = false;
  }
  const at::Tensor& base() const { return base_; }
  /// The momentum buffer; undefined before the first step.
  const at::Tensor& momentum_buffer() const { return buffer_; }
  /// A checkpoint's state back.
  void restore(at::Tensor base, at::Tensor buffer);

  /// The new weights from the replicas' `average` (flat, as the base). Throws
  /// std::logic_error without a base, std::invalid_argument for another size.
  at::Tensor step(const at::Tensor& average);
  /// Streaming fragments: the step of the values [begin, begin + average.numel()) alone, from
  /// the replicas' average of that fragment; the base takes the result there (in place: the
  /// base is this optimizer's own copy), and so does the momentum buffer, zero elsewhere until
  /// a fragment's first step (0 x momentum + g is g, bit for bit, as torch's first step). Every
  /// value steps as a whole step would. Throws as step does, and for a fragment outside.
  at::Tensor step_part(const at::Tensor& average, int64_t begin);
  /// Streaming fragments under compression: the base's values [begin, begin + values.numel())
  /// become `values` (what the replicas hold after a packed average: the step, rounded).
  /// Throws as step_part does.
  void set_base_part(const at::Tensor& values, int64_t begin);

 private:
  /// The base's values [begin, begin + size), in this optimizer's own copy of the base.
  at::Tensor own_base_part(int64_t begin, int64_t size);

  outer_optimizer_config config_;
  at::Tensor base_;
  bool owns_base_ = false;  ///< base_ was cloned here (step_part writes into it)
  at::Tensor buffer_;
};

}  // namespace troupe
