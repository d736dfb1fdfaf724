#include "core/optim/outer_optimizer.hpp"

#include <ATen/ATen.h>

#include <stdexcept>

namespace troupe {

void outer_optimizer::restore(at::Tensor base, at::Tensor buffer) {
  base_ = std::move(base);
  buffer_ = std::move(buffer);
}

at::Tensor outer_optimizer::step(const at::Tensor& average) {
  if (!base_.defined())
    throw std::logic_error("outer_optimizer: a step before the base weights were set");
  if (average.numel() != base_.numel())
    throw std::invalid_argument("outer_optimizer: an average of " +
                                std::to_string(average.numel()) + " values for weights of " +
                                std::to_string(base_.numel()));
  // The same ATen calls as torch.optim.SGD's, so that the bits agree with it.
  auto gradient = base_ - average.view_as(base_);
  if (config_.momentum != 0) {
    if (!buffer_.defined())
      buffer_ = gradient.clone();
    else
      buffer_.mul_(config_.momentum).add_(gradient);
    if (config_.nesterov)
      gradient = gradient.add(buffer_, config_.momentum);
    else
      gradient = buffer_;
  }
  return base_.add(gradient, -config_.lr);
}

}  // namespace troupe
