#include "core/optim/outer_optimizer.hpp"

#include <ATen/ATen.h>

#include <stdexcept>

namespace troupe {

void outer_optimizer::restore(at::Tensor base, at::Tensor buffer) {
  base_ = std::move(base);
  owns_base_ = false;
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

at::Tensor outer_optimizer::own_base_part(int64_t begin, int64_t size) {
  if (!base_.defined())
    throw std::logic_error("outer_optimizer: a step before the base weights were set");
  if (begin < 0 || size < 1 || begin + size > base_.numel())
    throw std::invalid_argument("outer_optimizer: a fragment of " + std::to_string(size) +
                                " values at " + std::to_string(begin) + " for weights of " +
                                std::to_string(base_.numel()));
  if (!owns_base_) {  // set_base may have handed in a tensor others hold
    base_ = base_.clone();
    owns_base_ = true;
  }
  return base_.view({-1}).narrow(0, begin, size);
}

void outer_optimizer::set_base_part(const at::Tensor& values, int64_t begin) {
  own_base_part(begin, values.numel()).copy_(values.reshape({-1}));
}

at::Tensor outer_optimizer::step_part(const at::Tensor& average, int64_t begin) {
  const auto size = average.numel();
  auto base = own_base_part(begin, size);
  auto gradient = base - average.view_as(base);
  if (config_.momentum != 0) {
    if (!buffer_.defined())
      buffer_ = at::zeros_like(base_);
    auto buffer = buffer_.view({-1}).narrow(0, begin, size);
    buffer.mul_(config_.momentum).add_(gradient);
    if (config_.nesterov)
      gradient = gradient.add(buffer, config_.momentum);
    else
      gradient = buffer;
  }
  auto next = base.add(gradient, -config_.lr);
  base.copy_(next);
  return next;
}

}  // namespace troupe
